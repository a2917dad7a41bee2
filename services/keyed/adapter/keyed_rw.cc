#include "services/keyed/adapter/keyed_rw.h"

#include "base/check.h"

namespace lockstep::keyed {

RwHandle& RwHandle::operator=(RwHandle&& other) noexcept {
  if (this != &other) {
    unlock();
    owner_ = std::exchange(other.owner_, nullptr);
    key_ = std::move(other.key_);
    key_hash_ = other.key_hash_;
    id_ = other.id_;
    mode_ = other.mode_;
  }
  return *this;
}

void RwHandle::unlock() noexcept {
  if (owner_ == nullptr) return;
  KeyedRwLock* owner = std::exchange(owner_, nullptr);
  owner->release(KeyRef(key_, key_hash_), id_, mode_);
}

KeyedRwMutex::Shard& KeyedRwMutex::shard_for(const KeyRef& key) {
  // The table uses the same hash; the shard takes high bits so the two uses do not pick the same
  // buckets together.
  return shards_[(key.hash >> 28) % kShards];
}

void KeyedRwMutex::wake_granted(Shard& shard) {
  // Under the shard's mutex: a waiter's condition variable lives on its stack and is gone as soon
  // as it sees `granted` and returns, so it must be notified before the mutex is let go.
  for (RequestId id : shard.granted) {
    auto it = shard.waiters.find(id);
    LOCKSTEP_CHECK(it != shard.waiters.end(), "every queued request has a waiting thread");
    it->second->granted = true;
    it->second->cv.notify_one();
    shard.waiters.erase(it);
  }
  shard.granted.clear();
}

RwHandle KeyedRwMutex::acquire(std::string_view key_text, RwMode mode) {
  const KeyRef key(key_text);  // the one hash of this lock+unlock
  RwHandle handle(key);  // the key's copy, allocated before the grant: nothing throws after it
  Shard& shard = shard_for(key);
  std::unique_lock lock(shard.mutex);
  const RwAdmission admission = shard.core.request(key, mode);
  if (!admission.granted) {
    ThreadWaiter waiter;
    try {
      shard.waiters.emplace(admission.id, &waiter);
    } catch (...) {  // out of memory: withdraw, so the queue never waits on a thread that left
      shard.core.cancel(key, admission.id, shard.granted);
      wake_granted(shard);
      throw;
    }
    waiter.cv.wait(lock, [&waiter] { return waiter.granted; });
  }
  handle.adopt(this, admission.id, mode);
  return handle;
}

std::optional<RwHandle> KeyedRwMutex::try_acquire(std::string_view key_text, RwMode mode) {
  const KeyRef key(key_text);
  std::optional<RwHandle> handle(RwHandle{key});
  Shard& shard = shard_for(key);
  std::lock_guard lock(shard.mutex);
  const std::optional<RequestId> id = shard.core.try_acquire(key, mode);
  if (!id) return std::nullopt;
  handle->adopt(this, *id, mode);
  return handle;
}

void KeyedRwMutex::release(const KeyRef& key, RequestId id, RwMode mode) noexcept {
  Shard& shard = shard_for(key);
  std::lock_guard lock(shard.mutex);
  shard.core.release(key, id, mode, shard.granted);
  if (!shard.granted.empty()) wake_granted(shard);  // nothing to wake on an uncontended release
}

size_t KeyedRwMutex::key_count() const {
  size_t total = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard lock(shard.mutex);
    total += shard.core.key_count();
  }
  return total;
}

}  // namespace lockstep::keyed
