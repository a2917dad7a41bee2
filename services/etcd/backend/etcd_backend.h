#pragma once
// The etcd locks in both worlds.
//
// Sim: a simulated cluster of `members` (services/etcd/sim), one simulated connection and adapter
// per client (client i starts at member i mod members and moves on to the next after a timeout,
// as clientv3 goes through its endpoints), and the cluster's lease facts (lease_facts.h).
// Real: Debian's etcd started on loopback as the same number of members, each client reaching
// every member through a TCP proxy of its own (so one client can be cut off). A real server
// reports no leases: the runner derives them from the clients.
//
// Faults (both worlds unless said): the leader dies and another is elected (failover), a member
// crashes, restarts (its WAL kept), stops (SIGSTOP) for a while; a client is cut off from every
// member or from one. Sim only: server clock drift and jumps (libfaketime cannot reach the Go
// binary), latency and loss.
#include <functional>
#include <memory>
#include <vector>

#include "harness/backend.h"
#include "lockstep/adapter.h"
#include "lockstep/clock.h"
#include "services/etcd/client/etcd_connection.h"

namespace lockstep {

// Builds the adapter a client uses over its connection and clock (production or known-bad).
using EtcdAdapterFactory = std::function<std::unique_ptr<LockAdapter>(
    EtcdConnection& connection, Clock& clock, const Options& options)>;

// Options every etcd adapter takes (`--set`): members, request_timeout_ms, heartbeat_ms,
// election_timeout_ms.
std::vector<OptionSpec> etcd_backend_options();
// And the Lock RPC adapter's own: lease_check, lock_wait_ms.
std::vector<OptionSpec> etcd_lock_options();

std::unique_ptr<Backend> make_etcd_sim_backend(BackendEnv& env, EtcdAdapterFactory make_adapter);
// Throws real::ServerUnavailable when etcd is not installed.
std::unique_ptr<Backend> make_etcd_real_backend(BackendEnv& env, EtcdAdapterFactory make_adapter);

// `server` as a member of a cluster of `members`: WorldUnsupported (a scenario asked for a member
// the cluster does not have) otherwise.
int etcd_member(int server, int members);

EtcdAdapterFactory etcd_recipe_adapter();
EtcdAdapterFactory etcd_lock_adapter();

// What the etcd locks are. A Raft cluster: a write is acknowledged once a majority has it, so a
// leader change keeps every grant (failover in the envelope), and a crashed member keeps its WAL
// (restart: always). Leases are timed on the leader's monotonic clock (server_wall_clock: a jump
// ends nothing; a fast clock does, no drift allowance) and last at least their TTL (whole seconds,
// rounded up). Fencing tokens are create revisions. An acquire that waits its turn (the recipe's
// watch on its predecessor, the Lock RPC's queue) holds only if its lease outlived the wait: the
// recipe checks its key after the wait, and the Lock RPC claims as much ("a key that exists so
// long as the lock is held"), which etcd 3.4 breaks (etcd-io/etcd#11456: a finding).
// A paused server is outside the envelope: etcd 3.4 before 3.4.28 (Debian ships 3.4.23) lets a
// leader that was paused, and deposed meanwhile, renew a keepalive from its own lessor before it
// hears of the new term, and the new leader then expires that lease on time and grants the key
// again (etcd-io/etcd#15247; LeaseRenew checks leadership since etcd-io/etcd#16822). No client
// can tell such a renewal from a real one.
inline constexpr AdapterTraits kEtcdTraits{
    .servers = ServerLayout::replica_set,
    .sim_faults = {.network = true,
                   .server_clock = true,
                   .server_clock_jump = true,
                   .failover = true,
                   .server_restart = true,
                   .server_pause = true,
                   .connection_resets = true},
    .envelope = {.server_wall_clock = true,
                 .failover = true,
                 .server_restart = RestartRule::always,
                 .server_pause = false},
    .tokens = TokenKind::monotonic,
    .server_expiry = ExpiryClock::monotonic,
    .queued_grant = QueuedGrant::lease_checked,
};

// What lockstep has shown each etcd lock to do where its traits let a cell expect otherwise
// (etcd_findings.cc).
// library: a lock of another's making on etcd's leases (ext:etcd3), which shares the leases'
// granularity and has no extend.
enum class EtcdLockKind { recipe, lock_rpc, smallest_key, library };
std::vector<Finding> etcd_findings(EtcdLockKind kind);

}  // namespace lockstep
