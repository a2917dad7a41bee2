#pragma once
// One checker as a walk over a history, event by event (internal to checkers/), so that
// check_all feeds every checker from a single walk: a long history is read from memory once, not
// once per checker. Over a million events, each checker's own walk was a large part of what it
// cost: an event is several cache lines, and a light checker does little with most of them.
//
// A pass sees, in index order, the events of the kinds it reads and nothing else, until it says
// it is done (it has found all it may report: the rest cannot change its answer); then finish()
// judges what is left and returns what the checker's check_* function returns. A pass is used
// once. Fed alone (run_alone) or beside others, it sees the same events, so it gives the same
// answer either way.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "checkers/checkers.h"

namespace lockstep::checker_support {

// A set of EventKinds: what a pass reads.
class EventKinds {
 public:
  constexpr EventKinds(std::initializer_list<EventKind> kinds) {
    for (EventKind kind : kinds) bits_ |= bit(kind);
  }
  constexpr bool contains(EventKind kind) const { return (bits_ & bit(kind)) != 0; }

 private:
  static constexpr uint32_t bit(EventKind kind) { return 1U << static_cast<unsigned>(kind); }
  static_assert(kEventKindsAll.size() <= 32, "a kind is a bit of bits_");
  uint32_t bits_ = 0;
};

class CheckerPass {
 public:
  explicit CheckerPass(EventKinds reads) : reads_(reads) {}
  virtual ~CheckerPass() = default;
  CheckerPass(const CheckerPass&) = delete;
  CheckerPass& operator=(const CheckerPass&) = delete;

  // An event goes to see() when the pass reads its kind and is not yet done.
  bool reads(EventKind kind) const { return reads_.contains(kind); }
  bool done() const { return done_; }
  virtual void see(const HistoryEvent& e) = 0;
  virtual std::vector<Violation> finish() = 0;

 protected:
  // Once done, see() is called no more.
  void set_done(bool done) { done_ = done; }

 private:
  EventKinds reads_;
  bool done_ = false;
};

// The passes of the checkers that read the history as one walk, in all_invariants() order.
std::unique_ptr<CheckerPass> mutual_exclusion_pass(const History& history,
                                                   const CheckOptions& options);
std::unique_ptr<CheckerPass> lease_exclusion_pass(const History& history,
                                                  const CheckOptions& options);
std::unique_ptr<CheckerPass> ownership_pass(const History& history, const CheckOptions& options);
std::unique_ptr<CheckerPass> fencing_pass(const History& history, const CheckOptions& options);
std::unique_ptr<CheckerPass> no_lost_update_pass(const History& history,
                                                 const CheckOptions& options);
std::unique_ptr<CheckerPass> liveness_pass(const History& history, const CheckOptions& options);
std::unique_ptr<CheckerPass> valid_on_return_pass(const History& history,
                                                  const CheckOptions& options);
std::unique_ptr<CheckerPass> validity_within_lease_pass(const History& history,
                                                        const CheckOptions& options);
std::unique_ptr<CheckerPass> error_not_applied_pass(const History& history,
                                                    const CheckOptions& options);

// Feeds the passes every event of `history` they want, in one walk.
void run_passes(const History& history, const std::vector<CheckerPass*>& passes);

// One pass over the whole history: what its check_* function returns.
inline std::vector<Violation> run_alone(const History& history, std::unique_ptr<CheckerPass> pass) {
  run_passes(history, {pass.get()});
  return pass->finish();
}

}  // namespace lockstep::checker_support
