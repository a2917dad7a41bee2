#pragma once
// True time in the simulator: an integer count of microseconds since the run began. Only the
// scheduler advances it and only checkers (through the history) read it; nodes see their own
// local clocks (node_clock.h).
#include <cstdint>

#include "base/time.h"

namespace lockstep::sim {

using lockstep::TimeUs;
inline constexpr TimeUs kUsPerMs = 1000;
inline constexpr TimeUs kUsPerSec = 1'000'000;
inline constexpr TimeUs kTimeNever = INT64_MAX;

// Local wall clocks start here (2026-01-01T00:00:00Z in Unix microseconds) plus their offset, so
// dates that adapters compute look like dates.
inline constexpr int64_t kLocalEpochUs = 1'767'225'600'000'000;

}  // namespace lockstep::sim
