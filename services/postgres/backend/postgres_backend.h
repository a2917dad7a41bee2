#pragma once
// The PostgreSQL advisory locks in both worlds.
//
// Simulator: a simulated PostgreSQL 15 server (postgres-0), with a streaming replica to fail over
// to when replicas=1 (postgres-1), each client on a host node of its own (so its process's pause
// and crash do not stop its kernel: services/postgres/sim/sim_pg_connection.h). The sequence
// `lockstep_fencing` exists from the start. The server reports lease facts itself: a grant when a
// session comes to hold a key, promised "until revoked" (a session lock has no expiry), and a
// revoke when it holds it no more (unlock, COMMIT, the session's end: the client's close or death,
// keepalive, termination, a crash or failover), named after the lock operation whose statement
// took it (the client, its owner value and key), and by the replication group, `postgres`.
//
// Real world: a private cluster (services/postgres/real/pg_server.h), one TCP proxy and connector
// per client (so one client can be cut off), the client's sessions aborted when it crashes (as its
// process's death would close them), end_session through an administrator's
// pg_terminate_backend. A proxy keeps the server's side of a connection alive through a
// partition, so there the server never ends a partitioned client's session. No replica: a
// failover is sim-only. Lease facts as the backend knows them (real_leases.h).
#include <functional>
#include <memory>
#include <vector>

#include "harness/backend.h"
#include "lockstep/adapter.h"
#include "services/postgres/adapter/advisory_adapter.h"
#include "services/postgres/client/pg_connection.h"

namespace lockstep {

// Builds the adapter a client uses over its connector and clock (the production one or a
// known-bad one), with the adapter options in force.
using PostgresAdapterFactory = std::function<std::unique_ptr<LockAdapter>(
    PgConnector& connector, Clock& clock, const Options& options)>;

// The sequence that issues fencing tokens (fencing_token=sequence).
inline constexpr const char* kFencingSequence = "lockstep_fencing";

// Adapter options every PostgreSQL adapter takes (`--set`); the blocking one adds lock_wait_ms.
std::vector<OptionSpec> postgres_backend_options(AdvisoryMode mode);
// The adapter options a production adapter reads.
AdvisoryAdapterOptions advisory_options(PgConnector& connector, Clock& clock, AdvisoryMode mode,
                                        const Options& options);
PostgresAdapterFactory production_postgres_adapter(AdvisoryMode mode);

struct PostgresSimOptions {
  // Every client's statements run on one pooled session (a known-bad deployment).
  bool one_shared_session = false;
};
std::unique_ptr<Backend> make_postgres_sim_backend(BackendEnv& env, PostgresAdapterFactory factory,
                                                   PostgresSimOptions sim_options = {});
// The production adapter of `mode` against a private cluster. Throws real::ServerUnavailable when
// PostgreSQL 15 is missing, WorldUnsupported for a replica (streaming replication is sim-only).
std::unique_ptr<Backend> make_postgres_real_backend(BackendEnv& env, AdvisoryMode mode);

// A PostgreSQL advisory lock: a session lock without expiry on one server, whose streaming replica
// can be promoted. Its envelope: network faults (its validity stops a cut-off holder before the
// server's keepalive can end its session) and server pauses; no connection resets (a reset ends
// the session and its locks at once, and the holder hears of it only at its next statement), no
// failover (advisory locks are not replicated), no restart (they are volatile); a server clock
// that jumps ends nothing.
inline constexpr AdapterTraits kPostgresTraits{
    .servers = ServerLayout::one_server,
    .sim_faults = {.network = true,
                   .server_clock = true,
                   .server_clock_jump = true,
                   .failover = true,
                   .server_restart = true,
                   .server_pause = true,
                   .connection_resets = true},
    .envelope = {.server_wall_clock = true, .connection_resets = false},
    .tokens = TokenKind::none,
    .server_expiry = ExpiryClock::none,
    .concurrent_calls = false};

// The declared traits as the options configure them: tokens from a sequence are monotonic.
AdapterTraits refine_postgres_traits(AdapterTraits declared, const Options& options);

}  // namespace lockstep
