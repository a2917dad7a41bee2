#pragma once
// fifo: a FIFO keyed lock (after the svelte-adapter-uws lock seed), in idiomatic C++.
//
//   FifoLock lock;  // options: {.max_key_length, .max_waiters_per_key}
//   Order o = lock.with_lock("order:42", [&] { return process(); });
//   try {
//     lock.with_lock("order:42", fn, {.max_wait_ms = 5000});
//   } catch (const KeyedLockError& e) {
//     if (e.code() == KeyedLockCode::lock_timeout) ...    // e.key(), e.max_wait_ms()
//   }
//
// Callers of one key run fn one at a time in arrival order; other keys run in parallel; fn's
// result or exception goes back to its caller, and the next waiter runs either way. The errors
// (keyed_errors.h) are thrown before fn runs, never after. held(key), waiting(key) and size()
// observe the lock.
//
// clear(), precisely: every caller waiting at the moment of the call is rejected with
// LOCK_CLEARED and its fn never runs. Callers whose fn is already running are not interrupted and
// keep their key until fn ends; a caller arriving after clear() waits for them as usual. So
// clear() never breaks exclusion: at no time do two callers of one key run fn together. What it
// does not do: stop new callers (it is not a close()), or wait for running holders to finish.
// (The seed drops the holders' state too, which lets a caller that arrives after clear() run
// beside a holder that is still running; we do not.)
//
// Limits: max_key_length counts bytes (the seed counts UTF-16 code units); a request refused for
// a too long key or a full queue changes nothing for the holder or the waiters already queued.
//
// KeyedFifoLock is the API; FifoLock runs the core (fifo_core.h) with real threads, SimFifoLock
// (services/keyed/backend/keyed_sim.h) with simulator fibers. Not reentrant (fn locking its own key
// waits for itself until its max wait runs out, or forever without one).
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "services/keyed/adapter/fifo_core.h"
#include "services/keyed/adapter/keyed_errors.h"

namespace lockstep::keyed {

struct FifoLockOptions {
  size_t max_key_length = 256;  // bytes; std::numeric_limits<size_t>::max() to disable
  size_t max_waiters_per_key = 1000;
};

struct WithLockOptions {
  std::optional<int64_t> max_wait_ms{};  // none: wait as long as it takes; 0: only if free now
};

class KeyedFifoLock {
 public:
  virtual ~KeyedFifoLock() = default;

  // Runs fn() holding key and returns its result (or rethrows its exception) after handing the
  // key to the next waiter. Throws KeyedLockError, without running fn, when the key is invalid,
  // the queue is full, the wait runs out, or clear() rejects the caller.
  template <class Fn>
  std::invoke_result_t<Fn> with_lock(std::string_view key, Fn&& fn, WithLockOptions options = {}) {
    const KeyRef hashed(key);  // hashed once for the acquire and the release
    // The releaser's copy of the key is made before the grant: a throw between the grant and the
    // releaser (a failed allocation) would hold the key for good.
    std::string owned_key(key);
    const RequestId id = acquire_hashed(hashed, options);
    const Releaser releaser{this, std::move(owned_key), hashed.hash, id};
    return std::forward<Fn>(fn)();
  }

  virtual bool held(std::string_view key) const = 0;
  virtual size_t waiting(std::string_view key) const = 0;
  // Keys with state; equal to the number of held keys (a key with waiters has a holder).
  virtual size_t size() const = 0;
  // Rejects every waiting caller with LOCK_CLEARED (see above); returns how many.
  virtual size_t clear() = 0;

 protected:
  // Blocks until key is granted to the caller; throws KeyedLockError otherwise.
  virtual RequestId acquire(std::string_view key, const WithLockOptions& options) = 0;
  // Ends the hold of id and hands key to the next waiter.
  virtual void release(const std::string& key, RequestId id) noexcept = 0;
  // The same with the key's hash already computed (with_lock hashes once). A driver that has no
  // use for the hash keeps these defaults; FifoLock passes it on to its core.
  virtual RequestId acquire_hashed(const KeyRef& key, const WithLockOptions& options) {
    return acquire(key.key, options);
  }
  virtual void release_hashed(const std::string& key, size_t key_hash, RequestId id) noexcept {
    static_cast<void>(key_hash);
    release(key, id);
  }

 private:
  struct Releaser {
    KeyedFifoLock* lock;
    std::string key;
    size_t key_hash;
    RequestId id;
    ~Releaser() { lock->release_hashed(key, key_hash, id); }
  };
};

// The thread driver: one core under one std::mutex (the seed's lock is one map; sharding as in
// KeyedRwMutex would not change the order per key), each waiter on its own condition variable
// with a steady_clock deadline. A grant hands the key over before waking the waiter, so a waiter
// whose deadline passes at the moment it is granted takes the grant (it holds: not a timeout).
class FifoLock final : public KeyedFifoLock {
 public:
  explicit FifoLock(FifoLockOptions options = {})
      : core_({.max_key_length = options.max_key_length,
               .max_waiters_per_key = options.max_waiters_per_key}) {}

  bool held(std::string_view key) const override;
  size_t waiting(std::string_view key) const override;
  size_t size() const override;
  size_t clear() override;

 protected:
  RequestId acquire(std::string_view key, const WithLockOptions& options) override;
  void release(const std::string& key, RequestId id) noexcept override;
  RequestId acquire_hashed(const KeyRef& key, const WithLockOptions& options) override;
  void release_hashed(const std::string& key, size_t key_hash, RequestId id) noexcept override;

 private:
  enum class WaitEnd { waiting, granted, cleared };
  struct ThreadWaiter {
    std::condition_variable cv;
    WaitEnd end = WaitEnd::waiting;
  };
  void wake(RequestId id, WaitEnd end);
  RequestId wait(std::unique_lock<std::mutex>& lock, std::string_view key, RequestId id,
                 const WithLockOptions& options);

  mutable std::mutex mutex_;
  FifoCore core_;
  std::unordered_map<RequestId, ThreadWaiter*> waiters_;  // looked up only, never walked
};

}  // namespace lockstep::keyed
