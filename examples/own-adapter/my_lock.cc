#include "my_lock.h"

namespace my_lock {

namespace {

using lockstep::AdapterResult;
using lockstep::AdapterStatus;
using lockstep::RedisReply;
using lockstep::RedisResult;

// KEYS[1] lock key; ARGV[1] owner value. Deletes the lock only if it is still ours.
constexpr const char* kReleaseScript = R"lua(
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
)lua";

// KEYS[1] lock key; ARGV[1] owner value, ARGV[2] ttl ms. Extends only our own lock, and never
// re-creates one that is gone.
constexpr const char* kExtendScript = R"lua(
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
)lua";

AdapterResult backend_error(const RedisResult& r) {
  return {.status = AdapterStatus::backend_error,
          .message = r.ok() ? "unexpected reply " + lockstep::describe(r.reply) : r.message};
}

// Integer 1: done; 0: the lock is not ours (or gone); anything else: the backend failed.
AdapterResult owner_checked(const RedisResult& r) {
  if (r.ok() && r.reply.type == RedisReply::Type::integer) {
    return r.reply.integer == 1 ? AdapterResult{}
                                : AdapterResult{.status = AdapterStatus::not_owner};
  }
  return backend_error(r);
}

}  // namespace

AdapterResult MyLock::create_lock(const lockstep::LockSpec& spec) {
  const RedisResult r =
      send({"SET", spec.key, spec.value, "NX", "PX", std::to_string(spec.ttl_ms)});
  if (r.ok() && r.reply.is_nil()) return {.status = AdapterStatus::contended};
  if (r.ok() && r.reply.type == RedisReply::Type::status && r.reply.str == "OK") return {};
  return backend_error(r);  // a timeout included: an acquire not confirmed is not held
}

AdapterResult MyLock::release_lock(const lockstep::LockSpec& spec) {
  return owner_checked(send({"EVAL", kReleaseScript, "1", spec.key, spec.value}));
}

AdapterResult MyLock::extend_lock(const lockstep::LockSpec& spec, int64_t ttl_ms) {
  if (extend_ == Extend::plain_pexpire) {
    // The bug: no owner check, so after our lock expired and another client took the key, this
    // lengthens that client's lock and tells us we still hold it.
    return owner_checked(send({"PEXPIRE", spec.key, std::to_string(ttl_ms)}));
  }
  return owner_checked(
      send({"EVAL", kExtendScript, "1", spec.key, spec.value, std::to_string(ttl_ms)}));
}

AdapterResult MyLock::is_valid_lock(const lockstep::LockSpec& spec) {
  const RedisResult r = send({"GET", spec.key});
  if (r.ok() && r.reply.type == RedisReply::Type::string && r.reply.str == spec.value) return {};
  if (r.ok() && (r.reply.is_nil() || r.reply.type == RedisReply::Type::string))
    return {.status = AdapterStatus::not_owner};
  return backend_error(r);
}

}  // namespace my_lock
