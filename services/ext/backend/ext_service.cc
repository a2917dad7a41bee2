#include "services/ext/backend/ext_service.h"

#include "services/ext/backend/ext_backend.h"
#include "services/ext/driver/sim_driver_pool.h"

namespace lockstep {

namespace {

// Co-simulated drivers serve run after run while a sweep, matrix or calibration lasts.
class WarmDrivers final : public WarmScope {
 private:
  ext::SimDriverPool::Scope drivers_;
};

}  // namespace

Service ext_service() {
  return {
      .name = "ext",
      .adapters = ext_adapter_entries,
      .keep_warm = []() -> std::unique_ptr<WarmScope> { return std::make_unique<WarmDrivers>(); }};
}

}  // namespace lockstep
