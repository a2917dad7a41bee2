#pragma once
// Locker and Lock: the lock API (after the seed library locco), over any LockAdapter.
//
//   Locker locker({.adapter = adapter, .clock = clock, .random = random,
//                  .retry = {.retry_delay_ms = 200, .retry_times = 10}});
//   Lock lock = locker.lock("user:123", 3000);
//   lock.acquire();                    // throws RetryError when it gives up
//   lock.extend(2000);                 // from now; throws LockExtendError when no longer ours
//   lock.release();                    // silent if already gone;
//                                      // {.throw_on_fail = true} reports it
//   int r = locker.lock("k", 3000).acquire([](Lock& held) { return 42; });  // released after
//
//   lock.auto_extend();                // opt-in: extends for the TTL every TTL/3 in the background
//   while (!lock.lost()) do_a_step();  // lost(): the lock-lost signal, never later than validity
//   lock.release();                    // stops the extensions first
//
// Invariants: every acquire attempt of a Lock writes a value of its own (the first is drawn from
// the Random seam at creation, the next ones derived from it without a draw), and the attempt that
// won names the lock until it is released: a request of an earlier attempt or hold that arrives
// late (a Redlock clean-up, a release, on a connection the client gave up on and a reconnect
// overtook) can never take a later grant for its own. acquire() reports success only when the
// adapter confirmed the grant; only contention
// is retried; the key, TTL and retry settings are validated when the Lock is made, so a bad
// argument fails before anything is sent. lost() never says "held" once the validity the lock last
// knew has ended by the holder's monotonic clock.
//
// Threads: a Locker, its Locks and its adapter belong to one thread, plus the auto-extension tasks
// its Locks start. The Redis, Redlock and Mongo adapters keep unguarded per-connection state (a
// hiredis context, Redlock's map of held locks, a mongoc client), so every adapter call of a
// Lock, its owner's or its auto-extension's, goes through the Locker's CallGate (made by the
// background seam): one call at a time, whichever lock of the Locker makes it. An auto-extension
// may therefore wait out another lock's call in flight (bounded by that call's timeout). Give each
// other thread its own Locker over its own adapter and connection, all pointing at the same
// servers: that is how separate processes use a distributed lock anyway. The one adapter that may
// be shared is MemoryAdapter (its table has a mutex): Lockers on many threads may use one
// MemoryAdapter. SystemRandom and SystemClock are stateless and may be shared too.
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "adapters/core/errors.h"
#include "adapters/core/retry.h"
#include "lockstep/adapter.h"
#include "lockstep/background.h"
#include "lockstep/clock.h"
#include "lockstep/random.h"

namespace lockstep {

// Keys longer than this, and TTLs longer than this, are rejected by validation.
inline constexpr size_t kKeyMaxBytes = 1024;
inline constexpr int64_t kTtlMaxMs = 86'400'000;  // 24 hours: a longer lease is a design error

struct ReleaseOptions {
  bool throw_on_fail = false;
};

struct LockerOptions {
  LockAdapter* adapter = nullptr;
  Clock* clock = nullptr;
  Random* random = nullptr;
  RetrySettings retry = RetrySettings::none();
  // Where auto_extend() runs its extensions (a thread, or a fiber of the simulated node). Only
  // auto_extend() needs it.
  Background* background = nullptr;
  // Admits one adapter call at a time (see "Threads" above). Left null, a Locker (or a Lock made
  // directly from these options) makes one from the background; without a background there are no
  // tasks to take turns with, and calls are not gated.
  std::shared_ptr<CallGate> gate;
};

struct AutoExtendOptions {
  // How often to extend, on the holder's monotonic clock; 0: a third of the lock's TTL. Each
  // extension asks for the lock's TTL again.
  int64_t every_ms = 0;
  // Told each validity a renewal gave (the holder's monotonic clock, us): after each successful
  // extension of the Locker's, from its background task (another thread, for real), or, for a
  // client that renews its locks itself, when the holder's poll (lost()) first sees a later
  // validity. It must not call the Lock. May be empty.
  std::function<void(int64_t valid_until_us)> on_renewed;
};

// Bounds the extensions of one auto_extend(): at the shortest interval, hours of holding.
inline constexpr int64_t kAutoExtendRenewalsMax = 10'000'000;

struct AutoExtension;  // locker.cc: the state shared with the extending task

class Lock {
 public:
  Lock(LockerOptions options, std::string key, int64_t ttl_ms);

