#include "services/mongo/known_bad/mongo_known_bad.h"

#include "harness/known_bad.h"
#include "services/mongo/backend/mongo_backend.h"
#include "services/mongo/known_bad/known_bad_mongo.h"
#include "services/service.h"

namespace lockstep {

std::vector<AdapterEntry> mongo_known_bad() {
  const AdapterEntry& mongo = production_adapter("mongo");
  return {known_bad_entry(
      {"bad-mongo-no-unique",
       "mutual_exclusion",
       // two clients must upsert a free key at once: most seeds with contention on a key.
       0.65,
       "known-bad: the Mongo lock without the unique index on key (two upserts both insert)",
       [](AdapterTraits& t) { t.exclusive_grant = false; },
       {"concurrent-race"}},
      mongo,
      [](BackendEnv& env) { return make_mongo_sim_backend(env, make_bad_mongo_no_unique); })};
}

}  // namespace lockstep
