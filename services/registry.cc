#include "services/registry.h"

#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "services/ext/backend/ext_backend.h"
#include "services/keyed/backend/keyed_backend.h"
#include "services/memory/backend/memory_backend.h"
#include "services/mongo/backend/mongo_backend.h"
#include "services/redis/backend/redis_backend.h"
#include "services/redlock/backend/redlock_backend.h"

namespace lockstep {

namespace {

std::vector<AdapterEntry>& registry() {
  static std::vector<AdapterEntry> entries = {
      {.name = "memory",
       .description = "in-process TTL lease table with owner-checked release/extend and monotonic "
                      "fencing tokens",
       .worlds = {WorldKind::sim, WorldKind::real},
       .traits = kMemoryTraits,
       .make_sim = [](BackendEnv& env) { return make_memory_backend(env); },
       .make_real = [](BackendEnv& env) { return make_memory_backend(env); }},
      {.name = "redis",
       .description = "single Redis: SET NX PX with a fencing token in the same script, Lua "
                      "compare-and-delete "
                      "release and compare-and-pexpire extend",
       .worlds = {WorldKind::sim, WorldKind::real},
       .traits = kRedisTraits,
       .options = redis_backend_options(),
       .make_sim =
           [](BackendEnv& env) { return make_redis_sim_backend(env, production_redis_adapter()); },
       .make_real =
           [](BackendEnv& env) {
             return make_redis_real_backend(env, production_redis_adapter());
           }},
      {.name = "redlock",
       .description = "Redlock over N independent Redis nodes (nodes: 3, 5, 7): SET NX PX on all "
                      "in parallel, a "
                      "majority and positive validity after elapsed time and drift, release "
                      "everywhere on failure; "
                      "no fencing token",
       .worlds = {WorldKind::sim, WorldKind::real},
       .traits = kRedlockTraits,
       .options = redlock_backend_options(),
       .make_sim =
           [](BackendEnv& env) {
             return make_redlock_sim_backend(env, production_redlock_adapter());
           },
       .make_real =
           [](BackendEnv& env) {
             return make_redlock_real_backend(env, production_redlock_adapter());
           }},
      {.name = "mongo",
       .description =
           "MongoDB: upsert against a unique index on key, expiry by the server's $$NOW (or the "
           "client's clock), TTL index, owner-checked release and extend, a fencing counter per "
           "key",
       .worlds = {WorldKind::sim, WorldKind::real},
       .traits = kMongoTraits,
       .options = mongo_backend_options(),
       .make_sim =
           [](BackendEnv& env) { return make_mongo_sim_backend(env, production_mongo_adapter()); },
       .make_real =
           [](BackendEnv& env) {
             return make_mongo_real_backend(env, production_mongo_adapter());
           }},
      {.name = "keyed-rw",
       .description = "in-process keyed shared/exclusive mutex: writer preference, exclusives in "
                      "request order, "
                      "per-key state freed when idle",
       .worlds = {WorldKind::sim},
       .traits = kKeyedRwTraits,
       .make_sim = [](BackendEnv& env) { return make_keyed_rw_sim_backend(env); }},
      {.name = "fifo",
       .description = "in-process FIFO keyed lock: one caller per key in arrival order, max wait, "
                      "bounded queues, "
                      "clear() that keeps exclusion",
       .worlds = {WorldKind::sim},
       .traits = kFifoTraits,
       .options = fifo_backend_options(),
       .make_sim = [](BackendEnv& env) { return make_fifo_sim_backend(env); }},
  };
  // Lock libraries in other languages, driven through the ext process protocol (backends/ext.h).
  static const bool ext_added = [] {
    for (AdapterEntry& entry : ext_adapter_entries()) entries.push_back(std::move(entry));
    return true;
  }();
  (void)ext_added;
  return entries;
}

}  // namespace

const std::vector<AdapterEntry>& adapters() { return registry(); }

const AdapterEntry* find_adapter(const std::string& name) {
  for (const AdapterEntry& entry : registry()) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

void register_adapter(AdapterEntry entry) {
  if (find_adapter(entry.name) != nullptr) {
    throw std::logic_error(fmt::format("adapter {} registered twice", entry.name));
  }
  registry().push_back(std::move(entry));
}

std::string adapter_names() {
  std::vector<std::string> names;
  for (const AdapterEntry& entry : registry()) names.push_back(entry.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace lockstep
