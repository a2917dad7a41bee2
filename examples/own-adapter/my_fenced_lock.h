#pragma once
// A user's Redis lock with fencing tokens, its counter named its own way ("KEY:tokens", not
// lockstep's): SET NX PX and INCR of the counter in one Lua script, so tokens rise in the order the
// server grants the lock. Release and extend are owner-checked scripts, as in my_lock.h. lockstep
// judges the tokens against the order in which the simulated server granted the leases, whatever
// the keys are called.
//
// MyFencedLock::Tokens::with_grant is the correct lock; Tokens::before_grant is the bug this
// example exists to catch: it draws its token (INCR) before it tries the lock (SET NX PX), so two
// contenders can be granted in the other order than their tokens were drawn (fencing).
#include <string>
#include <vector>

#include "lockstep/adapter.h"
#include "lockstep/redis_connection.h"

namespace my_fenced {

class MyFencedLock final : public lockstep::LockAdapter {
 public:
  enum class Tokens { with_grant, before_grant };
  MyFencedLock(lockstep::RedisConnection& connection, Tokens tokens)
      : connection_(connection), tokens_(tokens) {}

  std::string_view name() const override {
    return tokens_ == Tokens::with_grant ? "my-fenced" : "my-fenced-buggy";
  }
  lockstep::FencingSupport fencing() const override { return lockstep::FencingSupport::monotonic; }

  lockstep::AdapterResult create_lock(const lockstep::LockSpec& spec) override;
  lockstep::AdapterResult release_lock(const lockstep::LockSpec& spec) override;
  lockstep::AdapterResult extend_lock(const lockstep::LockSpec& spec, int64_t ttl_ms) override;
  lockstep::AdapterResult is_valid_lock(const lockstep::LockSpec& spec) override;

 private:
  lockstep::AdapterResult create_token_first(const lockstep::LockSpec& spec);
  lockstep::RedisResult send(const std::vector<std::string>& argv) {
    return connection_.command(argv);
  }

  lockstep::RedisConnection& connection_;
  Tokens tokens_;
};

// Registers my-fenced and my-fenced-buggy (in the simulator and against a real redis-server).
void register_my_fenced_locks();

}  // namespace my_fenced
