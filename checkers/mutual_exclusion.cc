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

// mutual_exclusion: see checkers.h for the definition this judges.

namespace lockstep {

namespace {

using namespace checker_support;

struct Overlap {
  size_t other_enter = kNoEvent;  // the holder that was already inside
  size_t enter = kNoEvent;        // the entry that overlapped it
  size_t other_exit = kNoEvent;   // when the earlier holder left (filled in later), if it did
  size_t exit = kNoEvent;         // when the entrant left (filled in later), if it did
  // When the validity the earlier holder was last told of ended, as the entrant came in (true
  // time; 0: none reported, a lock without expiry).
  TimeUs other_validity_end_us = 0;
};

struct Holder {
  size_t enter = kNoEvent;
  bool shared = false;
  // Indices into MutualExclusionSweep::overlaps_: those it was inside first for, and those it
  // entered into. Either exit ends the overlap.
  std::vector<size_t> overlaps_awaiting_exit;
  std::vector<size_t> overlaps_entered;
};

// A key's holders: a few at a time (one, when the lock works), so sorted vectors beat maps.
struct KeyHolders {
  std::vector<std::pair<int, Holder>> by_client;           // sorted by client
  std::vector<std::pair<size_t, int>> all_by_entry;        // enter index -> client, sorted by index
  std::vector<std::pair<size_t, int>> exclusive_by_entry;  // the same, non-shared holders only
  // Per client, when the validity of its last successful acquire, extend or renewal of the key
  // ends (true time; 0: none reported). Sorted by client; one entry per client that ever got the key.
  std::vector<std::pair<int, TimeUs>> validity_end_us;

  void set_validity_end(int client, TimeUs end_us) {
    auto it = std::lower_bound(validity_end_us.begin(), validity_end_us.end(), client,
                               [](const auto& v, int c) { return v.first < c; });
    if (it != validity_end_us.end() && it->first == client) {
      it->second = end_us;
    } else {
      validity_end_us.emplace(it, client, end_us);
    }
  }
  TimeUs validity_end(int client) const {
    auto it = std::lower_bound(validity_end_us.begin(), validity_end_us.end(), client,
                               [](const auto& v, int c) { return v.first < c; });
    return it != validity_end_us.end() && it->first == client ? it->second : 0;
  }

  Holder* holder(int client) {
    auto it = find_client(client);
    return it != by_client.end() && it->first == client ? &it->second : nullptr;
  }
  std::vector<std::pair<int, Holder>>::iterator find_client(int client) {
    return std::lower_bound(by_client.begin(), by_client.end(), client,
                            [](const auto& held, int c) { return held.first < c; });
  }
  // Enter indices only grow: a new entry goes last.
  static void erase_entry(std::vector<std::pair<size_t, int>>& entries, size_t enter) {
    auto it = std::lower_bound(entries.begin(), entries.end(), enter,
                               [](const auto& entry, size_t index) { return entry.first < index; });
    if (it != entries.end() && it->first == enter) entries.erase(it);
  }
};

class MutualExclusionSweep final : public CheckerPass {
 public:
  MutualExclusionSweep(const History& history, size_t max)
      : CheckerPass(
            {EventKind::cs_enter, EventKind::cs_exit, EventKind::complete, EventKind::renewal}),
        history_(history),
        max_(max) {}

  void see(const HistoryEvent& e) override {
    if (e.kind == EventKind::cs_enter) enter(e);
    if (e.kind == EventKind::cs_exit) exit(e);
    const bool granted = (e.kind == EventKind::complete && e.outcome == Outcome::ok &&
                          (e.op == Op::acquire || e.op == Op::extend)) ||
                         e.kind == EventKind::renewal;
    if (granted) keys_[e].set_validity_end(e.client, e.end_us);
  }

  std::vector<Violation> finish() override {
    std::vector<Violation> found;
    found.reserve(overlaps_.size());
    for (const Overlap& overlap : overlaps_) {
      if (!touches_only(overlap)) found.push_back(to_violation(overlap));
    }
    return found;  // already in time order: overlaps are found at the later entry
  }

