#include "scenarios/checkers.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "sim/assert.h"

// Every checker sweeps the history once in index (= true-time) order, keeps per-key state keyed
// by string_views into the history (which outlives the call), and builds the few Violations it
// reports only at the end, so a history with many violations stays cheap. Hash maps are only ever
// looked up, never walked: anything walked is a vector in history order or an ordered map.

namespace lockstep {

namespace {

constexpr size_t kNoEvent = static_cast<size_t>(-1);
constexpr size_t kValueCharsShown = 8;

std::string client_name(int client) {
  return client >= 0 ? fmt::format("c{}", client) : std::string("no client");
}

std::string short_value(std::string_view value) {
  if (value.size() <= kValueCharsShown) return std::string(value);
  return fmt::format("{}..", value.substr(0, kValueCharsShown));
}

// Sorted, distinct, without "no client".
std::vector<int> client_list(std::vector<int> clients) {
  std::erase_if(clients, [](int c) { return c < 0; });
  std::sort(clients.begin(), clients.end());
  clients.erase(std::unique(clients.begin(), clients.end()), clients.end());
  return clients;
}

// Ascending, distinct, without kNoEvent.
std::vector<size_t> event_list(std::vector<size_t> events) {
  std::erase(events, kNoEvent);
  std::sort(events.begin(), events.end());
  events.erase(std::unique(events.begin(), events.end()), events.end());
  return events;
}

Violation make_violation(Invariant invariant, TimeUs time_us, std::string_view key,
                         std::vector<int> clients, std::vector<size_t> events, std::string detail) {
  Violation v;
  v.invariant = invariant;
  v.time_us = time_us;
  v.key = std::string(key);
  v.clients = client_list(std::move(clients));
  v.events = event_list(std::move(events));
  v.detail = std::move(detail);
  return v;
}

// Earliest first (ties by the events that show them, so the order never depends on map layout),
// at most max of them.
void sort_and_cap(std::vector<Violation>& found, size_t max) {
  std::stable_sort(found.begin(), found.end(), [](const Violation& a, const Violation& b) {
    return std::tie(a.time_us, a.events) < std::tie(b.time_us, b.events);
  });
  if (found.size() > max) found.resize(max);
}

// State per key, in a vector in order of the key's first appearance in the history, so walking it
// is deterministic; the hash map is for lookup only.
template <typename State>
class PerKey {
 public:
  State& operator[](std::string_view key) {
    auto [it, inserted] = ids_.try_emplace(key, states_.size());
    if (inserted) {
      states_.emplace_back();
      keys_.push_back(key);
    }
    return states_[it->second];
  }
  size_t size() const { return states_.size(); }
  std::string_view key(size_t id) const { return keys_[id]; }
  const State& state(size_t id) const { return states_[id]; }
  State& state(size_t id) { return states_[id]; }

 private:
  std::unordered_map<std::string_view, size_t> ids_;
  std::vector<State> states_;
  std::vector<std::string_view> keys_;
};

using ServerValue = std::pair<std::string_view, std::string_view>;

struct ServerValueHash {
  size_t operator()(const ServerValue& sv) const {
    const std::hash<std::string_view> hash;
    return hash(sv.first) * 31 + hash(sv.second);
  }
};

// ---------------------------------------------------------------------------------------------
// mutual_exclusion

struct Overlap {
  size_t other_enter = kNoEvent;  // the holder that was already inside
  size_t enter = kNoEvent;        // the entry that overlapped it
  size_t other_exit = kNoEvent;   // when the earlier holder left (filled in later), if it did
};

struct Holder {
  size_t enter = kNoEvent;
  bool shared = false;
  std::vector<size_t> overlaps_awaiting_exit;  // indices into MutualExclusionSweep::overlaps_
};

struct KeyHolders {
  std::map<int, Holder> by_client;
  std::map<size_t, int> all_by_entry;        // enter index -> client
  std::map<size_t, int> exclusive_by_entry;  // the same, non-shared holders only
};

class MutualExclusionSweep {
 public:
  MutualExclusionSweep(const History& history, size_t max) : history_(history), max_(max) {}

