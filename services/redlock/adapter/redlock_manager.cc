#include "services/redlock/adapter/redlock_manager.h"

#include <algorithm>

#include <fmt/format.h>

#include "adapters/core/locker.h"

namespace lockstep {

namespace {

std::string counts(const NodeVotes& v, int nodes, int quorum) {
  std::string out =
      fmt::format("{} of {} node(s) granted, {} refused, {} failed (a majority is {})", v.yes,
                  nodes, v.no, v.failed, quorum);
  if (!v.failures.empty()) out += ": " + v.failures;
  return out;
}

}  // namespace

RedlockLock::RedlockLock(RedlockManager& manager, std::string key, std::string value,
                         RedlockSettings settings, int64_t start_us, int64_t valid_until_us)
    : manager_(&manager),
      key_(std::move(key)),
      value_(std::move(value)),
      settings_(settings),
      start_us_(start_us),
      valid_until_us_(valid_until_us) {}

int64_t RedlockLock::remaining_ms() const {
  return std::max<int64_t>(0, valid_until_us_ - manager_->clock().monotonic_us()) / 1000;
}

void RedlockLock::extend(const RedlockOverrides& overrides) {
  RedlockOverrides o = overrides;
  if (!o.duration_ms) o.duration_ms = settings_.duration_ms;
  if (!o.max_hold_time_ms) o.max_hold_time_ms = settings_.max_hold_time_ms;
  const RedlockSettings s = apply(manager_->defaults(), o);
  validate_ttl_ms(s.duration_ms, "duration_ms");
  Clock& clock = manager_->clock();
  const int64_t started_us = clock.monotonic_us();
  if (started_us >= valid_until_us_) {
    throw RedlockError(
        RedlockErrorCause::no_longer_valid,
        fmt::format("lock \"{}\" ran out {} ms ago", key_, (started_us - valid_until_us_) / 1000));
  }
  if (started_us + s.duration_ms * 1000 > start_us_ + settings_.max_hold_time_ms * 1000) {
    throw RedlockError(
        RedlockErrorCause::max_hold_exceeded,
        fmt::format("extending lock \"{}\" by {} ms would hold it past its max hold time of {} ms",
                    key_, s.duration_ms, settings_.max_hold_time_ms));
  }
  const int64_t timeout_us = std::min(s.request_timeout_ms, s.duration_ms - 1) * 1000;
  const NodeVotes votes =
      extend_all(manager_->fanout(), manager_->lock_key(key_), value_, s.duration_ms, timeout_us);
  const int64_t answered_us = clock.monotonic_us();
  const int64_t validity = validity_us(s.duration_ms, answered_us - started_us, s);
  if (votes.yes >= manager_->quorum() && validity > 0) {
    // What is left from now: started_us + duration - drift (validity already lacks the elapsed
    // time; counting it from started_us would subtract that twice).
    valid_until_us_ = answered_us + validity;
    return;
  }
  // The lock is over for its holder from now, but its leases are left to run out by their TTL: the
  // validity reported before this extend still stands for a holder in the middle of a step, and
  // deleting the leases would hand the key to another client inside it.
  valid_until_us_ = std::min(valid_until_us_, answered_us);
  throw RedlockError(RedlockErrorCause::no_longer_valid,
                     fmt::format("extend of lock \"{}\": {}", key_,
                                 counts(votes, manager_->nodes(), manager_->quorum())));
}

bool RedlockLock::release() {
  const NodeVotes votes = manager_->release_value(key_, value_, settings_.request_timeout_ms);
  valid_until_us_ = std::min(valid_until_us_, manager_->clock().monotonic_us());
  if (votes.answered() < manager_->quorum()) {
    throw RedlockError(RedlockErrorCause::release_failure,
                       fmt::format("lock \"{}\": only {} of {} node(s) answered: {}", key_,
                                   votes.answered(), manager_->nodes(), votes.failures));
  }
  return votes.yes > 0;
}

RedlockManager::RedlockManager(RedlockOptions options) : options_(std::move(options)) {
  if (options_.fanout == nullptr || options_.fanout->size() == 0) {
    throw ValidationError("fanout", "is required and must reach at least one node");
  }
  if (options_.clock == nullptr) throw ValidationError("clock", "is required (got nullptr)");
  if (options_.random == nullptr) throw ValidationError("random", "is required (got nullptr)");
  validate(options_.settings);
}

RedlockAttempt RedlockManager::try_acquire(const std::string& key, const std::string& value,
                                           const RedlockSettings& s) {
  Clock& clock = *options_.clock;
  const int64_t started_us = clock.monotonic_us();
  const NodeVotes votes =
      lock_all(*options_.fanout, lock_key(key), value, s.duration_ms, s.request_timeout_ms * 1000);
  const int64_t answered_us = clock.monotonic_us();
  const int64_t validity = validity_us(s.duration_ms, answered_us - started_us, s);
  if (votes.yes >= quorum() && validity > 0) {
    // Every node's lease began after started_us, so the lock is valid until started_us +
    // duration - drift, i.e. `validity` from now (not from started_us: that would subtract the
    // time spent acquiring twice and report a lock already ended once it exceeds half the TTL).
    return {.lock = RedlockLock(*this, key, value, s, started_us, answered_us + validity)};
  }
  // Step 5: unlock everywhere, also where no answer came (a grant may have landed there).
  release_value(key, value, s.request_timeout_ms);
  RedlockAttempt failed{.message =
                            fmt::format("lock \"{}\": {}", key, counts(votes, nodes(), quorum()))};
  if (votes.yes >= quorum()) {
    failed.cause = RedlockErrorCause::took_too_long;
    failed.message += fmt::format("; acquiring took {} us, leaving no validity",
                                  clock.monotonic_us() - started_us);
  } else if (votes.answered() < quorum()) {
    failed.cause = RedlockErrorCause::not_enough_clients;
  }
  return failed;
}

RedlockLock RedlockManager::acquire(const std::string& key, const RedlockOverrides& overrides) {
  validate_key(key);
  const RedlockSettings s = apply(options_.settings, overrides);
  validate(s);
  const std::string value = options_.random->hex_token(16);
  RedlockAttempt attempt;
  for (int i = 0; i <= s.retry_count; ++i) {
    if (i > 0) {
      const auto delay_ms =
          static_cast<int64_t>(options_.random->below(static_cast<uint64_t>(s.retry_delay_ms) + 1));
      options_.clock->sleep_for_ms(delay_ms);
    }
    attempt = try_acquire(key, value, s);
    if (attempt.lock) return std::move(*attempt.lock);
  }
  throw RedlockError(attempt.cause,
                     attempt.message + fmt::format(" (after {} attempt(s))", s.retry_count + 1));
}

NodeVotes RedlockManager::release_value(const std::string& key, const std::string& value,
                                        int64_t timeout_ms) {
  return unlock_all(*options_.fanout, lock_key(key), value, timeout_ms * 1000);
}

}  // namespace lockstep
