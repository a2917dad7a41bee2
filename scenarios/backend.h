#pragma once
// How an adapter is set up in a simulated world, and the registry of adapters by name.
//
// A SimBackend owns the simulated servers an adapter talks to (nodes, stores) and hands each
// client its adapter instance. The registry maps the names of DESIGN.md (memory, redis, ...,
// and the known-bad ones, which register themselves from outside the production code) to how to
// build them. Registry order is registration order, so listings are stable.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adapters/core/adapter.h"
#include "scenarios/options.h"
#include "scenarios/recorder.h"
#include "sim/world.h"

namespace lockstep {

class SimBackend {
 public:
  virtual ~SimBackend() = default;
  // The adapter client `client` (running on `node`) uses. Owned by the backend.
  virtual LockAdapter& adapter_for(int client, sim::NodeId node) = 0;
  // The server nodes, for faults aimed at servers (clock, crash).
  virtual const std::vector<sim::NodeId>& server_nodes() const = 0;
  // How many servers' leases make a grant.
  virtual int quorum() const { return 1; }
};

struct BackendEnv {
  sim::World& world;
  Recorder& recorder;
  const Options& options;
};

struct AdapterEntry {
  std::string name;
  std::string description;
  std::vector<std::string> worlds;   // "sim", "real"
  bool known_bad = false;
  std::string breaks;                // known-bad: the invariant it is expected to break
  std::vector<OptionSpec> options;   // adapter options, settable with --set
  std::function<std::unique_ptr<SimBackend>(BackendEnv&)> make_sim;
};

// The in-memory store as a simulated backend (one store on a server node of its own, reached
// without latency). bad_release_without_owner_check builds the known-bad calibration variant.
std::unique_ptr<SimBackend> make_memory_sim_backend(BackendEnv& env, bool bad_release_without_owner_check = false);

// The adapters known to this binary: the production ones, then whatever was registered.
const std::vector<AdapterEntry>& adapters();
const AdapterEntry* find_adapter(const std::string& name);
void register_adapter(AdapterEntry entry);
// "memory, redis, ..." for error messages.
std::string adapter_names();

}  // namespace lockstep
