#include "services/redis/backend/redis_service.h"

#include "lockstep/redis.h"

namespace lockstep {

namespace {

std::vector<AdapterEntry> redis_adapters() {
  return {
      {.name = "redis",
       .description = "single Redis: SET NX PX with a fencing token in the same script, Lua "
                      "compare-and-delete release and compare-and-pexpire extend",
       .worlds = {WorldKind::sim, WorldKind::real},
       .traits = kRedisTraits,
       .options = redis_backend_options(),
       .make_sim =
           [](BackendEnv& env) { return make_redis_sim_backend(env, production_redis_adapter()); },
       .make_real =
           [](BackendEnv& env) {
             return make_redis_real_backend(env, production_redis_adapter());
           }}};
}

}  // namespace

Service redis_service() { return {.name = "redis", .adapters = redis_adapters}; }

}  // namespace lockstep
