#include "property_tests/known_bad.h"

#include "scenarios/backend.h"

namespace lockstep {

void register_known_bad_adapters() {
  if (find_adapter("bad-memory-no-owner-check") != nullptr) return;
  register_adapter({
      .name = "bad-memory-no-owner-check",
      .description = "known-bad: the in-memory lock whose release deletes whatever lock holds the key",
      .worlds = {"sim"},
      .known_bad = true,
      .breaks = "ownership",
      .make_sim = [](BackendEnv& env) { return make_memory_sim_backend(env, /*bad_release_without_owner_check=*/true); },
  });
}

}  // namespace lockstep
