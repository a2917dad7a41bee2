#pragma once
// A user's own owner:deadline lock on Redis, the way such locks are often written: the key holds
// "OWNER:DEADLINE_MS" with no TTL (the store never expires it), the deadline being the writer's
// wall clock plus the TTL; a client takes the lock when the key is missing or its deadline is past
// by its own wall clock, releases it by compare-and-delete and extends it by compare-and-set of a
// new deadline, each in one Lua script. Written against lockstep's RedisConnection and Clock seams
// only. Its traits declare server_expiry = client_value, so lockstep reads its leases from the
// values it writes (include/lockstep/adapter_traits.h).
//
// MyDeadlineLock::Takeover::past_deadline is the correct lock; Takeover::before_my_deadline is the
// bug this example exists to catch: it compares the holder's deadline with the deadline it would
// write itself, not with now, so it takes over any lock that ends before its own would: every live
// one (lease_exclusion, mutual_exclusion).
#include <string>
#include <vector>

#include "lockstep/adapter.h"
#include "lockstep/clock.h"
#include "lockstep/redis_connection.h"

namespace my_deadline {

class MyDeadlineLock final : public lockstep::LockAdapter {
 public:
  enum class Takeover { past_deadline, before_my_deadline };
  MyDeadlineLock(lockstep::RedisConnection& connection, lockstep::Clock& clock, Takeover takeover)
      : connection_(connection), clock_(clock), takeover_(takeover) {}

  std::string_view name() const override {
    return takeover_ == Takeover::past_deadline ? "my-deadline" : "my-deadline-buggy";
  }
  lockstep::FencingSupport fencing() const override { return lockstep::FencingSupport::none; }

  lockstep::AdapterResult create_lock(const lockstep::LockSpec& spec) override;
  lockstep::AdapterResult release_lock(const lockstep::LockSpec& spec) override;
  lockstep::AdapterResult extend_lock(const lockstep::LockSpec& spec, int64_t ttl_ms) override;
  lockstep::AdapterResult is_valid_lock(const lockstep::LockSpec& spec) override;

 private:
  // Milliseconds on this client's wall clock, rounded up: a deadline now_ms() + ttl_ms would end
  // up to 1 ms before the validity lockstep's Locker counts from the request (TTL on the monotonic
  // clock), and the lock would promise more than it holds.
  int64_t now_ms_up() { return (clock_.now_us() + 999) / 1000; }
  // EVALs script on spec.key with ARGV owner + args: integer 1 is ok, 0 is `refused`. A script
  // that writes and gets no reply may have run: an unknown outcome.
  lockstep::AdapterResult run(const char* script, const lockstep::LockSpec& spec,
                              std::vector<std::string> args, lockstep::AdapterStatus refused,
                              bool writes = true);

  lockstep::RedisConnection& connection_;
  lockstep::Clock& clock_;
  Takeover takeover_;
};

// Registers my-deadline and my-deadline-buggy (both in the simulator and against a real
// redis-server).
void register_my_deadline_locks();

}  // namespace my_deadline
