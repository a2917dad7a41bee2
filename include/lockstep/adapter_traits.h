#pragma once
// What an adapter is, declared beside its registry entry (AdapterEntry::traits). Scenarios choose
// the adapters they apply to, and compute what they expect of each, from these traits: never from
// adapter names. So a user's lock joins every scenario its traits fit, judged by what it claims.
//
// A known-bad adapter is a correct one with one thing wrong, and that one thing is a trait here
// (a release without owner check, N/2 counted as a majority, ...): its expected breakage follows
// from the declaration beside it, the same way a correct lock's safety does.
//
// The faults a backend can produce (FaultCapabilities) are the same kind of declared data: a sweep
// draws only those, and tests/backend_capabilities_test.cc holds each declaration to what the
// backend does. The faults the adapter claims to survive (its FaultEnvelope, include/lockstep/fault.h) are
// part of the same declaration: a violation is excused only by a fault outside it.
#include <optional>
#include <string_view>

#include "lockstep/fault.h"

namespace lockstep {

// Which workloads apply: TTL leases, or an in-process keyed lock (shared/exclusive, or FIFO).
enum class LockFamily { lease, keyed_rw, keyed_fifo };
// "lease", "keyed-rw", "keyed-fifo": the spelling of swarm specs in reports.
std::string_view to_string(LockFamily family);
std::optional<LockFamily> lock_family_from_string(std::string_view name);

// What its servers are, by shape, never by product: scenarios written about one shape apply by it.
//   in_process         the lock's state lives in the clients' process (or one store reached
//                      without a network)
//   one_server         a single server, which may replicate to a standby that takes over
//   independent_nodes  N servers that know nothing of each other; a quorum of their grants is the
//                      lock (Redlock)
//   replica_set        servers that elect a primary among themselves and replicate to it; what a
//                      failover keeps depends on the write concern
//   other              none of these: no scenario written for one shape applies
enum class ServerLayout { in_process, one_server, independent_nodes, replica_set, other };

// The fencing tokens it hands out: none, strictly increasing per key in grant order, or random
// while claiming to be monotonic (a known-bad lie the fencing checker must catch). The lock's
// one declaration of its tokens: its LockAdapter::fencing() must be `monotonic` exactly when this is
// not `none` (a run refuses an adapter whose two disagree, exit 2, before anything is judged).
enum class TokenKind { none, monotonic, random };
std::string_view to_string(TokenKind tokens);

// How a release or extend makes sure it acts on its own lock: in one atomic step (compare and
// delete), by a check and then a second call (a race), or not at all.
enum class OwnerCheck { atomic, check_then_act, none };

// How long an acquire reports its lock valid: the TTL from when the request was sent; Redlock's
// TTL less the time spent acquiring and the clock-drift allowance; or (known-bad Redlocks) the TTL
// less the drift allowance only, or that validity counted from the start, which subtracts the time
// spent twice; or (known-bad) no local validity at all: held until an extension fails, so an
// auto-extending holder learns of a loss only when the failed extension's timeout ends; or
// (known-bad) a validity that every extend moves on, also one the server refused or whose reply
// never came, so an extend returns with a validity no lease backs.
enum class ValidityRule {
  ttl,
  ttl_minus_elapsed_and_drift,
  ttl_ignoring_elapsed,
  ttl_minus_elapsed_twice,
  until_extension_fails,
  extends_even_when_refused
};

// Which clock decides when a lease has expired: the servers' wall clock (redis-server's absolute
// expiry times, mongod's $$NOW; a jump forward ends leases early), a server's monotonic clock (the
// in-process store), or the wall clock of the client that takes over (a deadline written with the
// lock and compared by the next client: a client whose clock runs ahead takes a live lock). Or
// none: the lease never expires; it lasts as long as its holder's session (a PostgreSQL advisory
// lock), and the server ends it only with the session (the holder's unlock, close or death, its
// connection found dead, its termination, a crash or failover), so a paused holder keeps it.
// Or client_value: the servers never expire the record; the lease lives in its value, written as
// "OWNER:DEADLINE_MS" with the deadline on the writing client's wall clock (Unix ms), and a client
// takes the lock over only once its own wall clock is past the deadline written there (an
// owner:deadline lock with GET/SET or a script, on a store without key TTLs). Its backend records
// each such write as the lease it promises: from when the server applied it until the writer's
// clock reads the deadline (so a taker whose clock runs ahead of the writer's takes a live lease,
// as with client_wall), and the servers' clocks decide nothing.
enum class ExpiryClock { wall, monotonic, client_wall, none, client_value };

// How an acquire that waits its turn in a queue (etcd's Lock RPC, the etcd recipe's wait for its
// predecessor) ends: there is no such wait (a contender retries), it checks that its lease
// outlived the wait, or it trusts the turn it was given (etcd 3.4's Lock returned a key whose
// lease had expired while it waited: etcd-io/etcd#11456).
enum class QueuedGrant { none, lease_checked, trusted };

struct FaultCapabilities {
  bool network = false;            // latency, loss and partitions between clients and servers
  bool server_clock = false;       // the servers' clocks drift
  bool server_clock_jump = false;  // a server's wall clock jumps (jump_server_clock)
  bool failover = false;           // a primary dies and a replica is promoted
  bool server_restart = false;     // a server dies and comes back (crash_server, restart_server)
  bool server_pause = false;       // a server stops for a while (pause_server)
  bool slow_servers = false;       // a server slower to reach than the others (slow_server)
  bool connection_resets = false;  // a client's connections are reset (reset_connections)
};

struct AdapterTraits {
  LockFamily family = LockFamily::lease;
  ServerLayout servers = ServerLayout::other;
  FaultCapabilities sim_faults{};  // what its simulated backend can do (nothing: no sim world)
  FaultEnvelope envelope{};  // what it claims to survive (Backend::envelope refines by options)
  TokenKind tokens = TokenKind::none;
  OwnerCheck release = OwnerCheck::atomic;
  OwnerCheck extend = OwnerCheck::atomic;
  bool extends =
      true;  // false: no extend call (a library that refreshes on its own timer, or none)
  bool expiry_with_grant = true;  // false: the lock is written, then given its TTL by a 2nd call
  bool exclusive_grant = true;    // false: two acquires racing for a free key can both win
  ValidityRule validity = ValidityRule::ttl;
  ExpiryClock server_expiry = ExpiryClock::wall;
  QueuedGrant queued_grant = QueuedGrant::none;
  bool majority_quorum = true;          // Redlock: false counts N/2 grants as a majority
  bool releases_partial_grants = true;  // Redlock: a failed attempt releases what it was granted
  bool writers_first = true;            // keyed-rw: readers never pass a queued writer
  bool wakes_waiters = true;  // keyed-rw: false: the last holder's release leaves a queued writer
                              // parked for good (a lost wakeup)
  bool clear_keeps_exclusion = true;  // fifo: false: clear() drops the running holders, so a new
                                      // caller runs beside one
  // One client may run operations on different keys at once (threads of one program sharing the
  // adapter and its connections). False for a lock whose connection is one session that runs one
  // statement at a time and whose transaction is the session's (PostgreSQL): sweeps then draw no
  // concurrent client for it.
  bool concurrent_calls = true;
  // The lock answers to lockstep's adapter contract (adapter.h): an error says the operation had
  // no effect, and a write that may have been applied is an unknown outcome; error_not_applied
  // judges it. false: a whole library behind a driver, whose errors claim nothing of the kind.
  bool errors_mean_not_applied = true;
  // false: a write sent whole whose reply never came (a timeout, a reset after the request) is
  // reported as an error instead of as an unknown outcome, against the contract.
  bool unknown_outcomes_reported = true;
  // false: work the client runs beside its caller (a renewal watchdog) sends over the caller's
  // connection without taking turns with the caller's calls, so a reply can reach the wrong one.
  bool calls_take_turns = true;
};

}  // namespace lockstep
