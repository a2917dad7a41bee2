#include "services/memory/adapter/memory_adapter.h"

#include <utility>

#include "adapters/core/locker.h"
#include "base/check.h"

namespace lockstep {
namespace {

AdapterResult with_status(AdapterStatus status) { return AdapterResult{.status = status}; }

// The Lock API validates before calling; this guards direct callers and the TTL arithmetic.
bool valid_request(const LockSpec& spec, int64_t ttl_ms) {
  return !spec.key.empty() && ttl_ms > 0 && ttl_ms <= kTtlMaxMs;
}

AdapterResult invalid_request(const LockSpec& spec, int64_t ttl_ms) {
  return AdapterResult{.status = AdapterStatus::backend_error,
                       .message = "invalid request: key \"" + spec.key + "\" with ttl_ms " +
                                  std::to_string(ttl_ms) + " (need a non-empty key and 0 < " +
                                  "ttl_ms <= " + std::to_string(kTtlMaxMs) + ")"};
}

}  // namespace

MemoryAdapter::MemoryAdapter(MemoryAdapterOptions options) : options_(std::move(options)) {
  LOCKSTEP_CHECK(options_.clock != nullptr, "MemoryAdapterOptions.clock is required");
}

// A lease covers [granted, granted + ttl): at exactly expires_at_us it is gone.
MemoryAdapter::Entry* MemoryAdapter::live_entry(const std::string& key, int64_t now_us) {
  const auto it = locks_.find(key);
  if (it == locks_.end()) return nullptr;
  if (now_us >= it->second.expires_at_us) {
    locks_.erase(it);
    return nullptr;
  }
  return &it->second;
}

// The observer is called under the mutex so that events reach it in the order they took effect;
// it must not block or call back into this adapter.
AdapterResult MemoryAdapter::create_lock(const LockSpec& spec) {
  if (!valid_request(spec, spec.ttl_ms)) return invalid_request(spec, spec.ttl_ms);
  std::lock_guard<std::mutex> guard(mutex_);
  const int64_t now_us = options_.clock->monotonic_us();
  // Held by anyone, this same owner included: locks are not reentrant.
  if (live_entry(spec.key, now_us) != nullptr) return with_status(AdapterStatus::contended);
  // An expired entry, if any, was dropped above: its lease had ended by this store's clock.
  const uint64_t token = ++fencing_counters_[spec.key];
  const int64_t ttl_us = spec.ttl_ms * 1000;
  locks_[spec.key] = Entry{.value = spec.value, .expires_at_us = now_us + ttl_us};
  if (options_.observer != nullptr) {
    options_.observer->on_grant(options_.server_name, spec.key, spec.value, ttl_us, token);
  }
  return AdapterResult{.status = AdapterStatus::ok, .fencing_token = token};
}

AdapterResult MemoryAdapter::release_lock(const LockSpec& spec) {
  std::lock_guard<std::mutex> guard(mutex_);
  Entry* entry = live_entry(spec.key, options_.clock->monotonic_us());
  if (entry == nullptr) return with_status(AdapterStatus::not_owner);
  if (entry->value != spec.value) return with_status(AdapterStatus::not_owner);
  const std::string owner = std::move(entry->value);
  locks_.erase(spec.key);
  if (options_.observer != nullptr) {
    options_.observer->on_revoke(options_.server_name, spec.key, owner, RevokeCause::release);
  }
  return with_status(AdapterStatus::ok);
}

// Owner-checked, and never re-creates: a lock that is gone stays gone.
AdapterResult MemoryAdapter::extend_lock(const LockSpec& spec, int64_t ttl_ms) {
  if (!valid_request(spec, ttl_ms)) return invalid_request(spec, ttl_ms);
  std::lock_guard<std::mutex> guard(mutex_);
  const int64_t now_us = options_.clock->monotonic_us();
  Entry* entry = live_entry(spec.key, now_us);
  if (entry == nullptr || entry->value != spec.value) return with_status(AdapterStatus::not_owner);
  const int64_t ttl_us = ttl_ms * 1000;
  entry->expires_at_us = now_us + ttl_us;
  if (options_.observer != nullptr) {
    options_.observer->on_extend(options_.server_name, spec.key, spec.value, ttl_us);
  }
  return with_status(AdapterStatus::ok);
}

AdapterResult MemoryAdapter::is_valid_lock(const LockSpec& spec) {
  std::lock_guard<std::mutex> guard(mutex_);
  const Entry* entry = live_entry(spec.key, options_.clock->monotonic_us());
  const bool owned = entry != nullptr && entry->value == spec.value;
  return with_status(owned ? AdapterStatus::ok : AdapterStatus::not_owner);
}

size_t MemoryAdapter::purge_expired() {
  std::lock_guard<std::mutex> guard(mutex_);
  const int64_t now_us = options_.clock->monotonic_us();
  return std::erase_if(locks_,
                       [now_us](const auto& item) { return now_us >= item.second.expires_at_us; });
}

size_t MemoryAdapter::size() {
  std::lock_guard<std::mutex> guard(mutex_);
  const int64_t now_us = options_.clock->monotonic_us();
  size_t live = 0;
  for (const auto& [key, entry] : locks_) live += now_us < entry.expires_at_us ? 1 : 0;
  return live;
}

}  // namespace lockstep
