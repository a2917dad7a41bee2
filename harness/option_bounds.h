#pragma once
// The bounds of the numbers a user hands lockstep, in one table: the command line's flags
// (cli/cli.cc) and the readers of the files those flags write (a sweep shard read back by
// sweep-merge, a saved workload read back by replay) check the same numbers, so a file cannot
// carry what the command line would refuse. Scenario and adapter options carry their bounds in
// their declarations (OptionSpec, include/lockstep/options.h); kTtlMaxMs, kRetryDelayMaxMs and
// kMaxRetryTimes (adapters/core) bound the lock's own numbers; --jobs is kJobsMax
// (explore/worker_pool.h) and --shard's count kShardCountMax (explore/sweep.h).
#include <cstdint>

namespace lockstep {

inline constexpr uint64_t kSweepSeedsMax = 10'000'000;     // sweep --seeds
inline constexpr uint64_t kMatrixSeedsMax = 100'000;       // matrix --seeds (per cell)
inline constexpr uint64_t kCalibrateSeedsMax = 1'000'000;  // calibrate --seeds (per adapter)
inline constexpr uint64_t kShrinkMax = 1'000;              // sweep --shrink
// A client or server clock runs at most this much fast or slow (the clock-drift scenario's
// drift_ppm; a rate of -100% would stop a clock).
inline constexpr int64_t kDriftPpmMax = 900'000;

}  // namespace lockstep
