#include "my_lock.h"

#include "redis_lock_kit.h"

namespace my_lock {

namespace {

using lockstep::AdapterResult;
using lockstep::AdapterStatus;
using lockstep::RedisReply;
using lockstep::RedisResult;

using my_redis::backend_error;
using my_redis::kExtendScript;
using my_redis::kReleaseScript;
using my_redis::owner_checked;
using my_redis::write_failed;

}  // namespace

AdapterResult MyLock::create_lock(const lockstep::LockSpec& spec) {
  const RedisResult r =
      send({"SET", spec.key, spec.value, "NX", "PX", std::to_string(spec.ttl_ms)});
  if (r.ok() && r.reply.is_nil()) return {.status = AdapterStatus::contended};
  if (r.ok() && r.reply.type == RedisReply::Type::status && r.reply.str == "OK") return {};
  return write_failed(r);  // a SET with no reply may have taken the lock: outcome unknown
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
