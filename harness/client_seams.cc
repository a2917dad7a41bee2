#include "harness/client_seams.h"

#include "base/check.h"
#include "harness/scenario_world.h"
#include "sim/world.h"

namespace lockstep {

ClientSeams ClientSeamsSource::for_client(int client, int node) {
  LOCKSTEP_CHECK(client >= 0, "seams are a client's");
  std::unique_ptr<Random>& random = random_by_client_[client];
  if (!random) {
    if (env_.sim != nullptr) {
      // Its own stream per client, from the run's seed: the same run draws the same values.
      constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;
      random = std::make_unique<SeededRandom>(env_.sim->seed() * kGolden +
                                              static_cast<uint64_t>(client) + 1);
    } else {
      random = std::make_unique<SystemRandom>();
    }
  }
  return {.clock = env_.world.clock(node),
          .random = *random,
          .background = env_.world.background(node)};
}

}  // namespace lockstep
