#pragma once
// The single-instance Redis lock: SET NX PX with a fencing token taken in the same script, and
// Lua compare-then-act release and extend (the value must match; extend never re-creates).
//
// Keys: the lock lives at key_prefix + key; its fencing counter at fencing_prefix + key and is
// never deleted, so tokens keep increasing across releases and expiries (as long as the server
// keeps its data: a failover to a replica that missed increments can reissue a token, which the
// fencing checker reports). Transport failures and unexpected replies become backend_error with
// the endpoint and the cause; an acquire that cannot be confirmed is never reported as held.
#include <string>

#include "adapters/core/adapter.h"
#include "adapters/core/redis_connection.h"

namespace lockstep {

struct RedisAdapterOptions {
  RedisConnection* connection = nullptr;  // required; used by one client at a time
  std::string key_prefix = "lock:";
  std::string fencing_prefix = "lock-fencing:";
};

class RedisAdapter final : public LockAdapter {
 public:
  explicit RedisAdapter(RedisAdapterOptions options);

  std::string_view name() const override { return "redis"; }
  FencingSupport fencing() const override { return FencingSupport::monotonic; }
  AdapterResult create_lock(const LockSpec& spec) override;
  AdapterResult release_lock(const LockSpec& spec) override;
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override;
  AdapterResult is_valid_lock(const LockSpec& spec) override;

  std::string lock_key(const std::string& key) const { return options_.key_prefix + key; }
  std::string fencing_key(const std::string& key) const { return options_.fencing_prefix + key; }

 private:
  // 1 -> ok, 0 -> not_owner, anything else -> backend_error.
  AdapterResult owner_checked(const RedisResult& result, const char* op) const;
  AdapterResult failure(const RedisResult& result, const char* op) const;

  RedisAdapterOptions options_;
};

}  // namespace lockstep
