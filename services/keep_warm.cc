#include "services/keep_warm.h"

#include "services/ext/driver/sim_driver_pool.h"

namespace lockstep {

struct KeepBackendsWarm::Kept {
  ext::SimDriverPool::Scope drivers;
};

KeepBackendsWarm::KeepBackendsWarm() : kept_(std::make_unique<Kept>()) {}
KeepBackendsWarm::~KeepBackendsWarm() = default;

}  // namespace lockstep
