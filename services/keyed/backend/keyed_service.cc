#include "services/keyed/backend/keyed_service.h"

#include "services/keyed/backend/keyed_backend.h"

namespace lockstep {

namespace {

std::vector<AdapterEntry> keyed_adapters() {
  return {{.name = "keyed-rw",
           .description = "in-process keyed shared/exclusive mutex: writer preference, exclusives "
                          "in request order, per-key state freed when idle",
           .worlds = {WorldKind::sim},
           .traits = kKeyedRwTraits,
           .make_sim = [](BackendEnv& env) { return make_keyed_rw_sim_backend(env); }},
          {.name = "fifo",
           .description = "in-process FIFO keyed lock: one caller per key in arrival order, max "
                          "wait, bounded queues, clear() that keeps exclusion",
           .worlds = {WorldKind::sim},
           .traits = kFifoTraits,
           .options = fifo_backend_options(),
           .make_sim = [](BackendEnv& env) { return make_fifo_sim_backend(env); }}};
}

}  // namespace

Service keyed_service() { return {.name = "keyed", .adapters = keyed_adapters}; }

}  // namespace lockstep
