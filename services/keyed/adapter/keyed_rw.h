#pragma once
// keyed-rw: a keyed shared/exclusive mutex (after the keyed-mutex seed), in idiomatic C++.
//
//   KeyedRwMutex mtx;
//   {
//     RwHandle h = mtx.lock("doc:1");          // exclusive; blocks
//     ...
//   }                                          // released by the handle's destructor
//   if (auto r = mtx.try_lock_shared("doc:1")) { ... r->unlock(); r->unlock(); }  // idempotent
//   int v = mtx.with_lock_shared("doc:1", [] { return read(); });   // released even on throw
//
// Order and memory are those of the state machine (services/keyed/adapter/rw_core.h): writer preference,
// exclusives in request order, try-variants never queue, per-key state freed when a key is idle.
// KeyedRwLock is the API; KeyedRwMutex runs the core with real threads, SimKeyedRw
// (services/keyed/backend/keyed_sim.h) with simulator fibers, so the same scenarios judge both.
// Not reentrant: locking a key again from inside its own hold deadlocks (no detection), as in the
// seed. A handle belongs to one thread at a time; the lock itself is thread-safe.
#include <array>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "services/keyed/adapter/rw_core.h"

namespace lockstep::keyed {

class KeyedRwLock;
class KeyedRwMutex;

// One granted hold. unlock() is idempotent; the destructor unlocks; moving transfers the hold.
class RwHandle {
 public:
  RwHandle() = default;
  RwHandle(KeyedRwLock* owner, std::string key, RequestId id, RwMode mode)
      : owner_(owner), key_(std::move(key)), key_hash_(KeyRef(key_).hash), id_(id), mode_(mode) {}
  RwHandle(RwHandle&& other) noexcept
      : owner_(std::exchange(other.owner_, nullptr)),
        key_(std::move(other.key_)),
        key_hash_(other.key_hash_),
        id_(other.id_),
        mode_(other.mode_) {}
  RwHandle& operator=(RwHandle&& other) noexcept;
  RwHandle(const RwHandle&) = delete;
  RwHandle& operator=(const RwHandle&) = delete;
  ~RwHandle() { unlock(); }

  void unlock() noexcept;
  bool owns_lock() const { return owner_ != nullptr; }
  explicit operator bool() const { return owns_lock(); }
  const std::string& key() const { return key_; }
  RwMode mode() const { return mode_; }
  RequestId id() const { return id_; }

 private:
  friend class KeyedRwMutex;
  // Not owning yet: KeyedRwMutex copies the key into the handle it will return before asking for
  // the grant (so nothing can throw after it), then adopts the grant; the key is copied once.
  explicit RwHandle(const KeyRef& key) : key_(key.key), key_hash_(key.hash) {}
  void adopt(KeyedRwLock* owner, RequestId id, RwMode mode) {
    owner_ = owner;
    id_ = id;
    mode_ = mode;
  }

  KeyedRwLock* owner_ = nullptr;
  std::string key_;
  size_t key_hash_ = 0;  // KeyRef(key_).hash, so unlocking does not hash the key again
  RequestId id_ = kNoRequest;
  RwMode mode_ = RwMode::shared;
};

class KeyedRwLock {
 public:
  virtual ~KeyedRwLock() = default;

  // Blocks until granted.
  virtual RwHandle acquire(std::string_view key, RwMode mode) = 0;
  // Granted at once or nullopt; never queues, never changes the queue.
  virtual std::optional<RwHandle> try_acquire(std::string_view key, RwMode mode) = 0;
  // Keys with per-key state (a holder or a waiter); 0 when everything is released.
  virtual size_t key_count() const = 0;

  RwHandle lock(std::string_view key) { return acquire(key, RwMode::exclusive); }
  RwHandle lock_shared(std::string_view key) { return acquire(key, RwMode::shared); }
  std::optional<RwHandle> try_lock(std::string_view key) {
    return try_acquire(key, RwMode::exclusive);
  }
  std::optional<RwHandle> try_lock_shared(std::string_view key) {
    return try_acquire(key, RwMode::shared);
  }

  // Runs fn() under the lock and returns its result; releases when fn returns or throws (and
  // rethrows fn's exception unchanged).
  template <class Fn>
  std::invoke_result_t<Fn> with_lock(std::string_view key, Fn&& fn) {
    RwHandle held = lock(key);
    return std::forward<Fn>(fn)();
  }
  template <class Fn>
  std::invoke_result_t<Fn> with_lock_shared(std::string_view key, Fn&& fn) {
    RwHandle held = lock_shared(key);
    return std::forward<Fn>(fn)();
  }

 protected:
  friend class RwHandle;
  // Ends the hold of request id (called once per grant, by its handle).
  virtual void release(const KeyRef& key, RequestId id, RwMode mode) noexcept = 0;
};

// The thread driver: the key space is split over kShards shards by key hash, each a core under
// its own std::mutex, so unrelated keys rarely contend on a mutex. A waiter sleeps on its own
// condition variable; a grant is handed over (the core marks the waiter as holder before waking
// it), so a woken waiter never competes again.
class KeyedRwMutex final : public KeyedRwLock {
 public:
  static constexpr size_t kShards = 16;

  KeyedRwMutex() = default;
  // Destroying the mutex while a key is held or awaited is a caller bug (handles point here).
  ~KeyedRwMutex() override = default;

  RwHandle acquire(std::string_view key, RwMode mode) override;
  std::optional<RwHandle> try_acquire(std::string_view key, RwMode mode) override;
  size_t key_count() const override;

 protected:
  void release(const KeyRef& key, RequestId id, RwMode mode) noexcept override;

 private:
  struct ThreadWaiter {
    std::condition_variable cv;
    bool granted = false;
  };
  struct Shard {
    mutable std::mutex mutex;
    RwCore core;
    std::unordered_map<RequestId, ThreadWaiter*> waiters;  // looked up only, never walked
    std::vector<RequestId> granted;                        // scratch, reused
  };
  Shard& shard_for(const KeyRef& key);
  static void wake_granted(Shard& shard);

  std::array<Shard, kShards> shards_;
};

}  // namespace lockstep::keyed
