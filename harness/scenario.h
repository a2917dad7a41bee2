#pragma once
// A scenario: a workload plus a fault schedule plus what is expected of each adapter.
//
// build() runs before the world starts: it adds clients, gives each a program and a start time,
// and schedules faults. Numbers come from the scenario's options (so `--set` can change them);
// small start jitters are drawn from the run's seed and printed in the trace header, so a seed
// matters even for a scripted timeline. expected() says which invariants the scenario is meant to
// break for an adapter (empty: safe), so `matrix` can judge every cell.
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "checkers/checkers.h"
#include "harness/backend.h"
#include "harness/client.h"
#include "harness/resource.h"
#include "harness/scenario_spec.h"
#include "lockstep/options.h"

namespace lockstep {

// What build() works with.
class ScenarioEnv {
 public:
  ScenarioEnv(ScenarioWorld& world, Recorder& recorder, GuardedResource& resource, Backend& backend,
              const AdapterEntry& adapter, const Options& options, ClientSideLeases* leases,
              sim::World* sim);

  ScenarioWorld& world() { return world_; }
  Backend& backend() { return backend_; }
  // What the adapter under test declares itself to be (its family and the faults it can take).
  const AdapterEntry& adapter() const { return adapter_; }
  // The simulator, in the sim world; nullptr in the real world (require_sim first).
  sim::World* sim() { return sim_; }
  const Options& options() const { return options_; }
  int64_t option(const std::string& name) const { return options_.get_int(name); }
  HistoryMeta& meta() { return recorder_.history().meta; }

  // A new client process on a node of its own. A clock offset or drift is recorded as a fault of
  // that client from the start (clock-offset, clock-drift).
  Client& add_client(const std::string& name, int64_t clock_offset_us = 0, int64_t drift_ppm = 0);
  // Runs program as the client's process from true time start_ms (plus a seeded jitter of at most
  // jitter_us, printed in the trace). Returns the start time in true microseconds.
  int64_t start(Client& client, int64_t start_ms, std::function<void(Client&)> program,
                int64_t jitter_us = 0);
  // A fault at true time at_us, recorded in the history as `tag` (lasting duration_us) and in the
  // trace as `what`.
  void schedule_fault_us(int64_t at_us, FaultTag tag, std::string what,
                         std::function<void()> action, int64_t duration_us = 0);
  // The backend's failover at at_us, recorded once done with what it lost (Backend::failover:
  // the acknowledged writes the new primary lacks; -1 unknown), so the judge excuses by it only
  // what it could have caused.
  void schedule_failover_us(int64_t at_us, std::string what);
  // A fault that kills `client` at at_us (action does the killing): recorded as its death, so a
  // checker does not wait for the operation it had in flight.
  void schedule_client_kill_us(int64_t at_us, const Client& client, std::string what,
                               std::function<void()> action);
  void schedule_fault(int64_t at_ms, FaultTag tag, std::string what, std::function<void()> action,
                      int64_t duration_ms = 0) {
    schedule_fault_us(at_ms * 1000, std::move(tag), std::move(what), std::move(action),
                      duration_ms * 1000);
  }

  // Calls watcher with each event as it is recorded (sim only: Recorder::watch).
  void watch_history(std::function<void(const HistoryEvent&)> watcher) {
    recorder_.watch(std::move(watcher));
  }

  std::vector<std::unique_ptr<Client>>& clients() { return clients_; }
  // Refuses to build in a world other than the simulator, saying why (WorldUnsupported).
  void require_sim(const std::string& why) const;
  // The client running on node, or -1 for a node that is not a client (a server).
  int client_for_node(int node) const;

 private:
  ScenarioWorld& world_;
  Recorder& recorder_;
  GuardedResource& resource_;
  Backend& backend_;
  const AdapterEntry& adapter_;
  const Options& options_;
  ClientSideLeases* leases_;
  sim::World* sim_;
  std::vector<std::unique_ptr<Client>> clients_;
  // node -> the client on it, -1 for none: the recorder asks for every event it attributes
  std::vector<int> client_of_node_;
};

struct Scenario {
  std::string name;
  std::string description;
  std::vector<OptionSpec> options;
  // The adapters it is meant for, by what they are (empty: every adapter), and the same in words
  // for the message that refuses another ("a lease lock whose servers can fail over").
  std::function<bool(const AdapterTraits& traits)> fits;
  std::string fits_text = "every adapter";
  // The worlds whose faults it needs (a client paused from outside exists only in the simulator).
  std::vector<WorldKind> worlds = {WorldKind::sim, WorldKind::real};
  // What it is meant to break for an adapter with these traits (empty: safe).
  std::function<Expectation(const AdapterTraits& traits, const Options& options, bool fencing_on)>
      expected;
  // Its timeline as data (harness/scenario_spec.h), from its options, the adapter under test and
  // the world, run by the one engine (harness/spec_engine.h). A scenario without one builds by
  // code (build).
  std::function<ScenarioSpec(const Options& options, const AdapterEntry& adapter, WorldKind world)>
      spec;
  std::function<void(ScenarioEnv& env)> build;
  // What must happen for a run to judge what the scenario is about ("A holds when the primary
  // dies"), in words, and as a test of the history alone. A run that completes without it is
  // `vacuous`: it proved nothing, and is never a pass. Empty premise_held: no premise.
  std::string premise;
  std::function<bool(const History& history, const Options& options)> premise_held;

  // It fits the adapter's traits.
  bool applies_to(const AdapterEntry& adapter) const;
  // It applies, and the adapter (a known-bad one) is charted in it (AdapterEntry::judged_in).
  bool judges_in_matrix(const AdapterEntry& adapter) const;
  bool runs_in(WorldKind world) const;
  // Adds its clients and faults to env: by its spec where it has one, else by build.
  void build_in(ScenarioEnv& env) const;
};

const std::vector<Scenario>& scenarios();
const Scenario* find_scenario(const std::string& name);
std::string scenario_names();

}  // namespace lockstep
