#pragma once
// When a sweep or a calibration stops before its last seed: at a time budget (`--time`), or on a
// signal the command line caught (SIGINT, or SIGTERM from a CI job's timeout). Either way what ran
// so far is judged and reported as usual; the report says it was cut short and by what.
//
// Invariants:
// - Seeds stop being taken at the budget (or the signal); shrinking a counterexample found before
//   then goes on for at most a tenth of the budget more (or stops at once on a signal), keeping the
//   smallest failing spec found so far, so a sweep with `--time T` ends within 1.1 T plus the seeds
//   in flight and the writing of its files.
// - Nothing here decides anything a seed's run does: a seed that ran is the same run with or without
//   a budget, so a time-boxed sweep's seeds are a prefix of the whole sweep's.
#include <chrono>
#include <cstdint>
#include <string>

namespace lockstep {

struct StopConditions {
  int64_t time_budget_us = 0;  // 0: none
  // The number of a signal the caller's handler caught, 0 while none (cli/interrupt.h). Called
  // between seeds, so it must be cheap; nullptr: no signal is watched.
  int (*signal_caught)() = nullptr;
};

// The conditions, from one start instant.
class StopClock {
 public:
  StopClock() : StopClock(StopConditions{}) {}
  explicit StopClock(const StopConditions& conditions)
      : conditions_(conditions), start_(std::chrono::steady_clock::now()) {}

  int signal() const { return conditions_.signal_caught ? conditions_.signal_caught() : 0; }
  bool budget_over() const {
    return conditions_.time_budget_us > 0 && elapsed_us() >= conditions_.time_budget_us;
  }
  // No more seeds: the budget is over, or a signal came.
  bool stop_seeds() const { return signal() != 0 || budget_over(); }
  // No more shrinking: a signal came, or a tenth of the budget more is over too.
  bool stop_shrinking() const {
    return signal() != 0 ||
           (conditions_.time_budget_us > 0 &&
            elapsed_us() >= conditions_.time_budget_us + conditions_.time_budget_us / 10);
  }
  // Why seeds stopped, as reports say it: "SIGINT", "SIGTERM" (a signal's name), "time", or "".
  std::string reason() const;
  int64_t elapsed_us() const;
  const StopConditions& conditions() const { return conditions_; }

 private:
  StopConditions conditions_;
  std::chrono::steady_clock::time_point start_;
};

// "SIGINT", "SIGTERM", or "signal N".
std::string signal_name(int signal_number);

}  // namespace lockstep
