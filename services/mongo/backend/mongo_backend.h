#pragma once
// The Mongo lock in both worlds.
//
// Sim: a simulated replica set of three mongods (services/mongo/sim), one simulated connection and adapter
// per client, and the translation of the primary's writes to the lock collection into the
// history's grant / extend / revoke events (lease facts come from the server, as for Redis; writes
// a secondary applies by replication and writes lost to a rollback are not events).
// Real: a mongod the harness starts on loopback when one is on PATH, or the deployment at
// LOCKSTEP_MONGO_URI; otherwise real::ServerUnavailable ("no mongod", with how to provide one).
#include <functional>
#include <memory>
#include <vector>

#include "harness/backend.h"
#include "lockstep/adapter.h"
#include "lockstep/clock.h"
#include "services/mongo/client/mongo_connection.h"

namespace lockstep {

// Builds the adapter a client uses over its connection and clock (production or known-bad).
using MongoAdapterFactory = std::function<std::unique_ptr<LockAdapter>(
    MongoConnection& connection, Clock& clock, const Options& options)>;

// Adapter options every Mongo-backed adapter takes (`--set`): time_source, write_concern,
// read_majority, command_timeout_ms, and the simulated replica set's replication_delay_ms,
// election_timeout_ms and ttl_monitor_period_ms.
std::vector<OptionSpec> mongo_backend_options();

std::unique_ptr<Backend> make_mongo_sim_backend(BackendEnv& env, MongoAdapterFactory make_adapter);
std::unique_ptr<Backend> make_mongo_real_backend(BackendEnv& env, MongoAdapterFactory make_adapter);

// AdapterEntry::check_options of every Mongo-backed adapter: under w:majority the command timeout
// outlasts the wtimeout (mongo_adapter.h), else OptionError.
void check_mongo_options(const Options& options);

// The production adapter's factory: MongoAdapterOptions from the options above.
MongoAdapterFactory production_mongo_adapter();

// What the Mongo lock is under these options (AdapterEntry::refine): a failover keeps every grant
// only with a majority write concern; client-time expiry (time_source=client) trusts the wall clock
// of the client that takes over.
AdapterTraits mongo_traits(AdapterTraits declared, const Options& options);

// The Mongo lock: a unique index on key, owner-checked release and extend, a fencing counter per
// key. A replica set of three over the simulated network, whose primary can be replaced by an
// election.
inline constexpr AdapterTraits kMongoTraits{.servers = ServerLayout::replica_set,
                                            .sim_faults = {.network = true,
                                                           .server_clock = true,
                                                           .server_clock_jump = true,
                                                           .failover = true,
                                                           .server_restart = true,
                                                           .server_pause = true,
                                                           .connection_resets = true},
                                            .envelope = {.failover = true},
                                            .tokens = TokenKind::monotonic};

}  // namespace lockstep
