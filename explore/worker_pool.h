#pragma once
// Work spread over forked processes, results taken in order: what `sweep --jobs`, `matrix` and
// `calibrate` use to run on every core while printing exactly what one process would.
//
// run_in_order(count, jobs, work, take) calls work(i) for every i in [0, count) and take(i, result)
// in the calling process, for i = 0, 1, 2, ... in that order, until take returns false or every
// index is taken. With jobs <= 1 it does both in turn in this process. Otherwise it forks `jobs`
// workers (worker w computes the indices i with i % jobs == w, in order) and reads their results
// over pipes; a simulated run is a pure function of its inputs, so the results, and so everything
// take() makes of them, are those of one process.
//
// Invariants:
// - take is called in index order, at most once per index, only in the calling process.
// - Workers are stopped (SIGKILL) and reaped by PID before it returns or throws, also when take
//   returns false early; a worker dies with its parent (PR_SET_PDEATHSIG).
// - Memory is bounded: results more than kLookaheadMax indices ahead of the next one taken stay in
//   their worker's pipe (the worker waits) instead of piling up here.
// - Results of quick items cross in batches (worker_pool.cc): take() may see a result one item of
//   its worker late, never a different one.
// - A work() that throws in a worker makes run_in_order throw when that index's turn comes: a
//   UsageError, OutputError, real::ServerUnavailable or real::ServerStartError as that type with
//   its message (so the exit code is the one --jobs 1 gives), anything else as
//   std::runtime_error naming the index. A worker that dies is a std::runtime_error naming the
//   index. Results already taken stay taken.
// - work() must not depend on state that take() changes (workers are forked before any take()).
// - stop (optional) ends it early like a take() returning false: once it returns true, nothing more
//   is taken (a result that arrives after a signal may come from a run the signal broke) and no more
//   work starts. It is asked before each take and at least every kStopPollMs while waiting.
#include <cstddef>
#include <functional>
#include <string>

namespace lockstep {

inline constexpr int kJobsMax = 256;
inline constexpr size_t kLookaheadMax = 4096;
inline constexpr int kStopPollMs = 100;

void run_in_order(size_t count, int jobs, const std::function<std::string(size_t index)>& work,
                  const std::function<bool(size_t index, const std::string& result)>& take,
                  const std::function<bool()>& stop = {});

// The number of cores this process may run on (at least 1, at most kJobsMax).
int available_cores();

}  // namespace lockstep
