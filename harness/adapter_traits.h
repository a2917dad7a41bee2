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
// backend does. The faults the adapter claims to survive (its FaultEnvelope, history/fault.h) are
// part of the same declaration: a violation is excused only by a fault outside it.
#include <optional>
#include <string_view>

#include "history/fault.h"

namespace lockstep {

// Which workloads apply: TTL leases, or an in-process keyed lock (shared/exclusive, or FIFO).
enum class LockFamily { lease, keyed_rw, keyed_fifo };
// "lease", "keyed-rw", "keyed-fifo": the spelling of swarm specs in reports.
std::string_view to_string(LockFamily family);
std::optional<LockFamily> lock_family_from_string(std::string_view name);

// What the clients talk to. Scenarios written for one kind of server (a Redis primary with a
// replica, N independent Redlock nodes, a Mongo replica set) apply by it; `custom` is anything else.
enum class BackendKind { in_process, redis, redlock, mongo, custom };

// The fencing tokens it hands out: none, strictly increasing per key in grant order, or random
// while claiming to be monotonic (a known-bad lie the fencing checker must catch).
enum class TokenKind { none, monotonic, random };

// How a release or extend makes sure it acts on its own lock: in one atomic step (compare and
// delete), by a check and then a second call (a race), or not at all.
enum class OwnerCheck { atomic, check_then_act, none };

// How long an acquire reports its lock valid: the TTL from when the request was sent; Redlock's
// TTL less the time spent acquiring and the clock-drift allowance; or (known-bad Redlocks) the TTL
// less the drift allowance only, or that validity counted from the start, which subtracts the time
// spent twice; or (known-bad) no local validity at all: held until an extension fails, so an
// auto-extending holder learns of a loss only when the failed extension's timeout ends.
enum class ValidityRule {
  ttl,
  ttl_minus_elapsed_and_drift,
  ttl_ignoring_elapsed,
  ttl_minus_elapsed_twice,
  until_extension_fails
};

// Which clock its servers expire leases by: the wall clock (redis-server's absolute expiry times,
// mongod's $$NOW; a jump forward ends leases early) or a monotonic one (the in-process store).
enum class ExpiryClock { wall, monotonic };

struct FaultCapabilities {
  bool network = false;            // latency, loss and partitions between clients and servers
  bool server_clock = false;       // the servers' clocks drift
  bool server_clock_jump = false;  // a server's wall clock jumps (jump_server_clock)
  bool failover = false;           // a primary dies and a replica is promoted
};

struct AdapterTraits {
  LockFamily family = LockFamily::lease;
  BackendKind backend = BackendKind::custom;
  FaultCapabilities sim_faults;  // what its simulated backend can do (nothing: no sim world)
  FaultEnvelope envelope;        // what it claims to survive (Backend::envelope refines by options)
  TokenKind tokens = TokenKind::none;
  OwnerCheck release = OwnerCheck::atomic;
  OwnerCheck extend = OwnerCheck::atomic;
  bool extends =
      true;  // false: no extend call (a library that refreshes on its own timer, or none)
  bool expiry_with_grant = true;  // false: the lock is written, then given its TTL by a 2nd call
  bool exclusive_grant = true;    // false: two acquires racing for a free key can both win
  ValidityRule validity = ValidityRule::ttl;
  ExpiryClock server_expiry = ExpiryClock::wall;
  bool majority_quorum = true;          // Redlock: false counts N/2 grants as a majority
  bool releases_partial_grants = true;  // Redlock: a failed attempt releases what it was granted
  bool writers_first = true;            // keyed-rw: readers never pass a queued writer
  bool wakes_waiters = true;  // keyed-rw: false: the last holder's release leaves a queued writer
                              // parked for good (a lost wakeup)
  bool clear_keeps_exclusion = true;  // fifo: false: clear() drops the running holders, so a new
                                      // caller runs beside one
};

}  // namespace lockstep
