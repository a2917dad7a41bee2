#pragma once
// The ext adapters in the simulator (`ext:NAME --world sim`): each client's driver process is
// co-simulated (services/ext/PROTOCOL.md, version 2). The driver is a real process, but it owns no time,
// no sockets and no randomness: the backend hands it the client's simulated clocks, carries its
// client library's bytes over the simulated network (sim/byte_stream.h) to simulated Redis nodes'
// RESP fronts (services/redis/sim/sim_redis_stream.h) or a simulated PostgreSQL server's wire front
// (services/postgres/sim/pg_wire_front.h), and seeds it from the run's seed and the client. Every line it
// writes depends only on the lines it was sent, so the run stays a function of
// (scenario, seed, build).
//
// How one call goes: the client's fiber sends the request in one exchange; the driver's bytes
// leave as network messages, their replies come back as deliveries on the client's node, each an
// exchange, and so do the driver's timers (a `tick` when the client's monotonic clock reaches the
// deadline the driver named); the fiber is woken by the exchange that carries the response. So a
// client pause (the node's deliveries wait) stops the library whole, as SIGSTOP would, and a
// crash of the client ends its driver's run (killed, or reset for a later client while drivers are
// kept warm: services/ext/driver/sim_driver_pool.h). A request that gets no answer within ext_deadline_ms of
// simulated time, or a driver that dies, hangs or writes a malformed line, ends the run as an
// error (ext::SimDriverFailed), never a lock result.
//
// A driver may be shared by several clients, as threads of one process on a node of its own:
// ext:locco-memory's one driver (its memory is the store), and the few drivers a run with many
// clients shares. Such runs judge leases from the clients (records_leases() is false): a shared
// connection's grant cannot be told whose.
//
// Before the run each driver is started and connected: its connection handshake (ioredis: CLIENT
// SETINFO, INFO) runs against the node's front at that instant without the network.
//
// Leases come from the simulated servers' keyspace (services/redis/backend/lease_events.h), any key
// with a TTL. The library's lock value is its own (a random token the harness learns from the
// response); so that a lease and the acquire that got it name the same value, the backend names a
// grant after the handle of the acquire its client has in flight, and later events on that value
// the same way.
//
// Over PostgreSQL (advisory-lock): one simulated server, with a streaming replica to fail over to
// when replicas=1 (new connections reach the primary; sessions do not move). Each client's kernel
// is a node of its own ("NAME-host"): it takes the server's bytes while the process is paused and
// answers keepalive probes; a partition cuts it off with the client. When the client's program
// ends or its process dies, its kernel closes its connections (a FIN: the sessions end). The
// server reports its lease facts itself (services/postgres/backend/pg_lease_event.h), each named
// after the acquire whose connection took the key: advisory-lock opens a session per lock inside
// the acquire's call, so a connection belongs to the acquire it was opened for. A session lock has
// no TTL: its validity is the session's (validity_end_us).
//
// Over etcd (etcd3): a simulated cluster of `members`, as lockstep's etcd backend has, whose
// members answer gRPC (services/etcd/sim/etcd_grpc_front.h). Each client's kernel is a node of its
// own, as for PostgreSQL: when the client's program ends or its process dies, its kernel closes
// its connections (a FIN: the member cancels its calls; its lease runs out). The cluster reports
// its lease facts itself (services/etcd/backend/lease_facts.h), told which acquire each client has
// in flight on each key: a key put under lockstep/KEY/ with a client's lease is that acquire's.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "harness/backend.h"

namespace lockstep {

struct ExtSimLibrary {
  std::string adapter;      // "ext:locco-redis"
  std::string lib;          // services/ext/node/libs/LIB.js
  bool over_nodes = false;  // Redlock: `nodes` independent simulated Redis nodes
  bool in_memory = false;   // no server: one driver shared by every client holds the store
  // Over PostgreSQL: one simulated server (a replica to fail over to with replicas=1), reached by
  // the driver's node-postgres over services/postgres/sim/pg_wire_front.h; `--postgres sim:0`.
  bool postgres = false;
  // Over etcd (etcd3): a simulated cluster of `members` (services/etcd/sim/etcd_cluster.h), each
  // member reached by the driver's @grpc/grpc-js over services/etcd/sim/etcd_grpc_front.h;
  // `--etcd sim:0,sim:1,...`.
  bool etcd = false;
  // A user's driver (`--adapter ext --set driver=...`): its program and arguments, to which
  // `--sim --redis sim:0` is appended. Empty: lockstep's Node driver for `lib`.
  std::vector<std::string> command;
};

// Throws real::ServerUnavailable (exit 3) when node 20 or the drivers' packages are missing.
std::unique_ptr<Backend> make_ext_sim_backend(BackendEnv& env, const ExtSimLibrary& library);

// What the simulated backend can do (the ext adapters' sim_faults): one Redis, with a replica to
// fail over to (replicas=1), or a Redlock library's independent nodes (no replicas). Both reset a
// client's connections (the `reset` fault): its driver's streams, those of a driver that several
// clients share included (services/redis/sim/sim_redis_stream.h).
inline constexpr FaultCapabilities kExtSimFaults{.network = true,
                                                 .server_clock = true,
                                                 .server_clock_jump = true,
                                                 .failover = true,
                                                 .server_restart = true,
                                                 .server_pause = true,
                                                 .connection_resets = true};
inline constexpr FaultCapabilities kExtSimNodesFaults{.network = true,
                                                      .server_clock = true,
                                                      .server_clock_jump = true,
                                                      .failover = false,
                                                      .server_restart = true,
                                                      .server_pause = true,
                                                      .connection_resets = true};
// An in-memory library's: its shared driver's node has a clock, and nothing else to break (no
// connection to reset either).
inline constexpr FaultCapabilities kExtSimSharedFaults{.server_clock = true,
                                                       .server_clock_jump = true};

}  // namespace lockstep
