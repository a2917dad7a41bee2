#pragma once
// A user's own Redis lock, written against lockstep's RedisConnection seam only, so the same code
// runs against a real redis-server and the simulated one: SET NX PX to take the lock, Lua
// compare-then-act scripts to release and extend it. The lock key is the caller's key as given.
//
// MyLock::Extend::owner_checked is the correct lock; Extend::plain_pexpire is the bug this example
// exists to catch: an extend by plain PEXPIRE lengthens whoever's lock is there now.
#include <string>
#include <vector>

#include "lockstep/adapter.h"
#include "lockstep/redis_connection.h"

namespace my_lock {

class MyLock final : public lockstep::LockAdapter {
 public:
  enum class Extend { owner_checked, plain_pexpire };
  MyLock(lockstep::RedisConnection& connection, Extend extend)
      : connection_(connection), extend_(extend) {}

  std::string_view name() const override {
    return extend_ == Extend::owner_checked ? "my-correct" : "my-buggy";
  }
  // No fencing tokens: the checkers then judge exclusion only, not stale writes.
  lockstep::FencingSupport fencing() const override { return lockstep::FencingSupport::none; }

  lockstep::AdapterResult create_lock(const lockstep::LockSpec& spec) override;
  lockstep::AdapterResult release_lock(const lockstep::LockSpec& spec) override;
  lockstep::AdapterResult extend_lock(const lockstep::LockSpec& spec, int64_t ttl_ms) override;
  lockstep::AdapterResult is_valid_lock(const lockstep::LockSpec& spec) override;

 private:
  lockstep::RedisResult send(const std::vector<std::string>& argv) {
    return connection_.command(argv);
  }

  lockstep::RedisConnection& connection_;
  Extend extend_;
};

}  // namespace my_lock
