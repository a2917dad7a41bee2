#pragma once
// The single-instance Redis lock: SET NX PX with a fencing token taken in the same script, and
// Lua compare-then-act release and extend (the value must match; extend never re-creates).
//
// Keys: the lock lives at key_prefix + "{" + key + "}", its fencing counter at fencing_prefix +
// "{" + key + "}". The braces are a Redis Cluster hash tag: both keys hash on the same text, so
// they share a slot and the grant script, which touches both, never fails with CROSSSLOT. (The
// prefixes hold no '{'; a key that begins with '}' gives an empty tag, and Redis then hashes the
// whole names: the Locker refuses empty keys, such keys are the caller's to avoid on a cluster.)
//
// The counter is never deleted, so tokens keep increasing across releases and expiries, as long as
// the server keeps its data: a failover to a replica that missed increments can reissue a token
// (the fencing checker reports it), and so can eviction. The counter has no TTL, so volatile-*
// policies never evict it, but allkeys-lru/lfu/random may, and the next grant then restarts at 1.
// Run the lock's Redis with maxmemory-policy noeviction (or a volatile-* policy): with noeviction a
// full server refuses the grant (an error, reported as backend_error) rather than forget a token.
//
// Transport failures and unexpected replies become backend_error with the endpoint and the cause,
// except a write (acquire, release, extend) that timed out: outcome_unknown, since its script may
// have run. An acquire that cannot be confirmed is never reported as held.
#include <string>

#include "lockstep/adapter.h"
#include "lockstep/redis_connection.h"

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

  std::string lock_key(const std::string& key) const {
    return hash_tagged(options_.key_prefix, key);
  }
  std::string fencing_key(const std::string& key) const {
    return hash_tagged(options_.fencing_prefix, key);
  }
  // prefix + "{" + key + "}": the layout of both keys, and what simulated observers parse back.
  static std::string hash_tagged(const std::string& prefix, const std::string& key) {
    return prefix + "{" + key + "}";
  }

 private:
  // 1 -> ok, 0 -> not_owner, anything else -> backend_error.
  AdapterResult owner_checked(const RedisResult& result, const char* op) const;
  // writes: the command changes the keyspace, so a timeout leaves its outcome unknown.
  AdapterResult failure(const RedisResult& result, const char* op, bool writes) const;

  RedisAdapterOptions options_;
};

}  // namespace lockstep
