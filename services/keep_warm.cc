#include "scenarios/backends/keep_warm.h"

#include "ext/sim_driver_pool.h"

namespace lockstep {

struct KeepBackendsWarm::Kept {
  ext::SimDriverPool::Scope drivers;
};

KeepBackendsWarm::KeepBackendsWarm() : kept_(std::make_unique<Kept>()) {}
KeepBackendsWarm::~KeepBackendsWarm() = default;

}  // namespace lockstep
