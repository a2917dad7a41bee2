#include "checkers/checkers.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "base/check.h"
#include "checkers/checker_pass.h"
#include "checkers/checker_support.h"

// lease_exclusion: see checkers.h for the definition this judges.

namespace lockstep {

namespace {

using namespace checker_support;

// One stretch of a promised lease: [start_us, end_us) on one server for one owner value, set by
// the grant or extend `event`. An extend or a re-grant closes the stretch and opens the next, so
// every live stretch names the one event that proves it is live.
struct LeaseStretch {
  TimeUs start_us = 0;
  TimeUs end_us = 0;
  size_t event = kNoEvent;
  int owner = -1;
  std::string_view value;
  uint32_t value_id = 0;  // the value's HistoryEvent::value_id: what the sweep compares
};

struct KeyLeases {
  std::vector<LeaseStretch> stretches;  // in the order of their events
};

// One lease (key, server, value) as the walk follows it: its current stretch, and who its latest
// grant went to.
struct LeaseState {
  size_t open = kNoEvent;  // index into its key's stretches, or none open
  int owner = -1;          // -1: no grant seen, or one without a client
};

void apply_lease_event(KeyLeases& key, LeaseState& lease, const HistoryEvent& e) {
  if (lease.open != kNoEvent) {
    LeaseStretch& stretch = key.stretches[lease.open];
    stretch.end_us = std::min(stretch.end_us, e.time_us);
    lease.open = kNoEvent;
  }
  if (e.kind == EventKind::revoke) return;
  if (e.kind == EventKind::grant) lease.owner = e.client;
  lease.open = key.stretches.size();
  key.stretches.push_back(
      LeaseStretch{e.time_us, e.time_us + e.ttl_us, e.index, lease.owner, e.value, e.value_id});
}

// A few entries by value_id, in a vector searched in order: at one instant a key has one or two
// owners with live leases (more only when the lock is broken), where a map's node per entry cost
// more than the search.
template <typename V>
class ByValue {
 public:
  V* find(uint32_t value) {
    for (auto& [seen, entry] : entries_) {
      if (seen == value) return &entry;
    }
    return nullptr;
  }
  V& at(uint32_t value) {
    V* entry = find(value);
    LOCKSTEP_CHECK(entry != nullptr, "the value has an entry");
    return *entry;
  }
  // Adds `entry` for a value that has none.
  V& add(uint32_t value, V entry) {
    LOCKSTEP_CHECK(find(value) == nullptr, "a value has one entry");
    entries_.emplace_back(value, std::move(entry));
    return entries_.back().second;
  }
  // Removes the value's entry, returning it.
  V take(uint32_t value) {
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [value](const auto& entry) { return entry.first == value; });
    LOCKSTEP_CHECK(it != entries_.end(), "the value has an entry");
    V taken = std::move(it->second);
    *it = std::move(entries_.back());
    entries_.pop_back();
    return taken;
  }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }

