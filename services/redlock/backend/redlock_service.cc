#include "services/redlock/backend/redlock_service.h"

#include "services/redlock/backend/redlock_backend.h"

namespace lockstep {

namespace {

std::vector<AdapterEntry> redlock_adapters() {
  return {{.name = "redlock",
           .description = "Redlock over N independent Redis nodes (nodes: 3, 5, 7): SET NX PX on "
                          "all in parallel, a majority and positive validity after elapsed time "
                          "and drift, release everywhere on failure; no fencing token",
           .worlds = {WorldKind::sim, WorldKind::real},
           .traits = kRedlockTraits,
           .options = redlock_backend_options(),
           .refine = redlock_traits,
           .make_sim =
               [](BackendEnv& env) {
                 return make_redlock_sim_backend(env, production_redlock_adapter());
               },
           .make_real =
               [](BackendEnv& env) {
                 return make_redlock_real_backend(env, production_redlock_adapter());
               }}};
}

}  // namespace

Service redlock_service() { return {.name = "redlock", .adapters = redlock_adapters}; }

}  // namespace lockstep
