#pragma once
// Lock libraries written in other languages as lockstep adapters (`ext:NAME`), driven as black
// boxes through the ext process protocol (services/ext/PROTOCOL.md), in the real world (the
// simulator's co-simulated drivers: ext_sim.h).
//
// How a library fits LockAdapter and Locker:
// - One LockAdapter call is one library call: the driver configures the library to make a single
//   attempt, and lockstep's Locker retries contention with the scenario's settings. So retries,
//   attempts and their timing are the scenario's, and every attempt is in the history.
// - The library picks its own lock value (its `token`); lockstep's LockSpec.value is only the
//   handle that names the acquisition in the driver. Owner checks are the library's own.
// - Statuses map one to one (ok, contended, not_owner). What a library cannot tell or does not
//   offer (a release that does not say whether it removed the lock, extend or is_locked missing)
//   is a backend error with that message, never a success. A driver that dies, hangs past its
//   deadline or writes a malformed line throws ext::DriverFailed out of the client (not a
//   LockError), so the run ends as an error with the driver's stderr, never as a lock result.
// - Fencing: a user's driver declares its tokens with `--set tokens=monotonic` (default none),
//   data known before it starts, as every lock's traits are; its `ready` line must say the same
//   (`random` counts as none) or it broke the protocol's `tokens` rule. Monotonic tokens go to the
//   judge with each acquire. None of the npm libraries issues fencing tokens.
// - Leases: the Redis servers are real and report nothing (records_leases false): the runner
//   derives them from the clients (client_side_leases.h), which never overstates a violation.
// - Pause and crash: each client gets its own driver process, attached to the client's node, so a
//   client's pause SIGSTOPs its driver for the pause (timers, refreshes, sockets: everything stops)
//   and its crash SIGKILLs it. ext:locco-memory keeps its locks in the driver's memory, so all its
//   clients share one driver; there a pause is the client's own thread stopping (the library runs
//   nothing per client in the background) and a crash leaves its locks to expire. Scenarios with
//   more than kDriverProcessesMax clients (retry-storm) share that many drivers round-robin,
//   without pause hooks (they pause nobody).
// - Servers: one redis-server, or `nodes` of them for the Redlock libraries, started by the
//   backend; per-client TCP proxies when the scenario cuts clients off from nodes; crash and
//   restart by SIGKILL and restart, pause by SIGSTOP.
// - advisory-lock: a private PostgreSQL cluster (services/postgres/real/pg_server.h), a proxy per
//   client always (partitions, resets), each client's sessions named after it (application_name)
//   so that end_session can terminate them. A session lock ends with its session, often long
//   before any TTL, so its leases are the backend's record (RealPgLeases: a grant when an acquire
//   returns held, a revoke when the unlock is sent or the backend ends the sessions: the client's
//   death, a reset, a termination, a server crash), never derived from the clients' TTL.
// - etcd3: Debian's etcd as `members` members on loopback (services/etcd/real/etcd_cluster.h),
//   the driver given every member (`--etcd`), through per-client proxies when the scenario cuts
//   clients off; failover crashes the leader. A real etcd reports no leases: they are derived
//   from the clients, as for lockstep's own etcd locks.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/backend.h"
#include "lockstep/adapter.h"
#include "services/ext/driver/protocol.h"

namespace lockstep {

inline constexpr int kDriverProcessesMax = 16;

// The fencing tokens the run declares for a driver (the `tokens` option; none without it), and
// why a driver's `ready` line breaks the protocol's `tokens` rule against it (empty: it does not).
FencingSupport declared_fencing(const Options& options);
std::string token_promise_broken(FencingSupport declared, const ext::Ready& ready);
// A monotonic token as a driver must send it (a decimal integer), or nullopt; and the `tokens`
// rule a token that is not one breaks.
std::optional<uint64_t> decimal_token(std::string_view token);
std::string token_not_decimal(std::string_view token);

// How long a session lock can be counted on from its call, when its library sets no keepalive
// (advisory-lock): the shortest time in which a server with Linux's keepalive defaults ends the
// session of a client it cannot hear (advisory_session_loss_bound_us). It has no TTL.
int64_t session_lock_validity_us();

// The registry entries of every ext adapter (registry.cc appends them).
std::vector<AdapterEntry> ext_adapter_entries();
// Every ext adapter over Redis or in memory (leases with expiry; not advisory-lock's session lock
// nor etcd3's lease on an etcd cluster), and those that run Redlock over N nodes.
std::vector<std::string> ext_family();
std::vector<std::string> ext_redlock_family();

}  // namespace lockstep
