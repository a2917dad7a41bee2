#include "explore/replay.h"

#include <stdexcept>

#include <fmt/format.h>

#include "explore/spec_input.h"
#include "explore/swarm.h"

namespace lockstep {

RunReport replay_run(const ReplaySpec& spec) {
  if (spec.workload.is_null()) return run_scenario(spec.config);
  check_swarm_workload(spec.workload);  // every number within the command line's bounds
  try {
    return run_scenario(make_swarm_scenario(swarm_spec_from_json(spec.workload)), spec.config);
  } catch (const std::invalid_argument& e) {
    if (dynamic_cast<const UsageError*>(&e) != nullptr) throw;
    throw UsageError(fmt::format("the report's workload cannot be replayed: {}", e.what()));
  }
}

}  // namespace lockstep
