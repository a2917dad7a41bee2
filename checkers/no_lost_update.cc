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

// no_lost_update: see checkers.h for the definition this judges.

namespace lockstep {

namespace {

using namespace checker_support;

// The accepted writes of one counter, and the first one that did not raise it.
struct WriteTally {
  size_t accepted = 0;
  size_t last_write = kNoEvent;
  size_t first_flat = kNoEvent;         // first accepted write not above the previous one
  size_t before_first_flat = kNoEvent;  // the previous accepted write
  size_t final_event = kNoEvent;        // the last final_value event for this counter

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
      "{}'s write of {} on key {} at {}us did not raise the counter ({} had written {} at {}us); "
      "{}",
      client_name(flat.client), flat.counter, flat.key, flat.time_us, client_name(before.client),
      before.counter, before.time_us, totals);
  return make_violation(
      Invariant::no_lost_update, flat.time_us, flat.key, {before.client, flat.client},
      {tally.before_first_flat, tally.first_flat, final_event.index}, std::move(detail));
}

// One counter per key; a final_value without a key speaks for every write of the run.
class NoLostUpdatePass final : public CheckerPass {
 public:
  NoLostUpdatePass(const History& history, size_t max)
      : CheckerPass({EventKind::access, EventKind::final_value}), history_(history), max_(max) {}

  void see(const HistoryEvent& e) override {
    if (e.kind == EventKind::access && e.op == Op::write && e.outcome == Outcome::ok) {
      per_key_[e].see_write(history_, e);
      all_.see_write(history_, e);
    }
    if (e.kind == EventKind::final_value) {
      (e.key.empty() ? all_ : per_key_[e]).final_event = e.index;
    }
  }

  std::vector<Violation> finish() override {
    std::vector<Violation> found;
    auto judge = [&](const WriteTally& tally) {
      if (tally.final_event == kNoEvent) return;  // nothing to compare with
      const HistoryEvent& final_event = history_[tally.final_event];
      if (final_event.counter == static_cast<int64_t>(tally.accepted)) return;
      found.push_back(lost_update_violation(history_, tally, final_event));
    };
    judge(all_);
    for (size_t k = 0; k < per_key_.size(); ++k) judge(per_key_.state(k));
    sort_and_cap(found, max_);
    return found;
  }

 private:
  const History& history_;
  size_t max_;
  PerKey<WriteTally> per_key_;
  WriteTally all_;
};

}  // namespace

std::unique_ptr<CheckerPass> checker_support::no_lost_update_pass(const History& history,
                                                                  const CheckOptions& options) {
  return std::make_unique<NoLostUpdatePass>(history, options.per_invariant_max);
}

std::vector<Violation> check_no_lost_update(const History& history, const CheckOptions& options) {
  return run_alone(history, no_lost_update_pass(history, options));
}

}  // namespace lockstep
