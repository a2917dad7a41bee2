#include "services/redis/adapter/redis_adapter.h"

#include <fmt/format.h>

#include "base/check.h"
#include "services/redis/adapter/scripts.h"

namespace lockstep {

RedisAdapter::RedisAdapter(RedisAdapterOptions options) : options_(std::move(options)) {
  LOCKSTEP_CHECK(options_.connection != nullptr, "RedisAdapter needs a connection");
  LOCKSTEP_CHECK(options_.key_prefix != options_.fencing_prefix,
                 "lock and fencing keys must not collide");
  LOCKSTEP_CHECK(options_.key_prefix.find('{') == std::string::npos &&
                     options_.fencing_prefix.find('{') == std::string::npos,
                 "a prefix with '{' would move the hash tag off the key");
}

AdapterResult RedisAdapter::failure(const RedisResult& result, const char* op, bool writes) const {
  if (!result.ok()) {
    // A write sent whole and then timed out or lost its connection may have been applied: the
    // script may have run and only its reply been lost. The caller must know that, not read it as
    // "nothing happened" (io_status.h).
    const bool maybe_applied = writes && may_have_applied(result.status);
    return {.status = maybe_applied ? AdapterStatus::outcome_unknown : AdapterStatus::backend_error,
            .message = fmt::format("{} on {}: {} ({})", op, options_.connection->endpoint(),
                                   to_string(result.status), result.message)};
  }
  return {.status = AdapterStatus::backend_error,
          .message = fmt::format("{} on {}: unexpected reply {}", op,
                                 options_.connection->endpoint(), describe(result.reply))};
}

AdapterResult RedisAdapter::owner_checked(const RedisResult& result, const char* op) const {
  if (result.ok() && result.reply.type == RedisReply::Type::integer) {
    if (result.reply.integer == 1) return {};
    if (result.reply.integer == 0) return {.status = AdapterStatus::not_owner};
  }
  return failure(result, op, /*writes=*/true);
}

AdapterResult RedisAdapter::create_lock(const LockSpec& spec) {
  const RedisResult result =
      run_script(*options_.connection, grant_script(), {lock_key(spec.key), fencing_key(spec.key)},
                 {spec.value, std::to_string(spec.ttl_ms)});
  if (result.ok() && result.reply.is_nil()) return {.status = AdapterStatus::contended};
  if (result.ok() && result.reply.type == RedisReply::Type::integer && result.reply.integer > 0) {
    return {.fencing_token = static_cast<uint64_t>(result.reply.integer)};
  }
  return failure(result, "acquire", /*writes=*/true);
}

AdapterResult RedisAdapter::release_lock(const LockSpec& spec) {
  return owner_checked(
      run_script(*options_.connection, release_script(), {lock_key(spec.key)}, {spec.value}),
      "release");
}

AdapterResult RedisAdapter::extend_lock(const LockSpec& spec, int64_t ttl_ms) {
  return owner_checked(run_script(*options_.connection, extend_script(), {lock_key(spec.key)},
                                  {spec.value, std::to_string(ttl_ms)}),
                       "extend");
}

AdapterResult RedisAdapter::is_valid_lock(const LockSpec& spec) {
  const RedisResult result = options_.connection->command({"GET", lock_key(spec.key)});
  if (!result.ok() || (result.reply.type != RedisReply::Type::string && !result.reply.is_nil())) {
    return failure(result, "is_locked", /*writes=*/false);
  }
  if (result.reply.type == RedisReply::Type::string && result.reply.str == spec.value) return {};
  return {.status = AdapterStatus::not_owner};
}

}  // namespace lockstep
