#pragma once
// The known-bad PostgreSQL advisory locks as registry entries (harness/known_bad.h).
//
// bad-pg-shared-session: the production session lock deployed behind a pooler that gives every
// client the same server session (PgBouncer in transaction mode, or one connection shared by a
// process's threads). A session lock belongs to the session, not the client: another client's
// pg_try_advisory_lock on that session succeeds while the first holds it (session locks are
// re-entrant), and its pg_advisory_unlock releases what the first took. Its one thing wrong, the
// shared session, shows in two traits: its grant is not exclusive, and its release checks no
// owner.
#include <vector>

#include "harness/backend.h"

namespace lockstep {

std::vector<AdapterEntry> postgres_known_bad();

}  // namespace lockstep
