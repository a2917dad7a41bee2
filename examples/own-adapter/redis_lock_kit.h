#pragma once
// What the example's Redis locks share: the owner-checked release and extend scripts, how their
// integer replies read, and the registry entry of a lock on one Redis. Written against lockstep's
// public API only (include/lockstep), as any outside project would be.
#include <memory>
#include <string>
#include <utility>

#include "lockstep/adapter.h"
#include "lockstep/adapter_traits.h"
#include "lockstep/io_status.h"
#include "lockstep/redis.h"
#include "lockstep/redis_connection.h"
#include "lockstep/registry.h"

namespace my_redis {

// KEYS[1] lock key; ARGV[1] owner value. Deletes the lock only if it is still ours.
inline constexpr const char* kReleaseScript = R"lua(
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
)lua";

// KEYS[1] lock key; ARGV[1] owner value, ARGV[2] ttl ms. Extends only our own lock, and never
// re-creates one that is gone.
inline constexpr const char* kExtendScript = R"lua(
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
)lua";

// What went wrong with a reply that is not the one expected, or with the transport.
inline std::string failure_of(const lockstep::RedisResult& r) {
  return r.ok() ? "unexpected reply " + lockstep::describe(r.reply) : r.message;
}

// An answer the lock cannot read, or a transport failure, as a backend error.
inline lockstep::AdapterResult backend_error(const lockstep::RedisResult& r) {
  return {.status = lockstep::AdapterStatus::backend_error, .message = failure_of(r)};
}

// A write that did not come back as expected. Sent whole and never answered (a timeout, a reset
// after the request), it may have been done: an unknown outcome, as the adapter contract asks
// (lockstep checks it: an error must mean nothing happened). Anything else: the backend failed.
inline lockstep::AdapterResult write_failed(const lockstep::RedisResult& r) {
  if (lockstep::may_have_applied(r.status)) {
    return {.status = lockstep::AdapterStatus::outcome_unknown, .message = r.message};
  }
  return backend_error(r);
}

// Integer 1: done; 0: the lock is not ours (or gone); otherwise as write_failed.
inline lockstep::AdapterResult owner_checked(const lockstep::RedisResult& r) {
  if (r.ok() && r.reply.type == lockstep::RedisReply::Type::integer) {
    return r.reply.integer == 1
               ? lockstep::AdapterResult{}
               : lockstep::AdapterResult{.status = lockstep::AdapterStatus::not_owner};
  }
  return write_failed(r);
}

// A lock on one Redis, in the simulator (network, clock and failover faults) and against a real
// redis-server, claiming what `traits` says beside that: its tokens, where its expiry lives.
inline lockstep::AdapterEntry redis_lock_entry(std::string name, std::string description,
                                               lockstep::AdapterTraits traits,
                                               lockstep::RedisClientFactory make) {
  traits.servers = lockstep::ServerLayout::one_server;
  traits.sim_faults = lockstep::kRedisTraits.sim_faults;
  return {
      .name = std::move(name),
      .description = std::move(description),
      .worlds = {lockstep::WorldKind::sim, lockstep::WorldKind::real},
      .traits = traits,
      .options = lockstep::redis_backend_options(),
      .make_sim = [make](lockstep::BackendEnv& env) { return make_redis_sim_backend(env, make); },
      .make_real = [make](lockstep::BackendEnv& env) { return make_redis_real_backend(env, make); },
  };
}

}  // namespace my_redis
