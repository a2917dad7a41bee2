#pragma once
// How an adapter is set up in a world, and the registry of adapters by name.
//
// A Backend owns the servers an adapter talks to (simulated nodes, or real processes it starts and
// stops), hands each client its adapter instance, and carries the faults aimed at the servers or
// at the path to them. A fault this backend cannot produce in its world throws WorldUnsupported.
// An AdapterEntry says how to build an adapter's backend in each world; the registry of entries
// by name is services/registry.h.
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "adapters/core/adapter.h"
#include "checkers/checkers.h"
#include "harness/adapter_traits.h"
#include "harness/options.h"
#include "harness/recorder.h"
#include "harness/run_end.h"
#include "harness/scenario_world.h"
#include "harness/world_kind.h"

namespace lockstep::sim {
class World;
}

namespace lockstep {

class KeyedSimBackend;  // services/keyed/backend/keyed_backend.h

class Backend {
 public:
  virtual ~Backend() = default;
  // The adapter client `client` (running on `node`) uses. Owned by the backend.
  virtual LockAdapter& adapter_for(int client, int node) = 0;
  virtual int server_count() const = 0;
  // How many servers' leases make a grant.
  virtual int quorum() const { return 1; }
  // Whether servers report their grants, extends and revokes to the recorder. When they do not
  // (a real server), the runner derives them conservatively from the clients' operations.
  virtual bool records_leases() const = 0;
  // The lock library under test as it named itself ("name version"; ext drivers' ready line), for
  // the report; "" for lockstep's own adapters.
  virtual std::string library() const { return {}; }
  // The in-process keyed lock this backend runs (the keyed scenarios' steps), or null: how a
  // scenario reaches a keyed lock, by type, without a cast.
  virtual KeyedSimBackend* keyed_sim() { return nullptr; }
  // The longest one client call waits for a reply that never comes (its command timeout, plus a
  // connect timeout where a call may reconnect first), on the client's clock; 0 when calls do not
  // time out. A sweep's liveness bound allows it for each fault that can lose a request.
  virtual int64_t call_timeout_us() const { return 0; }
  // How long the servers may take, once their primary or leader is lost (died, stopped), to elect
  // another and serve again, on their clocks, split votes included; 0 where no election happens (a
  // replica promoted at once, or none). A sweep's liveness bound allows it for each such fault.
  virtual int64_t election_us() const { return 0; }

  // Faults. Each throws WorldUnsupported unless this backend can produce it in its world.
  // The primary dies and a replica takes over. Returns how many writes the primary had
  // acknowledged that the new primary lacks (lost with it), or -1 when it cannot tell (a real
  // server): the judge excuses nothing by a failover that lost nothing.
  virtual int64_t failover();
  virtual void set_server_drift(int64_t drift_ppm);       // every server's clock, from now on
  virtual void partition(int client_node, bool two_way);  // one-way: replies to the client lost
  virtual void heal();                                    // every partition
  virtual void set_fixed_latency(int64_t latency_us);     // makes "on the wire" a known instant