  void enter(const HistoryEvent& e) {
    KeyHolders& key = keys_[e.key];
    // A second enter without an exit continues the hold it already has.
    auto [it, inserted] = key.by_client.try_emplace(e.client);
    if (!inserted) return;
    it->second.enter = e.index;
    it->second.shared = e.shared;
    record_conflict(key, e);
    key.all_by_entry.emplace(e.index, e.client);
    if (!e.shared) key.exclusive_by_entry.emplace(e.index, e.client);
  }

  void exit(const HistoryEvent& e) {
    KeyHolders& key = keys_[e.key];
    auto it = key.by_client.find(e.client);
    if (it == key.by_client.end()) return;  // an exit without an enter shows nothing
    for (size_t overlap : it->second.overlaps_awaiting_exit) overlaps_[overlap].other_exit = e.index;
    key.all_by_entry.erase(it->second.enter);
    key.exclusive_by_entry.erase(it->second.enter);
    key.by_client.erase(it);
  }

  std::vector<Violation> violations() const {
    std::vector<Violation> found;
    found.reserve(overlaps_.size());
    for (const Overlap& overlap : overlaps_) found.push_back(to_violation(overlap));
    return found;  // already in time order: overlaps are found at the later entry
  }

 private:
  // Shared holds coexist; anything else conflicts with every holder. The earliest one is named.
  void record_conflict(KeyHolders& key, const HistoryEvent& e) {
    if (overlaps_.size() >= max_) return;
    const std::map<size_t, int>& rivals = e.shared ? key.exclusive_by_entry : key.all_by_entry;
    if (rivals.empty()) return;
    Holder& other = key.by_client.at(rivals.begin()->second);
    other.overlaps_awaiting_exit.push_back(overlaps_.size());
    overlaps_.push_back(Overlap{other.enter, e.index, kNoEvent});
  }

  static std::string holder_name(const HistoryEvent& enter) {
    return enter.shared ? fmt::format("c{} (shared)", enter.client)
                        : fmt::format("c{}", enter.client);
  }

  Violation to_violation(const Overlap& overlap) const {
    const HistoryEvent& other = history_[overlap.other_enter];
    const HistoryEvent& enter = history_[overlap.enter];
    std::string left = overlap.other_exit != kNoEvent
                           ? fmt::format("left at {}us", history_[overlap.other_exit].time_us)
                           : fmt::format("was still inside at the end, {}us", history_.meta.end_us);
    std::string detail = fmt::format(
        "{} and {} were both inside the critical section for key {} from {}us ({} entered at {}us "
        "and {})",
        holder_name(other), holder_name(enter), enter.key, enter.time_us, client_name(other.client),
        other.time_us, left);
    return make_violation(Invariant::mutual_exclusion, enter.time_us, enter.key,
                          {other.client, enter.client},
                          {overlap.other_enter, overlap.enter, overlap.other_exit},
                          std::move(detail));
  }

  const History& history_;
  size_t max_;
  PerKey<KeyHolders> keys_;
  std::vector<Overlap> overlaps_;
};

// ---------------------------------------------------------------------------------------------
// lease_exclusion

// One stretch of a promised lease: [start_us, end_us) on one server for one owner value, set by
// the grant or extend `event`. An extend or a re-grant closes the stretch and opens the next, so
// every live stretch names the one event that proves it is live.
struct LeaseStretch {
  TimeUs start_us = 0;
  TimeUs end_us = 0;
  size_t event = kNoEvent;
  int owner = -1;
  std::string_view value;
};

struct KeyLeases {
  std::vector<LeaseStretch> stretches;          // in the order of their events
  std::unordered_map<ServerValue, size_t, ServerValueHash> open;  // a server's current stretch
  std::unordered_map<ServerValue, int, ServerValueHash> owner;    // who its latest grant went to
};

void close_stretch(KeyLeases& key, const ServerValue& sv, TimeUs at_us) {
  auto it = key.open.find(sv);
  if (it == key.open.end()) return;
  LeaseStretch& stretch = key.stretches[it->second];
  stretch.end_us = std::min(stretch.end_us, at_us);
  key.open.erase(it);
}

void apply_lease_event(KeyLeases& key, const HistoryEvent& e) {
  const ServerValue sv{e.server, e.value};
  close_stretch(key, sv, e.time_us);
  if (e.kind == EventKind::revoke) return;
  if (e.kind == EventKind::grant) key.owner[sv] = e.client;
  auto owner = key.owner.find(sv);
  key.open[sv] = key.stretches.size();
  key.stretches.push_back(LeaseStretch{e.time_us, e.time_us + e.ttl_us, e.index,
                                       owner != key.owner.end() ? owner->second : -1, e.value});
}

PerKey<KeyLeases> collect_leases(const History& history) {
  PerKey<KeyLeases> keys;
  for (const HistoryEvent& e : history.events()) {
    if (e.kind == EventKind::grant || e.kind == EventKind::extend || e.kind == EventKind::revoke) {
      apply_lease_event(keys[e.key], e);
    }
  }
  return keys;
}

struct QuorumClash {
  TimeUs time_us = 0;
  std::string_view key;
  std::vector<size_t> first;   // live stretches (indices) of the owner that already held a quorum
  std::vector<size_t> second;  // ... and of the one that reached it
  TimeUs first_since_us = 0;
};

// Sweeps one key's stretches in time. Every change at one instant is applied before the instant is
// judged, so a lease that ends exactly when another begins does not overlap it ([start, end)).
class QuorumSweep {
 public:
  QuorumSweep(std::string_view key, const KeyLeases& leases, int quorum, size_t max)
      : key_(key), leases_(leases), quorum_(static_cast<size_t>(quorum)), max_(max) {}

