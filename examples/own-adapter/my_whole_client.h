#pragma once
// A user's whole Redis lock client, registered whole: its acquire is its own retry loop (SET NX PX,
// then a wait of 20-60 ms, for up to twice the TTL), and the validity it reports is its own
// arithmetic. lockstep's Locker calls it once per acquire and takes its word (retries_itself()),
// so the loop and the arithmetic are what the sweep judges. Written against lockstep's
// RedisConnection, Clock and Random seams only.
//
// A SET whose reply never came may have taken the lock. The correct client remembers when the
// first such SET was sent: when a later attempt finds the key holding its own value, the lock is
// its own from that SET, and its validity counts from then. MyWholeClient::Timeouts::lost is the
// bug this example exists to catch: it treats a timed-out SET as lost, so when it later finds its
// own value it counts the validity from that later attempt, past the lease the server holds
// (validity_within_lease; mutual_exclusion when another client takes the key in between).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/adapter.h"
#include "lockstep/clock.h"
#include "lockstep/random.h"
#include "lockstep/redis_connection.h"

namespace my_whole_client {

class MyWholeClient final : public lockstep::LockAdapter {
 public:
  enum class Timeouts { may_have_applied, lost };
  MyWholeClient(lockstep::RedisConnection& connection, lockstep::Clock& clock,
                lockstep::Random& random, Timeouts timeouts)
      : connection_(connection), clock_(clock), random_(random), timeouts_(timeouts) {}

  std::string_view name() const override {
    return timeouts_ == Timeouts::may_have_applied ? "my-whole-client" : "my-whole-client-buggy";
  }
  lockstep::FencingSupport fencing() const override { return lockstep::FencingSupport::none; }
  // The whole client: its own retries, its own validity.
  bool retries_itself() const override { return true; }

  lockstep::AdapterResult create_lock(const lockstep::LockSpec& spec) override;
  lockstep::AdapterResult release_lock(const lockstep::LockSpec& spec) override;
  lockstep::AdapterResult extend_lock(const lockstep::LockSpec& spec, int64_t ttl_ms) override;
  lockstep::AdapterResult is_valid_lock(const lockstep::LockSpec& spec) override;
  // After an acquire: the validity this client computed. After an extend: the TTL from its send.
  int64_t validity_end_us(const lockstep::LockSpec& spec, int64_t requested_at_us,
                          int64_t ttl_ms) const override;

 private:
  // One SET NX PX: granted, refused, not known (its reply never came), not sent (the connection
  // failed first: nothing applied), or failed (an answer it cannot read).
  enum class Attempt { granted, refused, unknown, not_sent, failed };
  Attempt try_set(const lockstep::LockSpec& spec, std::string& error);
  // Whether the key holds our value: the answer to a SET whose reply never came.
  std::optional<bool> holds_own_value(const lockstep::LockSpec& spec, std::string& error);
  lockstep::RedisResult send(const std::vector<std::string>& argv) {
    return connection_.command(argv);
  }

  lockstep::RedisConnection& connection_;
  lockstep::Clock& clock_;
  lockstep::Random& random_;
  Timeouts timeouts_;
  // The validity the last acquire of each value computed (monotonic us), until it is extended or
  // released. One entry per lock this client holds.
  std::map<std::string, int64_t> acquired_valid_until_us_;
};

// Registers my-whole-client and my-whole-client-buggy (in the simulator and against a real
// redis-server).
void register_my_whole_clients();

}  // namespace my_whole_client