  // Acquires, retrying contention per the retry settings. Returns *this for chaining.
  Lock& acquire();
  // acquire() with giving up (retries exhausted, the deadline spent, stopped by retry_delay_fn) as
  // a value: the RetryError acquire() would throw, or nullopt once held. Other errors still throw.
  // For callers that expect contention often (a harness's clients), where a throw per refusal
  // would cost more than the attempt.
  std::optional<RetryError> try_acquire();

  // Acquires, calls fn(*this), and releases when fn returns or throws; returns fn's result.
  // A throw from fn is rethrown after a best-effort release. The release after a normal return
  // is outside the try, so a failing release is reported once and not retried by the handler.
  template <class Fn>
  auto acquire(Fn&& fn) -> std::invoke_result_t<Fn, Lock&> {
    acquire();
    using Result = std::invoke_result_t<Fn, Lock&>;
    if constexpr (std::is_void_v<Result>) {
      call_releasing_on_throw(std::forward<Fn>(fn));
      release();
    } else {
      Result result = call_releasing_on_throw(std::forward<Fn>(fn));
      release();
      return result;
    }
  }

  // Releases the lock. Returns whether this call removed it. Already gone (expired or taken by
  // another owner) is silent unless options.throw_on_fail, which throws LockReleaseError.
  // A backend failure throws BackendError either way.
  bool release(ReleaseOptions options = {});

  // Makes the lock expire ttl_ms from now. Throws LockExtendError if it is no longer ours (and
  // lost() is true from then on), or if the reply came after ttl_ms had passed by this holder's
  // clock (the new lease may already have ended: never reported as held, as acquire does with a
  // late grant). A late reply or an unknown outcome may have set the lease to ttl_ms from when the
  // extend arrived, shorter than the lease known before: valid_until_us() is then the earlier of
  // the two, so a shorter extend that may have landed is never outlived.
  void extend(int64_t ttl_ms);
  // extend() with "no longer ours" and "too late" as a value: the LockExtendError extend() would
  // throw, or nullopt once extended. Other errors still throw. For callers that expect lost leases
  // often (a harness's clients under faults), where a throw per refusal costs more than the call.
  std::optional<LockExtendError> try_extend(int64_t ttl_ms);

  // Whether this lock (this unique value) still holds the key in the backend.
  bool is_locked();

  // Opt-in auto-extension: from now until release() (or the last copy of this Lock is gone), a
  // background task (LockerOptions::background) extends the lock for its TTL every
  // options.every_ms. An adapter that renews its locks itself (LockAdapter::renews_itself, a whole
  // client's own watchdog) is asked to instead, and its word is valid_until_us() and lost(). The first extension that fails, or whose reply comes after its TTL, stops
  // the task and marks the lock lost. While it runs, the task owns the adapter: call only lost(),
  // valid_until_us() and release() (extend() and is_locked() throw ValidationError). Throws
  // ValidationError before acquire(), without a background, for every_ms outside (0, TTL), or
  // when already auto-extending.
  void auto_extend(AutoExtendOptions options = {});

  // The lock-lost signal, for a critical section to poll between steps: true once the lock may no
  // longer be ours, that is when an extension failed, or when the validity the last successful
  // grant or extension gave has ended by this holder's monotonic clock, whichever is first. An
  // extension that hangs cannot delay it: the deadline alone turns it true. True before acquire()
  // and after release().
  bool lost();
  // Why lost() is true ("" while it is not): the failed extension's error, or the validity end.
  std::string lost_reason();

  // A copy of this (not yet acquired) lock with other retry settings: same key, TTL and unique
  // value. Validates them; throws ValidationError (parameter "retry") once acquired.
  Lock with_retry(RetrySettings settings) const;

  const std::string& key() const { return spec_.key; }
  int64_t ttl_ms() const { return spec_.ttl_ms; }
  // The value of the latest acquire attempt: the held lock's while held.
  const std::string& unique_value() const { return spec_.value; }
  const RetrySettings& retry_settings() const { return options_.retry; }
  // The fencing token of the last successful acquire; empty before it, and always empty when the
  // adapter cannot issue monotonic tokens.
  std::optional<uint64_t> fencing_token() const { return fencing_token_; }
  FencingSupport fencing() const { return options_.adapter->fencing(); }
  // The holder's monotonic time (Clock::monotonic_us) at which the successful attempt was sent:
  // the lease is valid until at most this plus the TTL, measured on the holder's oscillator (a
  // lower bound on when the server may expire it; wall-clock jumps do not move it).
  int64_t acquired_at_us() const { return acquired_at_us_; }
  // When the current lease (the grant, or the latest successful extend) stops being valid, in
  // the holder's monotonic time, as the adapter reports it (LockAdapter::validity_end_us): after
  // an extend, from when that extend was sent, for its TTL. 0 before the first acquire.
  int64_t valid_until_us() const;
  // Whether the adapter reported that validity itself (LockAdapter::reports_validity), or a
  // harness assumed it for a library that reports none.
  bool validity_reported() const { return validity_reported_; }
  // Number of create attempts the last acquire() made.
  int attempts() const { return attempts_; }