  std::vector<QuorumClash> run() {
    std::vector<Point> points = sweep_points();
    size_t i = 0;
    while (i < points.size() && clashes_.size() < max_) {
      size_t j = i;
      while (j < points.size() && points[j].time_us == points[i].time_us) ++j;
      apply_instant(points, i, j);
      i = j;
    }
    return std::move(clashes_);
  }

 private:
  struct Point {
    TimeUs time_us;
    bool is_start;
    size_t stretch;
    auto operator<=>(const Point&) const = default;
  };
  struct Holding {
    TimeUs since_us;
    size_t order;  // when it reached the quorum, in sweep order
  };

  std::vector<Point> sweep_points() const {
    std::vector<Point> points;
    points.reserve(2 * leases_.stretches.size());
    for (size_t s = 0; s < leases_.stretches.size(); ++s) {
      const LeaseStretch& stretch = leases_.stretches[s];
      if (stretch.end_us <= stretch.start_us) continue;  // never live
      points.push_back(Point{stretch.start_us, true, s});
      points.push_back(Point{stretch.end_us, false, s});
    }
    std::sort(points.begin(), points.end());
    return points;
  }

  // Applies every change at one instant, then judges only the values that reached a quorum at it,
  // so a lease extended (closed and reopened at the same instant) is not a new quorum.
  void apply_instant(const std::vector<Point>& points, size_t begin, size_t end) {
    ValueCounts live_before;
    for (size_t p = begin; p < end; ++p) {
      const size_t s = points[p].stretch;
      std::vector<size_t>& live = live_[leases_.stretches[s].value];
      remember_count(live_before, leases_.stretches[s].value, live.size());
      auto at = std::lower_bound(live.begin(), live.end(), s);
      if (points[p].is_start) {
        live.insert(at, s);
      } else {
        LOCKSTEP_SIM_CHECK(at != live.end() && *at == s, "a lease stretch ends after it starts");
        live.erase(at);
      }
    }
    judge_instant(live_before, points[begin].time_us);
    for (const auto& [value, before] : live_before) {
      auto it = live_.find(value);
      if (it->second.empty()) live_.erase(it);  // keeps the map as small as the live owners
    }
  }

  // Few values change at one instant: a vector beats a map here.
  using ValueCounts = std::vector<std::pair<std::string_view, size_t>>;
  static void remember_count(ValueCounts& counts, std::string_view value, size_t count) {
    for (const auto& [seen, before] : counts) {
      if (seen == value) return;
    }
    counts.emplace_back(value, count);
  }

  void judge_instant(const ValueCounts& live_before, TimeUs time_us) {
    std::vector<std::string_view> reached;
    for (const auto& [value, before] : live_before) {
      const size_t now = live_[value].size();
      if (now < quorum_) holding_.erase(value);
      if (now >= quorum_ && before < quorum_) reached.push_back(value);
    }
    // The value whose quorum was completed by the earlier event reached it first.
    std::sort(reached.begin(), reached.end(), [this](std::string_view a, std::string_view b) {
      return *live_[a].rbegin() < *live_[b].rbegin();
    });
    for (std::string_view value : reached) {
      const std::string_view* partner = earliest_holder();
      if (partner != nullptr && clashes_.size() < max_) record(*partner, value, time_us);
      holding_.emplace(value, Holding{time_us, next_order_++});
    }
  }