 private:
  void enter(const HistoryEvent& e) {
    KeyHolders& key = keys_[e];
    // A second enter without an exit continues the hold it already has.
    if (key.holder(e.client) != nullptr) return;
    Holder holder;
    holder.enter = e.index;
    holder.shared = e.shared;
    key.by_client.emplace(key.find_client(e.client), e.client, std::move(holder));
    record_conflict(key, e);
    LOCKSTEP_CHECK(key.all_by_entry.empty() || key.all_by_entry.back().first < e.index,
                   "history indices grow");
    key.all_by_entry.emplace_back(e.index, e.client);
    if (!e.shared) key.exclusive_by_entry.emplace_back(e.index, e.client);
  }

  void exit(const HistoryEvent& e) {
    KeyHolders& key = keys_[e];
    auto it = key.find_client(e.client);
    if (it == key.by_client.end() || it->first != e.client) return;  // no enter: shows nothing
    for (size_t overlap : it->second.overlaps_awaiting_exit)
      overlaps_[overlap].other_exit = e.index;
    for (size_t overlap : it->second.overlaps_entered) overlaps_[overlap].exit = e.index;
    KeyHolders::erase_entry(key.all_by_entry, it->second.enter);
    KeyHolders::erase_entry(key.exclusive_by_entry, it->second.enter);
    key.by_client.erase(it);
  }

  // Shared holds coexist; anything else conflicts with every holder. The earliest one is named.
  void record_conflict(KeyHolders& key, const HistoryEvent& e) {
    if (overlaps_.size() >= max_) return;
    const std::vector<std::pair<size_t, int>>& rivals =
        e.shared ? key.exclusive_by_entry : key.all_by_entry;
    if (rivals.empty()) return;
    Holder& other = *key.holder(rivals.front().second);
    other.overlaps_awaiting_exit.push_back(overlaps_.size());
    key.holder(e.client)->overlaps_entered.push_back(overlaps_.size());
    overlaps_.push_back(
        Overlap{other.enter, e.index, kNoEvent, kNoEvent, key.validity_end(rivals.front().second)});
  }

  // The holder inside first was told its lock is valid until no later than the instant the entrant
  // came in, and left at that instant, touching nothing of the key there after the entry: a lease
  // granted anew as the last holder's validity ends, whose exit the simulator runs after the
  // grant. Which of two clients' events at one instant of true time comes first is the
  // simulator's order, not the lock's, and the holder's claim had ended: the stays touch, they do
  // not overlap. A lock without expiry (nothing reported) claims until the release, so an entry
  // before the holder's exit overlaps however short; so does an access by the leaver after the
  // entry.
  bool touches_only(const Overlap& overlap) const {
    if (overlap.other_exit == kNoEvent) return false;
    const HistoryEvent& entry = history_[overlap.enter];
    if (history_[overlap.other_exit].time_us != entry.time_us) return false;
    const TimeUs claimed_until_us = overlap.other_validity_end_us;
    if (claimed_until_us <= 0 || claimed_until_us > entry.time_us) return false;
    const int leaver = history_[overlap.other_enter].client;
    // Every event between the entry and the exit is at that instant: history times never fall.
    for (size_t i = overlap.enter + 1; i < overlap.other_exit; ++i) {
      const HistoryEvent& e = history_[i];
      if (e.kind == EventKind::access && e.client == leaver && e.key == entry.key) return false;
    }
    return true;
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
    Violation v = make_violation(
        Invariant::mutual_exclusion, enter.time_us, enter.key, {other.client, enter.client},
        {overlap.other_enter, overlap.enter, overlap.other_exit}, std::move(detail));
    v.holder = other.client;
    v.entrant = enter.client;
    v.claim_since_us = other.time_us;
    // The overlap lasts until either of the two leaves: the entrant may leave first.
    const auto left_at_us = [this](size_t exit) {
      return exit != kNoEvent ? history_[exit].time_us : history_.meta.end_us;
    };
    const TimeUs left_us = std::min(left_at_us(overlap.other_exit), left_at_us(overlap.exit));
    v.excess_us = std::max<TimeUs>(left_us - enter.time_us, 0);
    return v;
  }

  const History& history_;
  size_t max_;
  PerKey<KeyHolders> keys_;
  std::vector<Overlap> overlaps_;
};

}  // namespace

std::unique_ptr<CheckerPass> checker_support::mutual_exclusion_pass(const History& history,
                                                                    const CheckOptions& options) {
  return std::make_unique<MutualExclusionSweep>(history, options.per_invariant_max);
}

std::vector<Violation> check_mutual_exclusion(const History& history, const CheckOptions& options) {
  return run_alone(history, mutual_exclusion_pass(history, options));
}

}  // namespace lockstep
