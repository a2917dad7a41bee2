#pragma once
// AdapterEntry, what an adapter is (its traits, options, findings) and how its backend is built in
// each world, and the registry of entries by name: every service's production adapters
// (services/service.h), then whatever was registered from outside the production code (the
// known-bad adapters, a user's own). Registry order is registration order, so listings are stable.
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "lockstep/adapter_traits.h"
#include "lockstep/backend.h"
#include "lockstep/invariant.h"
#include "lockstep/options.h"
#include "lockstep/run_end.h"
#include "lockstep/world_kind.h"

namespace lockstep {

// A factory hands the run's BackendEnv on, to make_redis_sim_backend and the like
// (lockstep/redis.h).
using BackendFactory = std::function<std::unique_ptr<Backend>(BackendEnv&)>;

// The invariants a run is expected to break (empty: safe).
using Expectation = std::set<Invariant>;

// A documented finding: in `scenario` and `world`, the lock's run ends as `end` (complete, or error for a
// driver that never answers) having violated exactly `violated`, where its traits expect otherwise.
// A matrix cell whose every seed either matches its expectation or ends exactly so is charted as
// the finding and does not fail; any other outcome (the library fixed, or broken differently) is a
// difference again. The expectation itself stays what the lock claims.
struct Finding {
  std::string scenario{};
  WorldKind world = WorldKind::sim;
  Expectation violated{};
  RunEnd end = RunEnd::complete;
  std::string summary{};  // one line: what the lock does, for the matrix and the findings table
};

struct AdapterEntry {
  std::string name{};
  std::string description{};
  std::vector<WorldKind> worlds{};
  AdapterTraits traits{};  // what it is: scenarios apply and expect by these
  bool known_bad = false;
  std::string breaks{};  // known-bad: the invariant the sweep is expected to find broken
  // Known-bad: the share of a sweep's seeds its design lets it be caught on `breaks` in, a floor
  // `calibrate` judges (explore/calibrate.h); in (0, 1], or 0 where none is declared (a user's
  // known-bad: judged by caught at least once).
  double catch_share_min = 0;
  // Known-bad: the scenarios whose matrix cells judge it (empty: every one its traits fit). A
  // known-bad lock is meant to be caught, not charted everywhere: outside these its one bug may
  // show or not by chance of the seed (random tokens), which a cell cannot expect. `run` takes
  // it in any scenario that fits.
  std::vector<std::string> judged_in{};
  // Known-bad: the correct adapter it is a copy of, with its one thing wrong.
  std::string sibling{};
  std::vector<OptionSpec> options{};  // adapter options, settable with --set
  // Checks what one option's bounds cannot (an option that must be set, options that must agree),
  // before anything runs: throws OptionError naming the option and what is valid.
  std::function<void(const Options&)> check_options{};
  // What lockstep has shown this lock to do where its claims let a cell expect otherwise (a third
  // party's library, above all): documented findings, charted as such instead of as differences.
  std::vector<Finding> findings{};
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
  std::function<AdapterTraits(AdapterTraits declared, const Options& options)> refine{};
  BackendFactory make_sim{};
  BackendFactory make_real{};  // empty when the adapter has no real world
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

// The adapters known to this binary: the production ones, then whatever was registered.
const std::vector<AdapterEntry>& adapters();
const AdapterEntry* find_adapter(const std::string& name);
void register_adapter(AdapterEntry entry);
// "memory, redis, ..." for error messages.
std::string adapter_names();

}  // namespace lockstep