  const std::string_view* earliest_holder() const {
    const std::string_view* best = nullptr;
    size_t best_order = 0;
    for (const auto& [value, holding] : holding_) {
      if (best == nullptr || holding.order < best_order) {
        best = &value;
        best_order = holding.order;
      }
    }
    return best;
  }

  // The first `quorum` live stretches: enough to prove the quorum.
  std::vector<size_t> quorum_proof(std::string_view value) {
    const std::vector<size_t>& live = live_[value];
    return std::vector<size_t>(live.begin(), live.begin() + static_cast<ptrdiff_t>(quorum_));
  }

  void record(std::string_view first, std::string_view second, TimeUs time_us) {
    QuorumClash clash;
    clash.time_us = time_us;
    clash.key = key_;
    clash.first = quorum_proof(first);
    clash.second = quorum_proof(second);
    clash.first_since_us = holding_.at(first).since_us;
    clashes_.push_back(std::move(clash));
  }

  std::string_view key_;
  const KeyLeases& leases_;
  size_t quorum_;
  size_t max_;
  // value -> its live stretches, ascending (= in event order); values with none are dropped
  std::map<std::string_view, std::vector<size_t>> live_;
  std::map<std::string_view, Holding> holding_;  // values with at least a quorum of live leases
  size_t next_order_ = 0;
  std::vector<QuorumClash> clashes_;
};

std::string lease_holder_name(const LeaseStretch& stretch) {
  if (stretch.owner < 0) return fmt::format("value {}", short_value(stretch.value));
  return fmt::format("c{} (value {})", stretch.owner, short_value(stretch.value));
}

Violation clash_violation(const QuorumClash& clash, const KeyLeases& leases, int quorum) {
  const LeaseStretch& first = leases.stretches[clash.first.front()];
  const LeaseStretch& second = leases.stretches[clash.second.front()];
  std::vector<size_t> events;
  for (size_t s : clash.first) events.push_back(leases.stretches[s].event);
  for (size_t s : clash.second) events.push_back(leases.stretches[s].event);
  std::string detail = fmt::format(
      "{} and {} each held live leases on key {} from at least {} server(s) (the quorum) at "
      "{}us ({} had held its quorum since {}us)",
      lease_holder_name(first), lease_holder_name(second), clash.key, quorum, clash.time_us,
      first.owner >= 0 ? client_name(first.owner) : "the first", clash.first_since_us);
  return make_violation(Invariant::lease_exclusion, clash.time_us, clash.key,
                        {first.owner, second.owner}, std::move(events), std::move(detail));
}

// ---------------------------------------------------------------------------------------------
// ownership

struct OwnershipBreach {
  size_t grant = kNoEvent;
  size_t by = kNoEvent;  // the revoke or extend
};

Violation ownership_violation(const History& history, const OwnershipBreach& breach) {
  const HistoryEvent& grant = history[breach.grant];
  const HistoryEvent& by = history[breach.by];
  const char* verb = by.kind == EventKind::revoke ? "removed" : "extended";
  std::string detail = fmt::format(
      "{} {} the lease of {} (value {}) on key {} at server {} at {}us", client_name(by.client),
      verb, client_name(grant.client), short_value(by.value), by.key, by.server, by.time_us);
  return make_violation(Invariant::ownership, by.time_us, by.key, {grant.client, by.client},
                        {breach.grant, breach.by}, std::move(detail));
}

// ---------------------------------------------------------------------------------------------
// fencing

enum class FencingKind { grant_order, acquire_order, stale_access };

struct FencingBreach {
  size_t at = kNoEvent;     // the event that broke it
  size_t prior = kNoEvent;  // the event with the token it should have exceeded
  FencingKind kind = FencingKind::grant_order;
};

// The highest token seen so far in a sequence, and breaches of strict increase against it.
struct TokenSequence {
  bool any = false;
  uint64_t max_token = 0;
  size_t max_event = kNoEvent;
  std::vector<FencingBreach> breaches;