 private:
  template <class Fn>
  decltype(auto) call_releasing_on_throw(Fn&& fn) {
    try {
      return std::forward<Fn>(fn)(*this);
    } catch (...) {
      release_after_failure();
      throw;
    }
  }

  // Releases while fn's exception propagates, swallowing std::exception (fn's exception is the
  // one worth reporting, and the TTL frees the lock anyway). Deliberately not noexcept: an
  // exception outside std::exception (the simulator's ProcessKilled, thrown when this process
  // dies mid-release) must keep unwinding, not terminate the program or be swallowed.
  void release_after_failure();
  // Runs fn (an adapter call) through the gate.
  template <class Fn>
  decltype(auto) gated(Fn&& fn) {
    GatePass pass(options_.gate.get());
    return std::forward<Fn>(fn)();
  }
  // A create or extend sent at sent_at_us for ttl_ms, and the validity the adapter gives such a
  // lease, read in the same pass through the gate: a second pass could wait out another lock's
  // call after the reply, and return a lease as held after it had ended.
  struct LeaseCall {
    AdapterResult result;
    int64_t valid_until_us = 0;
    bool validity_reported = true;  // LockAdapter::reports_validity
  };
  template <class Fn>
  LeaseCall call_for_lease(Fn&& fn, int64_t sent_at_us, int64_t ttl_ms) {
    return gated([&] {
      LeaseCall call{.result = std::forward<Fn>(fn)()};
      call.valid_until_us = options_.adapter->validity_end_us(spec_, sent_at_us, ttl_ms);
      call.validity_reported = options_.adapter->reports_validity(spec_);
      return call;
    });
  }

  // The value the next acquire attempt writes (unique_value() until then).
  void next_attempt_value();
  // auto_extend's interval (options.every_ms, or a third of the TTL), validated.
  int64_t renewal_every_ms(AutoExtendOptions options) const;
  // auto_extend for an adapter that renews its locks itself (LockAdapter::renews_itself).
  void renew_by_client(AutoExtendOptions options);

  LockerOptions options_;
  LockSpec spec_;
  std::string first_value_;      // drawn at creation: attempt 0's value
  uint32_t attempt_serial_ = 0;  // attempts made over the Lock's life
  std::optional<uint64_t> fencing_token_;
  int attempts_ = 0;
  int64_t acquired_at_us_ = 0;
  // When the current lease (the grant, or the latest successful extend) ends by this holder's
  // clock, as the adapter reported it right after that call (under the gate).
  int64_t lease_valid_until_us_ = 0;
  bool validity_reported_ = true;  // that validity is the lock's word (reports_validity)
  // An extend whose outcome is unknown or came late may have set the lease to its TTL, shorter
  // than the one known before: the validity is at most this (kNoValidityCap: no such extend).
  static constexpr int64_t kNoValidityCap = INT64_MAX;
  int64_t validity_cap_us_ = kNoValidityCap;
  std::string refused_reason_;           // an extend was refused: the lock is lost ("" while not)
  bool acquired_ = false;                // an acquire() has succeeded: with_retry() is too late
  bool released_ = false;                // release() was called since
  std::shared_ptr<AutoExtension> auto_;  // while auto-extending (shared by copies of this Lock)
};

class Locker {
 public:
  // Validates the options (adapter, clock, random present; retry settings coherent).
  explicit Locker(LockerOptions options);

  // A Lock on key for ttl_ms, not yet acquired. Throws ValidationError for an empty or too long
  // key, or a TTL outside (0, kTtlMaxMs].
  Lock lock(std::string key, int64_t ttl_ms) const;

  const LockerOptions& options() const { return options_; }

 private:
  LockerOptions options_;
};

// Validation helpers, shared with adapters that take keys and TTLs of their own.
void validate_key(const std::string& key);
void validate_ttl_ms(int64_t ttl_ms, const char* parameter = "ttl_ms");

}  // namespace lockstep