  // Faults aimed at one server, by index in [0, server_count()) (Redlock's nodes; a single Redis
  // is server 0). Same rule: WorldUnsupported where this backend cannot produce them.
  virtual void crash_server(int server);                       // dies at once (persistence applies)
  virtual void restart_server(int server);                     // back on its own, empty or not
  virtual void pause_server(int server, int64_t duration_us);  // stop-the-world of the server
  virtual void jump_server_clock(int server, int64_t delta_us);  // its wall clock jumps, from now
  virtual void partition_server(int client_node, int server,
                                bool two_way);  // one client from one server
  // Every message to and from the server takes delay_us longer, from now on: a distant or loaded
  // host, so one answer of a fan-out arrives well after the others.
  virtual void slow_server(int server, int64_t delay_us);
  // The server ends the sessions of the client on client_node (pg_terminate_backend): whatever
  // they held goes, and the client learns of it only at its next request to that server.
  virtual void end_session(int client_node);
};

struct BackendEnv {
  ScenarioWorld& world;
  Recorder& recorder;
  const Options& options;
  sim::World* sim = nullptr;  // the simulator, in the sim world
  // Which clock ends the adapter's leases (its traits, as options refine them): a backend that
  // records lease facts reads client_value leases from the values written (adapter_traits.h).
  ExpiryClock server_expiry = ExpiryClock::wall;
};

using BackendFactory = std::function<std::unique_ptr<Backend>(BackendEnv&)>;

// The invariants a run is expected to break (empty: safe).
using Expectation = std::set<Invariant>;

// A documented finding: in `scenario` and `world`, the lock's run ends as `end` (complete, or error for a
// driver that never answers) having violated exactly `violated`, where its traits expect otherwise.
// A matrix cell whose every seed either matches its expectation or ends exactly so is charted as
// the finding and does not fail; any other outcome (the library fixed, or broken differently) is a
// difference again. The expectation itself stays what the lock claims.
struct Finding {
  std::string scenario;
  WorldKind world = WorldKind::sim;
  Expectation violated;
  RunEnd end = RunEnd::complete;
  std::string summary;  // one line: what the lock does, for the matrix and the findings table
};

struct AdapterEntry {
  std::string name;
  std::string description;
  std::vector<WorldKind> worlds;
  AdapterTraits traits;  // what it is: scenarios apply and expect by these
  bool known_bad = false;
  std::string breaks;  // known-bad: the invariant the sweep is expected to find broken
  // Known-bad: the share of a sweep's seeds its design lets it be caught on `breaks` in, a floor
  // `calibrate` judges (explore/calibrate.h); in (0, 1], or 0 where none is declared (a user's
  // known-bad: judged by caught at least once).
  double catch_share_min = 0;
  // Known-bad: the scenarios whose matrix cells judge it (empty: every one its traits fit). A
  // known-bad lock is meant to be caught, not charted everywhere: outside these its one bug may
  // show or not by chance of the seed (random tokens), which a cell cannot expect. `run` takes
  // it in any scenario that fits.
  std::vector<std::string> judged_in;
  // Known-bad: the correct adapter it is a copy of, with its one thing wrong.
  std::string sibling;
  std::vector<OptionSpec> options;  // adapter options, settable with --set
  // Checks what one option's bounds cannot (an option that must be set, options that must agree),
  // before anything runs: throws OptionError naming the option and what is valid.
  std::function<void(const Options&)> check_options;
  // What lockstep has shown this lock to do where its claims let a cell expect otherwise (a third
  // party's library, above all): documented findings, charted as such instead of as differences.
  std::vector<Finding> findings;
  // A lock library lockstep does not maintain (the ext drivers): judged, charted and swept like
  // any lock, never vouched for (the swarm property tests, which assert that lockstep's own
  // adapters hold, leave it out).
  bool third_party = false;
  // Runs only with an option the user sets (a user's driver names its command): a matrix that
  // does not name it leaves it out.
  bool needs_user_option = false;
  // What the adapter is as its options configure it: the declared traits, changed where an option
  // changes the claim or the behaviour (a majority write concern survives a failover; expiry by the
  // client's clock; persistence on every write survives a restart). Empty: the declared traits.
  std::function<AdapterTraits(AdapterTraits declared, const Options& options)> refine;
  BackendFactory make_sim;
  BackendFactory make_real;  // empty when the adapter has no real world
};

// The adapter's traits under these options (AdapterEntry::refine). A lease in the value
// (ExpiryClock::client_value) is judged by the clients' wall clocks, whatever else the envelope
// says: their offsets, jumps and fast rates are outside what such a lock can survive.
inline AdapterTraits effective_traits(const AdapterEntry& entry, const Options& options) {
  AdapterTraits traits = entry.refine ? entry.refine(entry.traits, options) : entry.traits;
  if (traits.server_expiry == ExpiryClock::client_value) {
    traits.envelope.client_wall_clock = false;
    traits.envelope.clients_compare_wall_deadlines = true;
  }
  return traits;
}

}  // namespace lockstep