  // strict: a token must exceed the maximum (issued tokens); otherwise equal is fine (accesses).
  void see(const HistoryEvent& e, bool strict, bool judge, FencingKind kind, size_t max) {
    const bool stale = strict ? e.token <= max_token : e.token < max_token;
    if (any && judge && stale && breaches.size() < max) {
      breaches.push_back(FencingBreach{e.index, max_event, kind});
    }
    if (!any || e.token > max_token) {
      max_token = e.token;
      max_event = e.index;
    }
    any = true;
  }
};

struct KeyFencing {
  TokenSequence grants;
  TokenSequence acquires;
  TokenSequence accesses;
  // The tokens clients received, matched to the servers' grants. A client's attempts are
  // sequential and the successful one is its last, so a successful acquire belongs to the latest
  // grant that client got before it (an earlier grant may have been given up: it arrived after
  // its TTL). Judged in grant order, so a client that sees its reply late (a pause, a slow clock)
  // is not mistaken for one that got an older token.
  std::map<int, size_t> last_grant;                      // client -> its latest unmatched grant
  std::vector<std::pair<size_t, size_t>> received;       // (grant index, acquire completion index)
};

void match_received_token(KeyFencing& key, const HistoryEvent& e) {
  if (e.kind == EventKind::grant) {
    key.last_grant[e.client] = e.index;
    return;
  }
  if (e.kind != EventKind::complete || e.op != Op::acquire || e.outcome != Outcome::ok || !e.has_token) return;
  auto it = key.last_grant.find(e.client);
  if (it == key.last_grant.end()) return;
  key.received.emplace_back(it->second, e.index);
  key.last_grant.erase(it);
}

// The received tokens in grant order, as a sequence that must strictly increase. A token equal to
// the one its grant carried is the grant sequence's to judge (one fact, one violation); only
// tokens the server did not issue, or grants that carry none, are judged here.
TokenSequence received_in_grant_order(const History& history, KeyFencing& key, size_t max) {
  std::sort(key.received.begin(), key.received.end());
  TokenSequence sequence;
  for (const auto& [grant, completion] : key.received) {
    const bool as_issued = history[grant].has_token && history[grant].token == history[completion].token;
    sequence.see(history[completion], true, !as_issued, FencingKind::acquire_order, max);
  }
  return sequence;
}

void see_fencing_event(KeyFencing& key, const HistoryEvent& e, size_t max) {
  match_received_token(key, e);
  if (!e.has_token) return;
  if (e.kind == EventKind::grant) {
    key.grants.see(e, true, true, FencingKind::grant_order, max);
  } else if (e.kind == EventKind::complete && e.op == Op::acquire && e.outcome == Outcome::ok) {
    key.acquires.see(e, true, true, FencingKind::acquire_order, max);
  } else if (e.kind == EventKind::access) {
    // Refused accesses are what fencing is for; only served ones can break it.
    key.accesses.see(e, false, e.outcome == Outcome::ok, FencingKind::stale_access, max);
  }
}

Violation fencing_violation(const History& history, const FencingBreach& breach) {
  const HistoryEvent& at = history[breach.at];
  const HistoryEvent& prior = history[breach.prior];
  std::string detail;
  if (breach.kind == FencingKind::stale_access) {
    detail = fmt::format(
        "the resource served {}'s {} on key {} with token {} at {}us after it had seen token {} "
        "({}'s {} at {}us)",
        client_name(at.client), to_string(at.op), at.key, at.token, at.time_us, prior.token,
        client_name(prior.client), to_string(prior.op), prior.time_us);
  } else {
    const char* what = breach.kind == FencingKind::grant_order ? "granted" : "acquired";
    detail = fmt::format(
        "token {} {} to {} on key {} at {}us is not greater than token {} {} to {} at {}us",
        at.token, what, client_name(at.client), at.key, at.time_us, prior.token, what,
        client_name(prior.client), prior.time_us);
  }
  return make_violation(Invariant::fencing, at.time_us, at.key, {prior.client, at.client},
                        {breach.prior, breach.at}, std::move(detail));
}

// ---------------------------------------------------------------------------------------------
// no_lost_update

// The accepted writes of one counter, and the first one that did not raise it.
struct WriteTally {
  size_t accepted = 0;
  size_t last_write = kNoEvent;
  size_t first_flat = kNoEvent;        // first accepted write not above the previous one
  size_t before_first_flat = kNoEvent;  // the previous accepted write
  size_t final_event = kNoEvent;       // the last final_value event for this counter

