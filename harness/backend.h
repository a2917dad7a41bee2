#pragma once
// What a Backend (include/lockstep/backend.h) is made from: BackendEnv, the run's world, recorder
// and options. An AdapterEntry (include/lockstep/registry.h) says how to build an adapter's backend
// in each world.
// Code that includes this header gets the Backend and AdapterEntry it makes them for.
#include "checkers/checkers.h"
#include "harness/recorder.h"
#include "harness/scenario_world.h"
#include "lockstep/adapter_traits.h"
#include "lockstep/backend.h"
#include "lockstep/options.h"
#include "lockstep/registry.h"

namespace lockstep::sim {
class World;
}

namespace lockstep {

struct BackendEnv {
  ScenarioWorld& world;
  Recorder& recorder;
  const Options& options;
  sim::World* sim = nullptr;  // the simulator, in the sim world
  // Which clock ends the adapter's leases (its traits, as options refine them): a backend that
  // records lease facts reads client_value leases from the values written (adapter_traits.h).
  ExpiryClock server_expiry = ExpiryClock::wall;
};

// A real backend resets a client's connections through its TCP proxies, at an instant: a window of
// resets (for_us > 0) is the simulator's (WorldUnsupported).
void require_instant_reset(int64_t for_us);

}  // namespace lockstep
