#pragma once
// Redlock in both worlds: N independent Redis nodes (3, 5 or 7: option `nodes`), and per client
// one connection to each node bundled in a fan-out, and one adapter.
//
// Sim: N simulated redis-servers ("redis-0".."redis-N-1"); their keyspace events on lock keys are
// the history's lease facts (services/redis/backend/lease_events.h), one server each, and quorum() =
// N/2+1, so lease_exclusion is violated exactly when two owners hold live leases on majorities at
// once. Per-node faults: crash and restart (persistence: option), pause, clock jump, partition of
// one client from one node; drift and partition apply to every node. Real: N redis-server processes
// the backend starts on loopback and always stops; each client a PollingFanout, through one TCP
// proxy per node when the scenario cuts clients off from nodes; clock jumps through libfaketime
// when the scenario jumps clocks (jump_ms); pause by SIGSTOP; crash by SIGKILL and restart. Real
// servers report no leases: the runner derives them from the clients, one derived lease per lock,
// so the real quorum() is 1.
#include <functional>
#include <memory>
#include <vector>

#include "harness/backend.h"
#include "lockstep/adapter.h"
#include "lockstep/clock.h"
#include "lockstep/random.h"
#include "services/redlock/adapter/redlock_settings.h"
#include "services/redlock/client/redis_fanout.h"

namespace lockstep {

// Builds the adapter a client uses over its fan-out (the production one, or a known-bad one).
struct RedlockAdapterParts {
  RedisFanout& fanout;
  Clock& clock;
  Random& random;
  RedlockSettings settings;
};
using RedlockAdapterFactory =
    std::function<std::unique_ptr<LockAdapter>(RedlockAdapterParts& parts)>;

// Adapter options every Redlock-backed adapter takes (`--set`): nodes, persistence,
// request_timeout_ms, drift_factor_ppm, drift_constant_ms, max_hold_time_ms.
std::vector<OptionSpec> redlock_backend_options();
// The Redlock settings those options give.
RedlockSettings redlock_settings_from(const Options& options);

std::unique_ptr<Backend> make_redlock_sim_backend(BackendEnv& env,
                                                  RedlockAdapterFactory make_adapter);
// Throws real::ServerUnavailable when redis-server (or, for clock jumps, libfaketime) is missing.
std::unique_ptr<Backend> make_redlock_real_backend(BackendEnv& env,
                                                   RedlockAdapterFactory make_adapter);
// Whether a scenario's options cut clients off from some nodes (partition, and the Redlock
// scenarios whose clients each reach only some nodes): then each client gets a proxy per node;
// otherwise clients connect directly, so a storm of clients does not start a proxy per node each.
// Shared by the real backends over N redis-servers (redlock and the ext: Redlock libraries).
bool cuts_clients_off(const Options& options);

RedlockAdapterFactory production_redlock_adapter();

// What Redlock claims under these options: its drift allowance covers a client running slow and
// a node running fast together (each gets half); a node may come back empty only after the
// longest lease it granted, unless it persists every write.
// (AdapterEntry::refine)
AdapterTraits redlock_traits(AdapterTraits declared, const Options& options);

// Redlock: no fencing token; validity is the TTL less the time spent acquiring and the drift
// allowance. N independent Redis nodes over the simulated network, no replicas (a node's crash is
// Redlock's own failure mode, produced by crash-restart).
inline constexpr AdapterTraits kRedlockTraits{
    .servers = ServerLayout::independent_nodes,
    .sim_faults = {.network = true,
                   .server_clock = true,
                   .server_clock_jump = true,
                   .server_restart = true,
                   .server_pause = true,
                   .slow_servers = true,
                   .connection_resets = true},
    // As redlock_traits() makes it of the default drift allowance (drift_factor_ppm=1000).
    .envelope = {.client_slow_ppm_max = 500,
                 .server_fast_ppm_max = 500,
                 .server_restart = RestartRule::after_ttl},
    .validity = ValidityRule::ttl_minus_elapsed_and_drift};

}  // namespace lockstep
