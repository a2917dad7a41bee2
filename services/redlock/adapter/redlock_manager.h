#pragma once
// Redlock over N independent Redis nodes, with the API of Redis-DLM:
//
//   RedlockManager manager({.fanout = &fanout, .clock = &clock, .random = &random,
//                           .settings = {.duration_ms = 10'000, .retry_count = 3}});
//   RedlockLock lock = manager.acquire("user:123");          // throws RedlockError
//   lock.remaining_ms();                                      // validity left, by our clock
//   lock.extend();                                            // same duration, needs a majority
//   lock.release();
//
// One attempt (Redlock steps 1-5): note the local monotonic time (Clock::monotonic_us: elapsed
// time and validity never read the wall clock, which an NTP step can move); SET key value NX PX duration on every
// node in parallel, each round bounded by request_timeout_ms; the lock is acquired only when a
// majority (N/2+1) granted it and validity = duration - elapsed - (duration * drift_factor +
// drift_constant) is positive. Otherwise it is released on every node, including those that did
// not answer (their grant may have landed). Between attempts the manager sleeps a random time in
// [0, retry_delay_ms].
//
// Invariants: every lock has one random value, the same on every node; a RedlockLock reports
// held only while its validity has not ended: it ends at (start of the attempt that won, or of
// the last extend) + duration - drift allowance, on this node's clock, and is after the moment
// the grants came back; an extend never runs past max_hold_time_ms from the first grant. Redlock
// has no fencing token (nothing orders grants across nodes), so none is offered. A manager is
// used by one thread at a time (its fan-out is), and must outlive its locks.
#include <cstdint>
#include <optional>
#include <string>

#include "lockstep/clock.h"
#include "lockstep/random.h"
#include "services/redlock/adapter/redlock_errors.h"
#include "services/redlock/adapter/redlock_settings.h"
#include "services/redlock/adapter/redlock_steps.h"
#include "services/redlock/client/redis_fanout.h"

namespace lockstep {

struct RedlockOptions {
  RedisFanout* fanout = nullptr;
  Clock* clock = nullptr;
  Random* random = nullptr;
  RedlockSettings settings{};
  std::string key_prefix = "lock:";
};

class RedlockManager;

class RedlockLock {
 public:
  const std::string& key() const { return key_; }
  const std::string& value() const { return value_; }  // the lock's unique value (Redis-DLM: uid)
  int64_t duration_ms() const { return settings_.duration_ms; }
  int64_t max_hold_time_ms() const { return settings_.max_hold_time_ms; }
  // When the first grant's attempt began, and when the validity ends: monotonic time of this node
  // (Clock::monotonic_us), never its wall clock.
  int64_t start_time_ms() const { return start_us_ / 1000; }
  int64_t start_time_us() const { return start_us_; }
  int64_t valid_until_us() const { return valid_until_us_; }
  // Validity left now, by this node's monotonic clock; 0 once it ended.
  int64_t remaining_ms() const;

  // Makes the lock valid for `duration_ms` (default: its own) from now, on a majority. Throws
  // RedlockError: max_hold_exceeded (nothing sent), no_longer_valid (validity already ended, or no
  // majority confirmed: then its validity ends now, and its leases are left to run out by their
  // TTL, never deleted while the validity reported before may still be relied on; release() frees
  // them). Drift settings default to the manager's.
  void extend(const RedlockOverrides& overrides = {});
  // Releases on every node. Whether any node deleted our value. Throws RedlockError
  // (release_failure) when fewer than a majority answered.
  bool release();

 private:
  friend class RedlockManager;
  RedlockLock(RedlockManager& manager, std::string key, std::string value, RedlockSettings settings,
              int64_t start_us, int64_t valid_until_us);

  RedlockManager* manager_;
  std::string key_;
  std::string value_;
  RedlockSettings settings_;
  int64_t start_us_;
  int64_t valid_until_us_;
};

// One attempt's outcome: a lock, or why not (the lock is then already released everywhere).
struct RedlockAttempt {
  std::optional<RedlockLock> lock{};
  RedlockErrorCause cause = RedlockErrorCause::no_consensus;
  std::string message{};
};

class RedlockManager {
 public:
  // Validates the options; throws ValidationError (no fan-out, clock or random; bad settings).
  explicit RedlockManager(RedlockOptions options);

  // Acquires key with the defaults and these overrides, retrying per retry_count. Throws
  // RedlockError with the last attempt's cause.
  RedlockLock acquire(const std::string& key, const RedlockOverrides& overrides = {});
  // One attempt with a given value and validated settings; never throws for an expected outcome.
  RedlockAttempt try_acquire(const std::string& key, const std::string& value,
                             const RedlockSettings& settings);

  // Releases value's lock on every node (see RedlockLock::release), returning the votes.
  NodeVotes release_value(const std::string& key, const std::string& value, int64_t timeout_ms);

  int nodes() const { return static_cast<int>(options_.fanout->size()); }
  int quorum() const { return majority_of(options_.fanout->size()); }
  const RedlockSettings& defaults() const { return options_.settings; }
  std::string lock_key(const std::string& key) const { return options_.key_prefix + key; }
  Clock& clock() { return *options_.clock; }
  RedisFanout& fanout() { return *options_.fanout; }

 private:
  RedlockOptions options_;
};

}  // namespace lockstep
