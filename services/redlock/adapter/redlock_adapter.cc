#include "services/redlock/adapter/redlock_adapter.h"

#include <algorithm>

namespace lockstep {

RedlockAdapter::RedlockAdapter(RedlockAdapterOptions options)
    : manager_({.fanout = options.fanout,
                .clock = options.clock,
                .random = options.random,
                .settings = options.settings,
                .key_prefix = std::move(options.key_prefix)}) {}

RedlockSettings RedlockAdapter::settings_for(int64_t ttl_ms) const {
  RedlockSettings s = manager_.defaults();
  s.duration_ms = ttl_ms;
  // A round of requests must stay small against a short lease.
  s.request_timeout_ms = std::clamp<int64_t>(std::min(s.request_timeout_ms, ttl_ms / 2), 1, ttl_ms);
  s.max_hold_time_ms = std::max(s.max_hold_time_ms, ttl_ms);
  return s;
}

void RedlockAdapter::prune_expired() {
  const int64_t now_us = manager_.clock().monotonic_us();
  std::erase_if(held_,
                [now_us](const auto& entry) { return entry.second.valid_until_us() <= now_us; });
}

AdapterResult RedlockAdapter::create_lock(const LockSpec& spec) {
  // Locks whose holders walked away without a release are not held any more: they must not use
  // up the cap, which bounds the live ones.
  if (held_.size() >= kHeldLocksMax) prune_expired();
  if (held_.size() >= kHeldLocksMax) {
    return {.status = AdapterStatus::backend_error,
            .message = "this client holds too many Redlock locks"};
  }
  RedlockAttempt attempt = manager_.try_acquire(spec.key, spec.value, settings_for(spec.ttl_ms));
  if (attempt.lock) {
    held_.insert_or_assign(spec.value, std::move(*attempt.lock));
    return {};
  }
  return {.status = AdapterStatus::contended, .message = attempt.message};
}

AdapterResult RedlockAdapter::release_lock(const LockSpec& spec) {
  held_.erase(spec.value);
  const NodeVotes votes =
      manager_.release_value(spec.key, spec.value, settings_for(spec.ttl_ms).request_timeout_ms);
  if (votes.yes >= manager_.quorum()) return {};
  if (votes.answered() >= manager_.quorum()) return {.status = AdapterStatus::not_owner};
  // A delete sent whole and never answered may have run: with those, a quorum may have let go,
  // so "nothing happened" would be a claim nobody can make (adapter.h).
  const bool quorum_maybe_released = votes.yes + votes.maybe_applied >= manager_.quorum();
  return {.status =
              quorum_maybe_released ? AdapterStatus::outcome_unknown : AdapterStatus::backend_error,
          .message =
              std::string(to_string(RedlockErrorCause::release_failure)) + ": " + votes.failures};
}

AdapterResult RedlockAdapter::extend_lock(const LockSpec& spec, int64_t ttl_ms) {
  auto it = held_.find(spec.value);
  if (it == held_.end())
    return {.status = AdapterStatus::not_owner, .message = "no lock held with this value"};
  try {
    it->second.extend(
        {.duration_ms = ttl_ms, .request_timeout_ms = settings_for(ttl_ms).request_timeout_ms});
    return {};
  } catch (const RedlockError& e) {
    held_.erase(it);
    return {.status = AdapterStatus::not_owner, .message = e.what()};
  }
}

AdapterResult RedlockAdapter::is_valid_lock(const LockSpec& spec) {
  auto it = held_.find(spec.value);
  if (it == held_.end() || it->second.remaining_ms() <= 0)
    return {.status = AdapterStatus::not_owner};
  const int64_t timeout_ms = settings_for(spec.ttl_ms).request_timeout_ms;
  const NodeVotes votes =
      check_all(manager_.fanout(), manager_.lock_key(spec.key), spec.value, timeout_ms * 1000);
  if (votes.yes >= manager_.quorum()) return {};
  if (votes.answered() >= manager_.quorum()) return {.status = AdapterStatus::not_owner};
  return {.status = AdapterStatus::backend_error, .message = votes.failures};
}

int64_t RedlockAdapter::validity_end_us(const LockSpec& spec, int64_t requested_at_us,
                                        int64_t /*ttl_ms*/) const {
  auto it = held_.find(spec.value);
  // Released, or failed to extend (and was released everywhere): no validity left.
  if (it == held_.end()) return requested_at_us;
  return it->second.valid_until_us();
}

}  // namespace lockstep
