#pragma once
// The lease facts a simulated PostgreSQL server reports (PgLockObserver), as history events: a
// grant when a session comes to hold a key, promised "until revoked" (a session lock has no
// expiry: the lease is given the simulator's time bound, so it ends only by its revoke), and a
// revoke when it holds it no more (unlock, COMMIT, the session's end), named after the lock
// operation whose statement took it (its tag: the client, the owner value and the key) and by
// the replication group, whichever server is primary. Shared by lockstep's PostgreSQL backend and
// the co-simulated npm library over the same server (services/ext).
#include <optional>

#include "history/history.h"
#include "services/postgres/sim/pg_engine.h"
#include "sim/scheduler.h"

namespace lockstep {

inline constexpr int64_t kSessionLeaseUs = sim::SchedulerOptions{}.time_max_us;
inline constexpr const char* kPostgresLeaseGroup = "postgres";

// nullopt for a statement that is no client's lock operation (an empty tag).
std::optional<HistoryEvent> postgres_lease_event(const sim::PgLockEvent& event);

}  // namespace lockstep
