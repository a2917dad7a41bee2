#pragma once
// True time: an integer count of microseconds since a run began. The simulator advances it, the
// real world reads it from a monotonic clock, and only the history (and so the checkers) sees it;
// nodes see their own local clocks. The one definition of TimeUs for every stage.
#include <cstdint>

namespace lockstep {

using TimeUs = int64_t;

}  // namespace lockstep