  void see_write(const History& history, const HistoryEvent& e) {
    ++accepted;
    if (last_write != kNoEvent && first_flat == kNoEvent &&
        e.counter <= history[last_write].counter) {
      first_flat = e.index;
      before_first_flat = last_write;
    }
    last_write = e.index;
  }
};

Violation lost_update_violation(const History& history, const WriteTally& tally,
                                const HistoryEvent& final_event) {
  const std::string totals =
      fmt::format("the final counter is {} but the resource accepted {} write(s)",
                  final_event.counter, tally.accepted);
  if (tally.first_flat == kNoEvent) {
    return make_violation(Invariant::no_lost_update, final_event.time_us, final_event.key, {},
                          {final_event.index}, totals);
  }
  const HistoryEvent& flat = history[tally.first_flat];
  const HistoryEvent& before = history[tally.before_first_flat];
  std::string detail = fmt::format(
      "{}'s write of {} on key {} at {}us did not raise the counter ({} had written {} at {}us); {}",
      client_name(flat.client), flat.counter, flat.key, flat.time_us, client_name(before.client),
      before.counter, before.time_us, totals);
  return make_violation(Invariant::no_lost_update, flat.time_us, flat.key,
                        {before.client, flat.client},
                        {tally.before_first_flat, tally.first_flat, final_event.index},
                        std::move(detail));
}

// ---------------------------------------------------------------------------------------------
// liveness

struct SlowAcquire {
  TimeUs at = 0;  // when the bound was broken: the completion, or wait start + bound if pending
  size_t invoke = kNoEvent;
  size_t complete = kNoEvent;  // kNoEvent: still pending at the end
  TimeUs start_us = 0;
};

// Earliest first; the invoke index breaks ties, so the order is total.
bool operator<(const SlowAcquire& a, const SlowAcquire& b) {
  return std::tie(a.at, a.invoke) < std::tie(b.at, b.invoke);
}

std::optional<SlowAcquire> judge_acquire(const History& history, size_t invoke, size_t complete) {
  const HistoryMeta& meta = history.meta;
  const TimeUs start_us = std::max(history[invoke].time_us, meta.heal_us);
  const TimeUs bound_us = meta.liveness_bound_us;
  if (complete == kNoEvent) {
    if (meta.end_us - start_us < bound_us) return std::nullopt;
    return SlowAcquire{start_us + bound_us, invoke, kNoEvent, start_us};
  }
  const HistoryEvent& done = history[complete];
  const TimeUs waited_us = done.time_us - start_us;
  const bool ok = done.outcome == Outcome::ok;
  // A success exactly at the bound is in time; a failure at the bound means no progress.
  if (ok ? waited_us <= bound_us : waited_us < bound_us) return std::nullopt;
  return SlowAcquire{done.time_us, invoke, complete, start_us};
}

std::string wait_start_text(const History& history, const SlowAcquire& slow) {
  const TimeUs invoked_us = history[slow.invoke].time_us;
  if (slow.start_us == invoked_us) return fmt::format("{}us", invoked_us);
  return fmt::format("{}us when the faults healed (invoked at {}us)", slow.start_us, invoked_us);
}

Violation liveness_violation(const History& history, const SlowAcquire& slow) {
  const HistoryEvent& invoke = history[slow.invoke];
  const TimeUs bound_us = history.meta.liveness_bound_us;
  const std::string who =
      fmt::format("{}'s acquire of key {}", client_name(invoke.client), invoke.key);
  const std::string since = wait_start_text(history, slow);
  std::string detail;
  if (slow.complete == kNoEvent) {
    detail = fmt::format("{}, waiting since {}, was still pending at the end of the run at {}us "
                         "(bound {}us)",
                         who, since, history.meta.end_us, bound_us);
  } else {
    const HistoryEvent& done = history[slow.complete];
    const std::string how = done.outcome == Outcome::ok
                                ? std::string("succeeded only")
                                : fmt::format("ended {}", to_string(done.outcome));
    detail = fmt::format("{} {} at {}us, {}us after its wait began at {} (bound {}us)", who, how,
                         done.time_us, done.time_us - slow.start_us, since, bound_us);
  }
  return make_violation(Invariant::liveness, slow.at, invoke.key, {invoke.client},
                        {slow.invoke, slow.complete}, std::move(detail));
}

}  // namespace

std::string_view to_string(Invariant invariant) {
  switch (invariant) {
    case Invariant::mutual_exclusion: return "mutual_exclusion";
    case Invariant::lease_exclusion: return "lease_exclusion";
    case Invariant::ownership: return "ownership";
    case Invariant::fencing: return "fencing";
    case Invariant::no_lost_update: return "no_lost_update";
    case Invariant::liveness: return "liveness";
    case Invariant::fifo: return "fifo";
    case Invariant::writer_preference: return "writer_preference";
    case Invariant::no_leak: return "no_leak";
  }
  return "?";
}

std::optional<Invariant> invariant_from_string(std::string_view name) {
  for (Invariant invariant : all_invariants()) {
    if (to_string(invariant) == name) return invariant;
  }
  return std::nullopt;
}

const std::vector<Invariant>& all_invariants() {
  static const std::vector<Invariant> kAll = {
      Invariant::mutual_exclusion, Invariant::lease_exclusion, Invariant::ownership,
      Invariant::fencing,          Invariant::no_lost_update,  Invariant::liveness,
      Invariant::fifo,             Invariant::writer_preference, Invariant::no_leak,
  };
  return kAll;
}

std::vector<Violation> check_mutual_exclusion(const History& history, const CheckOptions& options) {
  MutualExclusionSweep sweep(history, options.max_per_invariant);
  for (const HistoryEvent& e : history.events()) {
    if (e.kind == EventKind::cs_enter) sweep.enter(e);
    if (e.kind == EventKind::cs_exit) sweep.exit(e);
  }
  return sweep.violations();
}

std::vector<Violation> check_lease_exclusion(const History& history, const CheckOptions& options) {
  LOCKSTEP_SIM_CHECK(history.meta.quorum >= 1, "a quorum is at least one server");
  const size_t max = options.max_per_invariant;
  const PerKey<KeyLeases> keys = collect_leases(history);
  std::vector<Violation> found;
  for (size_t k = 0; k < keys.size(); ++k) {
    const KeyLeases& leases = keys.state(k);
    QuorumSweep sweep(keys.key(k), leases, history.meta.quorum, max);
    for (const QuorumClash& clash : sweep.run()) {
      found.push_back(clash_violation(clash, leases, history.meta.quorum));
    }
  }
  sort_and_cap(found, max);
  return found;
}

std::vector<Violation> check_ownership(const History& history, const CheckOptions& options) {
  // key -> (server, value) -> the grant that made the lease.
  PerKey<std::unordered_map<ServerValue, size_t, ServerValueHash>> grants;
  std::vector<Violation> found;
  for (const HistoryEvent& e : history.events()) {
    if (found.size() >= options.max_per_invariant) break;  // index order is time order
    if (e.kind == EventKind::grant) grants[e.key][ServerValue{e.server, e.value}] = e.index;
    if ((e.kind != EventKind::revoke && e.kind != EventKind::extend) || e.client < 0) continue;
    const auto& granted = grants[e.key];
    auto grant = granted.find(ServerValue{e.server, e.value});
    if (grant == granted.end()) continue;  // owner unknown
    const int owner = history[grant->second].client;
    if (owner >= 0 && owner != e.client) {
      found.push_back(ownership_violation(history, OwnershipBreach{grant->second, e.index}));
    }
  }
  return found;
}

std::vector<Violation> check_fencing(const History& history, const CheckOptions& options) {
  const size_t max = options.max_per_invariant;
  PerKey<KeyFencing> keys;
  for (const HistoryEvent& e : history.events()) {
    if (e.kind == EventKind::grant || e.kind == EventKind::complete ||
        e.kind == EventKind::access) {
      see_fencing_event(keys[e.key], e, max);
    }
  }
  std::vector<FencingBreach> breaches;
  for (size_t k = 0; k < keys.size(); ++k) {
    KeyFencing& fencing = keys.state(k);
    if (history.meta.monotonic_tokens) {
      // Grants are the servers' own record; what clients received must follow their order too
      // (a client handed another token than the server issued). Without grants, acquires alone.
      if (fencing.grants.any) {
        breaches.insert(breaches.end(), fencing.grants.breaches.begin(), fencing.grants.breaches.end());
        const TokenSequence received = received_in_grant_order(history, fencing, max);
        breaches.insert(breaches.end(), received.breaches.begin(), received.breaches.end());
      } else {
        breaches.insert(breaches.end(), fencing.acquires.breaches.begin(), fencing.acquires.breaches.end());
      }
    }
    if (history.meta.fencing_on) {
      breaches.insert(breaches.end(), fencing.accesses.breaches.begin(),
                      fencing.accesses.breaches.end());
    }
  }
  // Each key kept its earliest max; the earliest max overall are among them. Index order is time
  // order, and every breach has its own event.
  std::sort(breaches.begin(), breaches.end(),
            [](const FencingBreach& a, const FencingBreach& b) { return a.at < b.at; });
  if (breaches.size() > max) breaches.resize(max);
  std::vector<Violation> found;
  for (const FencingBreach& breach : breaches) found.push_back(fencing_violation(history, breach));
  return found;
}

std::vector<Violation> check_no_lost_update(const History& history, const CheckOptions& options) {
  // One counter per key; a final_value without a key speaks for every write of the run.
  PerKey<WriteTally> per_key;
  WriteTally all;
  for (const HistoryEvent& e : history.events()) {
    if (e.kind == EventKind::access && e.op == Op::write && e.outcome == Outcome::ok) {
      per_key[e.key].see_write(history, e);
      all.see_write(history, e);
    }
    if (e.kind == EventKind::final_value) {
      (e.key.empty() ? all : per_key[e.key]).final_event = e.index;
    }
  }
  std::vector<Violation> found;
  auto judge = [&](const WriteTally& tally) {
    if (tally.final_event == kNoEvent) return;  // nothing to compare with
    const HistoryEvent& final_event = history[tally.final_event];
    if (final_event.counter == static_cast<int64_t>(tally.accepted)) return;
    found.push_back(lost_update_violation(history, tally, final_event));
  };
  judge(all);
  for (size_t k = 0; k < per_key.size(); ++k) judge(per_key.state(k));
  sort_and_cap(found, options.max_per_invariant);
  return found;
}

std::vector<Violation> check_liveness(const History& history, const CheckOptions& options) {
  if (history.meta.liveness_bound_us <= 0) return {};
  PerKey<std::map<int, size_t>> waiting;  // key -> client -> its acquire's invoke
  std::vector<SlowAcquire> slow;
  // A client that died while it waited will never complete: nothing to wait for.
  std::map<int, TimeUs> died_us;
  for (const HistoryEvent& e : history.events()) {
    if (e.kind == EventKind::fault && e.kills_client && e.client >= 0) died_us.try_emplace(e.client, e.time_us);
    if (e.op != Op::acquire) continue;
    std::map<int, size_t>& on_key = waiting[e.key];
    if (e.kind == EventKind::invoke) on_key.try_emplace(e.client, e.index);  // keep the first
    if (e.kind != EventKind::complete) continue;
    auto it = on_key.find(e.client);
    if (it == on_key.end()) continue;  // a completion without an invocation shows nothing
    if (auto judged = judge_acquire(history, it->second, e.index)) slow.push_back(*judged);
    on_key.erase(it);
  }
  for (size_t k = 0; k < waiting.size(); ++k) {
    for (const auto& [client, invoke] : waiting.state(k)) {
      auto died = died_us.find(client);
      if (died != died_us.end() && died->second >= history[invoke].time_us) continue;
      if (auto judged = judge_acquire(history, invoke, kNoEvent)) slow.push_back(*judged);
    }
  }
  std::sort(slow.begin(), slow.end());
  if (slow.size() > options.max_per_invariant) slow.resize(options.max_per_invariant);
  std::vector<Violation> found;
  for (const SlowAcquire& s : slow) found.push_back(liveness_violation(history, s));
  return found;
}

std::vector<Violation> check_all(const History& history, const CheckOptions& options) {
  using Checker = std::vector<Violation> (*)(const History&, const CheckOptions&);
  static constexpr Checker kCheckers[] = {
      check_mutual_exclusion, check_lease_exclusion, check_ownership,
      check_fencing,          check_no_lost_update,  check_liveness,
      check_fifo,             check_writer_preference, check_no_leak,
  };
  static_assert(std::size(kCheckers) == 9, "one checker per Invariant, in all_invariants() order");
  std::vector<Violation> all;
  for (Checker checker : kCheckers) {
    std::vector<Violation> found = checker(history, options);
    std::move(found.begin(), found.end(), std::back_inserter(all));
  }
  return all;
}

}  // namespace lockstep
