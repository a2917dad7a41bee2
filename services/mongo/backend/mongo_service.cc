#include "services/mongo/backend/mongo_service.h"

#include "real/process_registry.h"
#include "real/server_files.h"
#include "services/mongo/backend/mongo_backend.h"

namespace lockstep {

namespace {

std::vector<AdapterEntry> mongo_adapters() {
  return {
      {.name = "mongo",
       .description =
           "MongoDB: upsert against a unique index on key, expiry by the server's $$NOW (or "
           "the client's clock), TTL index, owner-checked release and extend, a fencing "
           "counter per key",
       .worlds = {WorldKind::sim, WorldKind::real},
       .traits = kMongoTraits,
       .options = mongo_backend_options(),
       .check_options = check_mongo_options,
       .refine = mongo_traits,
       .make_sim =
           [](BackendEnv& env) { return make_mongo_sim_backend(env, production_mongo_adapter()); },
       .make_real =
           [](BackendEnv& env) {
             return make_mongo_real_backend(env, production_mongo_adapter());
           }}};
}

// libmongoc keeps its counters in /dev/shm/mongoc-<pid>. A process killed by a signal leaves the
// file, and the next process given that pid gets a warning on stderr as libmongoc starts
// ("Falling back to malloc for counters"): remove dead processes' files, and ours on a fatal
// signal.
void prepare_mongoc_counters() {
  real::remove_stale_pid_files("/dev/shm", "mongoc-");
  real::register_own_pid_file("/dev/shm", "mongoc-");
}

}  // namespace

Service mongo_service() {
  return {.name = "mongo", .adapters = mongo_adapters, .at_start = prepare_mongoc_counters};
}

}  // namespace lockstep
