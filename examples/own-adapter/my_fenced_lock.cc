#include "my_fenced_lock.h"

#include <memory>
#include <utility>

#include "lockstep/registry.h"
#include "redis_lock_kit.h"

namespace my_fenced {

namespace {

using lockstep::AdapterResult;
using lockstep::AdapterStatus;
using lockstep::RedisReply;
using lockstep::RedisResult;

// KEYS[1] lock key, KEYS[2] its token counter; ARGV[1] owner value, ARGV[2] ttl ms. The token of a
// grant, or false (nil) when the lock is held.
constexpr const char* kAcquireScript = R"lua(
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return redis.call("INCR", KEYS[2])
end
return false
)lua";

std::string counter_key(const std::string& key) { return key + ":tokens"; }

using my_redis::backend_error;
using my_redis::kExtendScript;
using my_redis::kReleaseScript;
using my_redis::owner_checked;
using my_redis::write_failed;

}  // namespace

AdapterResult MyFencedLock::create_lock(const lockstep::LockSpec& spec) {
  if (tokens_ == Tokens::before_grant) return create_token_first(spec);
  const RedisResult r = send({"EVAL", kAcquireScript, "2", spec.key, counter_key(spec.key),
                              spec.value, std::to_string(spec.ttl_ms)});
  if (r.ok() && r.reply.is_nil()) return {.status = AdapterStatus::contended};
  if (r.ok() && r.reply.type == RedisReply::Type::integer && r.reply.integer > 0) {
    return {.fencing_token = static_cast<uint64_t>(r.reply.integer)};
  }
  return write_failed(r);  // a SET with no reply may have taken the lock: outcome unknown
}

// The bug: the token is drawn first, so another contender may draw a later one and be granted
// before this SET arrives.
AdapterResult MyFencedLock::create_token_first(const lockstep::LockSpec& spec) {
  const RedisResult token = send({"INCR", counter_key(spec.key)});
  if (!token.ok() || token.reply.type != RedisReply::Type::integer) return write_failed(token);
  const RedisResult r =
      send({"SET", spec.key, spec.value, "NX", "PX", std::to_string(spec.ttl_ms)});
  if (r.ok() && r.reply.is_nil()) return {.status = AdapterStatus::contended};
  if (r.ok() && r.reply.type == RedisReply::Type::status && r.reply.str == "OK") {
    return {.fencing_token = static_cast<uint64_t>(token.reply.integer)};
  }
  return write_failed(r);
}

AdapterResult MyFencedLock::release_lock(const lockstep::LockSpec& spec) {
  return owner_checked(send({"EVAL", kReleaseScript, "1", spec.key, spec.value}));
}

AdapterResult MyFencedLock::extend_lock(const lockstep::LockSpec& spec, int64_t ttl_ms) {
  return owner_checked(
      send({"EVAL", kExtendScript, "1", spec.key, spec.value, std::to_string(ttl_ms)}));
}

AdapterResult MyFencedLock::is_valid_lock(const lockstep::LockSpec& spec) {
  const RedisResult r = send({"GET", spec.key});
  if (r.ok() && r.reply.type == RedisReply::Type::string && r.reply.str == spec.value) return {};
  if (r.ok() && (r.reply.is_nil() || r.reply.type == RedisReply::Type::string))
    return {.status = AdapterStatus::not_owner};
  return backend_error(r);
}

namespace {

lockstep::AdapterEntry fenced_lock(std::string name, MyFencedLock::Tokens tokens,
                                   std::string description) {
  // A lease lock on one Redis with fencing tokens that rise in grant order, owner-checked
  // release and extend.
  return my_redis::redis_lock_entry(
      std::move(name), std::move(description), {.tokens = lockstep::TokenKind::monotonic},
      [tokens](lockstep::RedisConnection& c,
               lockstep::ClientSeams) -> std::unique_ptr<lockstep::LockAdapter> {
        return std::make_unique<MyFencedLock>(c, tokens);
      });
}

}  // namespace

void register_my_fenced_locks() {
  lockstep::register_adapter(fenced_lock("my-fenced", MyFencedLock::Tokens::with_grant,
                                         "my Redis lock with tokens from KEY:tokens"));
  // Not a calibration variant: its tokens go backwards only when two contenders' INCRs and SETs
  // interleave (about 1% of sweep seeds), too seldom for calibrate's share; the sweep finds it.
  lockstep::register_adapter(
      fenced_lock("my-fenced-buggy", MyFencedLock::Tokens::before_grant,
                  "fenced Redis lock that draws its token before it tries the lock"));
}

}  // namespace my_fenced
