#include "services/memory/known_bad/memory_known_bad.h"

#include "harness/known_bad.h"
#include "services/memory/backend/memory_backend.h"
#include "services/memory/known_bad/known_bad_memory.h"
#include "services/service.h"

namespace lockstep {

std::vector<AdapterEntry> memory_known_bad() {
  const AdapterEntry& memory = production_adapter("memory");
  // Where the one bug shows, and where the correct sibling's safety must still show.
  const std::vector<std::string> lease_scenarios = {
      "sequential",          "concurrent-race", "crash-holder", "stolen-lock",
      "extend-after-expiry", "gc-pause",        "clock-drift",  "retry-storm"};
  return {
      known_bad_entry(
          {"bad-memory-no-owner-check", "ownership",
           // a lease must end while its holder works, and another take the key before its release.
           0.2, "known-bad: the in-memory lock whose release deletes whatever lock holds the key",
           [](AdapterTraits& t) { t.release = OwnerCheck::none; }, lease_scenarios},
          memory,
          [](BackendEnv& env) {
            return make_memory_backend(env, [](MemoryAdapter& store) {
              return std::make_unique<BadMemoryNoOwnerCheck>(store);
            });
          }),
      known_bad_entry(
          {"bad-wall-clock-expiry",
           "mutual_exclusion",
           // a forward server clock jump must end a live lease early, and another client ask then.
           0.005,
           "known-bad: the in-memory lock whose store times its leases on the wall clock (a "
           "forward jump ends them early)",
           [](AdapterTraits& t) { t.server_expiry = ExpiryClock::wall; },
           {"sequential", "stolen-lock", "server-clock-jump"}},
          memory,
          [](BackendEnv& env) {
            return make_memory_backend(env, {}, [](Clock& node_clock) {
              return std::make_unique<WallClockAsMonotonic>(node_clock);
            });
          }),
  };
}

}  // namespace lockstep
