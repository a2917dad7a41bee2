#include "services/postgres/known_bad/postgres_known_bad.h"

#include "harness/known_bad.h"
#include "services/postgres/backend/postgres_backend.h"
#include "services/service.h"

namespace lockstep {

namespace {

const std::vector<KnownBad> kKnownBadPostgres = {
    {"bad-pg-shared-session",
     "mutual_exclusion",
     // two clients must ask for one key while it is held: nearly every seed with contention.
     0.7,
     "known-bad: session advisory locks on one pooled session every client shares, so a second "
     "client's try-lock re-enters the first one's lock and its unlock releases it",
     // One session, two consequences of it: the grant is not exclusive, and an unlock acts on
     // the session's lock whoever took it.
     [](AdapterTraits& t) {
       t.exclusive_grant = false;
       t.release = OwnerCheck::none;
     },
     {"concurrent-race"}},
};

}  // namespace

std::vector<AdapterEntry> postgres_known_bad() {
  const AdapterEntry& postgres_session = production_adapter("postgres-session");
  std::vector<AdapterEntry> entries;
  for (const KnownBad& bad : kKnownBadPostgres) {
    entries.push_back(known_bad_entry(bad, postgres_session, [](BackendEnv& env) {
      return make_postgres_sim_backend(env, production_postgres_adapter(AdvisoryMode::session_try),
                                       PostgresSimOptions{.one_shared_session = true});
    }));
  }
  return entries;
}

}  // namespace lockstep
