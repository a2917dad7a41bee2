#pragma once
// The Redis lock in the simulator: a simulated redis-server (optionally with an asynchronous
// replica for failover), one simulated connection and adapter per client, and the translation of
// the server's keyspace events on lock keys into the history's grant / extend / revoke events.
//
// Lease facts come from the server, not from the clients: a SET of a lock key is a grant for its
// PX (no PX: a lease that never ends), a PEXPIRE an extend, a DEL a revoke by whoever sent it;
// lazy expiry ends nothing (the promise simply runs out). Writes a replica applies by replication
// are not grants. The lock key of resource "k" is the adapter's key_prefix + "{k}" (a hash tag).
#include <functional>
#include <memory>
#include <vector>

#include "lockstep/adapter.h"
#include "lockstep/adapter_traits.h"
#include "lockstep/client_seams.h"
#include "lockstep/options.h"
#include "lockstep/redis_connection.h"
#include "lockstep/registry.h"

namespace lockstep {

// Builds the adapter a client uses over its connection (the production one, or a known-bad one).
using RedisAdapterFactory =
    std::function<std::unique_ptr<LockAdapter>(RedisConnection& connection)>;

// The same, for a lock that needs its client's clock or random source (harness/client_seams.h):
// the simulated ones in the simulator, so the lock's time and randomness stay under its control.
using RedisClientFactory =
    std::function<std::unique_ptr<LockAdapter>(RedisConnection& connection, ClientSeams seams)>;
// Adapter options every Redis-backed adapter takes (`--set`).
std::vector<OptionSpec> redis_backend_options();

std::unique_ptr<Backend> make_redis_sim_backend(BackendEnv& env, RedisAdapterFactory make_adapter);
std::unique_ptr<Backend> make_redis_sim_backend(BackendEnv& env, RedisClientFactory make_adapter);
// The real world: a redis-server the backend starts on loopback (and a replica when asked), one
// TCP proxy and hiredis connection per client (so one client can be partitioned), clock drift by
// libfaketime from the server's start. Throws real::ServerUnavailable when redis-server is missing.
std::unique_ptr<Backend> make_redis_real_backend(BackendEnv& env, RedisAdapterFactory make_adapter);
std::unique_ptr<Backend> make_redis_real_backend(BackendEnv& env, RedisClientFactory make_adapter);
// A factory that needs no seams, as one that ignores them.
RedisClientFactory with_seams(RedisAdapterFactory make_adapter);

// The production adapter's factory.
RedisAdapterFactory production_redis_adapter();

// The Redis lock: owner-checked by Lua scripts, a fencing counter per key. A Redis node over the
// simulated network, with an asynchronous replica to fail over to (replicas=1).
inline constexpr AdapterTraits kRedisTraits{.servers = ServerLayout::one_server,
                                            .sim_faults = {.network = true,
                                                           .server_clock = true,
                                                           .server_clock_jump = true,
                                                           .failover = true,
                                                           .server_restart = true,
                                                           .server_pause = true,
                                                           .slow_servers = true,
                                                           .connection_resets = true},
                                            .tokens = TokenKind::monotonic};

}  // namespace lockstep
