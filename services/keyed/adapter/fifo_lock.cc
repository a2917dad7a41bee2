#include "services/keyed/adapter/fifo_lock.h"

#include <chrono>

#include "base/check.h"

namespace lockstep::keyed {

void FifoLock::wake(RequestId id, WaitEnd end) {
  // Under mutex_: the waiter's condition variable lives on its stack (see KeyedRwMutex).
  auto it = waiters_.find(id);
  LOCKSTEP_CHECK(it != waiters_.end(), "every queued request has a waiting thread");
  it->second->end = end;
  it->second->cv.notify_one();
  waiters_.erase(it);
}

RequestId FifoLock::acquire(std::string_view key, const WithLockOptions& options) {
  return acquire_hashed(KeyRef(key), options);
}

RequestId FifoLock::acquire_hashed(const KeyRef& hashed, const WithLockOptions& options) {
  const std::string_view key = hashed.key;
  std::unique_lock lock(mutex_);
  const FifoAdmission admission = core_.request(hashed);
  switch (admission.admit) {
    case FifoAdmit::granted: return admission.id;
    case FifoAdmit::invalid_key:
      throw KeyedLockError::invalid_key(key, core_.limits().max_key_length);
    case FifoAdmit::queue_full:
      throw KeyedLockError::queue_full(key, core_.limits().max_waiters_per_key);
    case FifoAdmit::queued: break;
  }
  return wait(lock, key, admission.id, options);
}

RequestId FifoLock::wait(std::unique_lock<std::mutex>& lock, std::string_view key, RequestId id,
                         const WithLockOptions& options) {
  ThreadWaiter waiter;
  try {
    waiters_.emplace(id, &waiter);
  } catch (...) {  // out of memory: withdraw, so the queue never waits on a thread that left
    core_.cancel(key, id);
    throw;
  }
  auto done = [&waiter] { return waiter.end != WaitEnd::waiting; };
  // A wait longer than the steady clock can count to (now + max_wait_ms would overflow its
  // nanoseconds and land in the past: an immediate timeout) is a wait without a deadline.
  const auto now = std::chrono::steady_clock::now();
  const auto wait_ms_max = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::time_point::max() - now)
                               .count();
  if (!options.max_wait_ms || *options.max_wait_ms >= wait_ms_max) {
    waiter.cv.wait(lock, done);
  } else {
    const auto deadline = now + std::chrono::milliseconds(*options.max_wait_ms);
    if (!waiter.cv.wait_until(lock, deadline, done)) {
      // Still waiting: withdraw. Nobody else was touched, the holder keeps the key.
      LOCKSTEP_CHECK(core_.cancel(key, id),
                     "a waiter that was neither granted nor cleared is queued");
      waiters_.erase(id);
      throw KeyedLockError::timeout(key, *options.max_wait_ms);
    }
  }
  if (waiter.end == WaitEnd::cleared) throw KeyedLockError::cleared(key);
  return id;
}

void FifoLock::release(const std::string& key, RequestId id) noexcept {
  release_hashed(key, KeyRef(key).hash, id);
}

void FifoLock::release_hashed(const std::string& key, size_t key_hash, RequestId id) noexcept {
  std::lock_guard lock(mutex_);
  const RequestId next = core_.release(KeyRef(key, key_hash), id);
  if (next != kNoRequest) wake(next, WaitEnd::granted);
}

size_t FifoLock::clear() {
  std::lock_guard lock(mutex_);
  const std::vector<FifoRejection> rejected = core_.clear();
  for (const FifoRejection& r : rejected) wake(r.id, WaitEnd::cleared);
  return rejected.size();
}

bool FifoLock::held(std::string_view key) const {
  std::lock_guard lock(mutex_);
  return core_.held(key);
}

size_t FifoLock::waiting(std::string_view key) const {
  std::lock_guard lock(mutex_);
  return core_.waiting(key);
}

size_t FifoLock::size() const {
  std::lock_guard lock(mutex_);
  return core_.size();
}

}  // namespace lockstep::keyed
