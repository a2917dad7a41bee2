#include "services/memory/backend/memory_service.h"

#include "services/memory/backend/memory_backend.h"

namespace lockstep {

namespace {

std::vector<AdapterEntry> memory_adapters() {
  return {{.name = "memory",
           .description = "in-process TTL lease table with owner-checked release/extend and "
                          "monotonic fencing tokens",
           .worlds = {WorldKind::sim, WorldKind::real},
           .traits = kMemoryTraits,
           .make_sim = [](BackendEnv& env) { return make_memory_backend(env); },
           .make_real = [](BackendEnv& env) { return make_memory_backend(env); }}};
}

}  // namespace

Service memory_service() { return {.name = "memory", .adapters = memory_adapters}; }

}  // namespace lockstep