 private:
  std::vector<std::pair<uint32_t, V>> entries_;
};

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
    // The defaulted <=> compares with a literal 0 inside <compare>, which clang-tidy 14 takes for a
    // null pointer (llvm/llvm-project#53961, fixed in clang-tidy 18): a false positive.
    auto operator<=>(const Point&) const = default;  // NOLINT(modernize-use-nullptr)
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
    ValueCounts& live_before = live_before_;
    live_before.clear();
    for (size_t p = begin; p < end; ++p) {
      const size_t s = points[p].stretch;
      const uint32_t value = leases_.stretches[s].value_id;
      std::vector<size_t>* found = live_.find(value);
      std::vector<size_t>& live = found != nullptr ? *found : live_.add(value, spare_list());
      remember_count(live_before, value, live.size());
      auto at = std::lower_bound(live.begin(), live.end(), s);
      if (points[p].is_start) {
        live.insert(at, s);
      } else {
        LOCKSTEP_CHECK(at != live.end() && *at == s, "a lease stretch ends after it starts");
        live.erase(at);
      }
    }
    judge_instant(live_before, points[begin].time_us);
    for (const auto& [value, before] : live_before) {
      // Keeps live_ as small as the live owners; the emptied list's buffer serves the next one.
      if (live_.at(value).empty()) spare_lists_.push_back(live_.take(value));
    }
  }

  std::vector<size_t> spare_list() {
    if (spare_lists_.empty()) return {};
    std::vector<size_t> list = std::move(spare_lists_.back());
    spare_lists_.pop_back();
    return list;
  }

  // Few values change at one instant: a vector beats a map here.
  using ValueCounts = std::vector<std::pair<uint32_t, size_t>>;  // value_id, live stretches
  static void remember_count(ValueCounts& counts, uint32_t value, size_t count) {
    for (const auto& [seen, before] : counts) {
      if (seen == value) return;
    }
    counts.emplace_back(value, count);
  }

  void judge_instant(const ValueCounts& live_before, TimeUs time_us) {
    std::vector<uint32_t>& reached = reached_;
    reached.clear();
    for (const auto& [value, before] : live_before) {
      const size_t now = live_.at(value).size();
      if (now < quorum_ && holding_.find(value) != nullptr) holding_.take(value);
      if (now >= quorum_ && before < quorum_) reached.push_back(value);
    }
    // The value whose quorum was completed by the earlier event reached it first.
    std::sort(reached.begin(), reached.end(),
              [this](uint32_t a, uint32_t b) { return live_.at(a).back() < live_.at(b).back(); });
    for (uint32_t value : reached) {
      const std::optional<uint32_t> partner = earliest_holder();
      if (partner && clashes_.size() < max_) record(*partner, value, time_us);
      if (holding_.find(value) == nullptr) holding_.add(value, Holding{time_us, next_order_++});
    }
  }

  std::optional<uint32_t> earliest_holder() const {
    std::optional<uint32_t> best;
    size_t best_order = 0;
    for (const auto& [value, holding] : holding_) {
      if (!best || holding.order < best_order) {
        best = value;
        best_order = holding.order;
      }
    }
    return best;
  }

  // The first `quorum` live stretches: enough to prove the quorum.
  std::vector<size_t> quorum_proof(uint32_t value) {
    const std::vector<size_t>& live = live_.at(value);
    return std::vector<size_t>(live.begin(), live.begin() + static_cast<ptrdiff_t>(quorum_));
  }

  void record(uint32_t first, uint32_t second, TimeUs time_us) {
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
  // value_id -> its live stretches, ascending (= in event order); values with none are dropped
  ByValue<std::vector<size_t>> live_;
  ByValue<Holding> holding_;  // values with at least a quorum of live leases
  size_t next_order_ = 0;
  // Reused from instant to instant: no allocation per instant.
  ValueCounts live_before_;
  std::vector<uint32_t> reached_;
  std::vector<std::vector<size_t>> spare_lists_;
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
  Violation v = make_violation(Invariant::lease_exclusion, clash.time_us, clash.key,
                               {first.owner, second.owner}, std::move(events), std::move(detail));
  v.holder = first.owner;
  v.entrant = second.owner;
  v.claim_since_us = clash.first_since_us;
  v.excess_us = std::max<TimeUs>(std::min(first.end_us, second.end_us) - clash.time_us, 0);
  return v;
}

// Collects every key's lease stretches in the walk; sweeps each key's at the end.
class LeaseExclusionPass final : public CheckerPass {
 public:
  LeaseExclusionPass(const History& history, size_t max)
      : CheckerPass({EventKind::grant, EventKind::extend, EventKind::revoke}),
        quorum_(history.meta.quorum),
        max_(max) {
    LOCKSTEP_CHECK(quorum_ >= 1, "a quorum is at least one server");
  }

  void see(const HistoryEvent& e) override { apply_lease_event(keys_[e], leases_[e], e); }

  std::vector<Violation> finish() override {
    std::vector<Violation> found;
    for (size_t k = 0; k < keys_.size(); ++k) {
      const KeyLeases& leases = keys_.state(k);
      QuorumSweep sweep(keys_.key(k), leases, quorum_, max_);
      for (const QuorumClash& clash : sweep.run()) {
        found.push_back(clash_violation(clash, leases, quorum_));
      }
    }
    sort_and_cap(found, max_);
    return found;
  }

 private:
  int quorum_;
  size_t max_;
  PerKey<KeyLeases> keys_;
  LeaseTable<LeaseState> leases_;
};

}  // namespace

std::unique_ptr<CheckerPass> checker_support::lease_exclusion_pass(const History& history,
                                                                   const CheckOptions& options) {
  return std::make_unique<LeaseExclusionPass>(history, options.per_invariant_max);
}

std::vector<Violation> check_lease_exclusion(const History& history, const CheckOptions& options) {
  return run_alone(history, lease_exclusion_pass(history, options));
}

}  // namespace lockstep
