#pragma once
// Reading a saved workload back (a sweep's replay file carries its SwarmSpec as "workload"): the
// file is whatever someone hands `replay`, so every number is checked here against the bounds
// the command line and the catalogue have for the same quantity (harness/option_bounds.h,
// kTtlMaxMs and the retry bounds of adapters/core), before a spec is built from it. A drift of
// 10^6 ppm, a TTL beyond 24 h or a retry count past its bound reached the simulator and ended as
// an internal error; 2^32 read as an int became 0.
#include <nlohmann/json.hpp>

namespace lockstep {

// Throws UsageError naming the field (as a path: clients[2].steps[0].pause_ms) and its bounds.
void check_swarm_workload(const nlohmann::json& workload);

}  // namespace lockstep
