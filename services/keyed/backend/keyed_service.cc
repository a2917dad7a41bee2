#include "services/keyed/backend/keyed_service.h"

#include "services/keyed/adapter/fifo_core.h"
#include "services/keyed/adapter/rw_core.h"
#include "services/keyed/backend/keyed_backend.h"

namespace lockstep {

namespace {

std::vector<AdapterEntry> keyed_adapters() {
  // Registered as a user's keyed lock would be (keyed_rw_adapter, keyed_fifo_adapter): ours
  // are two machines among others, with no path of their own.
  return {keyed_rw_adapter({.name = "keyed-rw",
                            .description =
                                "in-process keyed shared/exclusive mutex: writer preference, "
                                "exclusives in request order, per-key state freed when idle",
                            .make_machine = [] { return std::make_unique<keyed::RwCore>(); }}),
          keyed_fifo_adapter(
              {.name = "fifo",
               .description = "in-process FIFO keyed lock: one caller per key in arrival order, "
                              "max wait, bounded queues, clear() that keeps exclusion",
               .make_machine = [](keyed::FifoLimits limits) {
                 return std::make_unique<keyed::FifoCore>(limits);
               }})};
}

}  // namespace

Service keyed_service() { return {.name = "keyed", .adapters = keyed_adapters}; }

}  // namespace lockstep
