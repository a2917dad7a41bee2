#include "adapters/core/locker.h"

#include <algorithm>
#include <string_view>

#include "adapters/core/errors.h"
#include "base/check.h"

namespace lockstep {
namespace {

void validate_options(const LockerOptions& options) {
  if (options.adapter == nullptr) throw ValidationError("adapter", "is required (got nullptr)");
  if (options.clock == nullptr) throw ValidationError("clock", "is required (got nullptr)");
  if (options.random == nullptr) throw ValidationError("random", "is required (got nullptr)");
  validate(options.retry);
}

std::string quoted(const std::string& key) { return "\"" + key + "\""; }

// A status the operation cannot return, or a backend failure: both mean we do not know the truth.
[[noreturn]] void throw_backend_error(const LockAdapter& adapter, std::string_view operation,
                                      const LockSpec& spec, const AdapterResult& result) {
  const std::string detail = result.status == AdapterStatus::backend_error
                                 ? result.message
                                 : "unexpected status " + std::string(to_string(result.status));
  throw BackendError(std::string(adapter.name()) + " " + std::string(operation) + " of lock " +
                     quoted(spec.key) + " failed: " + detail);
}

// Attempts one acquire may make: 1 + retry_times. A delay function without retry_times is
// still bounded, by kMaxRetryTimes retries.
int max_attempts(const RetrySettings& settings) {
  if (settings.retry_times) return 1 + *settings.retry_times;
  return settings.retry_delay_fn ? 1 + kMaxRetryTimes : 1;
}

struct RetryProgress {
  int attempt_number = 0;  // the attempt that just failed
  int64_t started_at_ms = 0;
  int64_t previous_delay_ms = 0;
};

// The delay the retry settings ask for after a failed attempt; nullopt when retry_delay_fn
// called stop().
std::optional<int64_t> next_delay_ms(const RetrySettings& settings, Random& random,
                                     const RetryProgress& progress) {
  if (!settings.retry_delay_fn) {
    const int64_t jitter_ms = settings.retry_jitter_ms;
    const uint64_t extra_ms =
        jitter_ms > 0 ? random.below(static_cast<uint64_t>(jitter_ms) + 1) : 0;
    return settings.retry_delay_ms.value_or(0) + static_cast<int64_t>(extra_ms);
  }
  bool stopped = false;
  const int64_t delay_ms = settings.retry_delay_fn(RetryAttempt{
      .attempt_number = progress.attempt_number,
      .started_at_ms = progress.started_at_ms,
      .previous_delay_ms = progress.previous_delay_ms,
      .settings = &settings,
      .stop = [&stopped] { stopped = true; },
  });
  if (stopped) return std::nullopt;
  if (delay_ms < 0 || delay_ms > kRetryDelayMaxMs) {
    throw ValidationError("retry_delay_fn", "returned " + std::to_string(delay_ms) +
                                                " ms; a delay must be in [0, " +
                                                std::to_string(kRetryDelayMaxMs) + "] ms");
  }
  return delay_ms;
}

// Sleeps delay_ms, cut short to end at the deadline. False when the deadline has passed (or
// passes during the sleep), so no further attempt may start.
bool sleep_within_deadline(Clock& clock, int64_t delay_ms, std::optional<int64_t> deadline_us) {
  const int64_t delay_us = delay_ms * 1000;
  if (!deadline_us) {
    clock.sleep_for_us(delay_us);
    return true;
  }
  const int64_t remaining_us = *deadline_us - clock.monotonic_us();
  if (remaining_us <= 0) return false;
  clock.sleep_for_us(std::min(delay_us, remaining_us));
  return clock.monotonic_us() <= *deadline_us;
}

std::string exhausted_reason(const RetrySettings& settings) {
  if (settings.retry_times.value_or(0) > 0) {
    return "retries exhausted (retry_times = " + std::to_string(*settings.retry_times) + ")";
  }
  if (!settings.retry_times && settings.retry_delay_fn) {
    return "retries exhausted (the limit is kMaxRetryTimes = " + std::to_string(kMaxRetryTimes) +
           ")";
  }
  return "no retries configured";
}

RetryError give_up(const std::string& key, int attempts, const std::string& why) {
  const LockCreateError cause(key);
  return RetryError("could not acquire lock " + quoted(key) + " after " + std::to_string(attempts) +
                        " attempt(s): " + why + "; last cause: " + cause.what(),
                    attempts, std::make_exception_ptr(cause));
}

}  // namespace

void validate_key(const std::string& key) {
  if (key.empty()) throw ValidationError("key", "must not be empty");
  if (key.size() > kKeyMaxBytes) {
    throw ValidationError("key", "is " + std::to_string(key.size()) + " bytes; the limit is " +
                                     std::to_string(kKeyMaxBytes));
  }
}

void validate_ttl_ms(int64_t ttl_ms, const char* parameter) {
  if (ttl_ms <= 0) {
    throw ValidationError(parameter, "must be > 0 ms, got " + std::to_string(ttl_ms));
  }
  if (ttl_ms > kTtlMaxMs) {
    throw ValidationError(parameter, "must be <= " + std::to_string(kTtlMaxMs) +
                                         " ms (24 h), got " + std::to_string(ttl_ms));
  }
}

Lock::Lock(LockerOptions options, std::string key, int64_t ttl_ms) : options_(std::move(options)) {
  validate_options(options_);
  validate_key(key);
  validate_ttl_ms(ttl_ms);
  // Drawn only after validation, so a rejected lock does not consume randomness.
  spec_ =
      LockSpec{.key = std::move(key), .value = options_.random->hex_token(16), .ttl_ms = ttl_ms};
}

Lock& Lock::acquire() {
  Clock& clock = *options_.clock;
  const RetrySettings& settings = options_.retry;
  const int64_t started_at_us = clock.monotonic_us();
  std::optional<int64_t> deadline_us;
  if (settings.total_time_ms) deadline_us = started_at_us + *settings.total_time_ms * 1000;
  RetryProgress progress{.started_at_ms = started_at_us / 1000};
  fencing_token_.reset();
  attempts_ = 0;

  const int attempts_max = max_attempts(settings);
  for (int attempt = 0; attempt < attempts_max; ++attempt) {
    attempts_ = attempt + 1;
    const int64_t attempt_started_us = clock.monotonic_us();
    AdapterResult result = options_.adapter->create_lock(spec_);
    if (result.ok() && !options_.adapter->is_whole_library() &&
        clock.monotonic_us() - attempt_started_us >= spec_.ttl_ms * 1000) {
      // The grant arrived after its whole TTL had passed (a slow reply, a pause): the lease may
      // already belong to someone else. Never report it as held; clean up and count it as failed.
      options_.adapter->release_lock(spec_);
      result = {.status = AdapterStatus::contended};
    }
    if (result.ok()) {
      if (fencing() == FencingSupport::monotonic) fencing_token_ = result.fencing_token;
      acquired_ = true;
      acquired_at_us_ = attempt_started_us;
      lease_sent_at_us_ = attempt_started_us;
      lease_ttl_ms_ = spec_.ttl_ms;
      return *this;
    }
    if (result.status != AdapterStatus::contended) {
      throw_backend_error(*options_.adapter, "create", spec_, result);  // never retried
    }
    if (attempts_ == attempts_max) break;
    progress.attempt_number = attempt;
    const std::optional<int64_t> delay_ms = next_delay_ms(settings, *options_.random, progress);
    if (!delay_ms) throw give_up(spec_.key, attempts_, "stopped by retry_delay_fn");
    progress.previous_delay_ms = *delay_ms;
    if (!sleep_within_deadline(clock, *delay_ms, deadline_us)) {
      throw give_up(spec_.key, attempts_,
                    "total_time_ms = " + std::to_string(*settings.total_time_ms) + " spent");
    }
  }
  throw give_up(spec_.key, attempts_, exhausted_reason(settings));
}

bool Lock::release(ReleaseOptions options) {
  const AdapterResult result = options_.adapter->release_lock(spec_);
  switch (result.status) {
    case AdapterStatus::ok: return true;
    case AdapterStatus::not_owner:
      if (options.throw_on_fail) {
        throw LockReleaseError("lock " + quoted(spec_.key) +
                               " was not released: it expired or is held by another owner");
      }
      return false;
    default: throw_backend_error(*options_.adapter, "release", spec_, result);
  }
}

void Lock::release_after_failure() {
  try {
    release();
  } catch (const std::exception&) {
    // Swallowed on purpose: the callback's exception is already propagating.
  }
}

void Lock::extend(int64_t ttl_ms) {
  validate_ttl_ms(ttl_ms);
  Clock& clock = *options_.clock;
  const int64_t sent_at_us = clock.monotonic_us();
  const AdapterResult result = options_.adapter->extend_lock(spec_, ttl_ms);
  if (result.ok() && clock.monotonic_us() - sent_at_us >= ttl_ms * 1000) {
    throw LockExtendError("lock " + quoted(spec_.key) + ": the extend's reply came after its " +
                          std::to_string(ttl_ms) +
                          " ms had passed, so the lease may have ended; not reported as held");
  }
  if (result.ok()) {
    lease_sent_at_us_ = sent_at_us;
    lease_ttl_ms_ = ttl_ms;
    return;
  }
  if (result.status == AdapterStatus::not_owner) {
    throw LockExtendError("lock " + quoted(spec_.key) +
                          " is no longer held by this owner (it expired or another owner took "
                          "it); extend does not re-create it");
  }
  throw_backend_error(*options_.adapter, "extend", spec_, result);
}

int64_t Lock::valid_until_us() const {
  if (!acquired_) return 0;
  return options_.adapter->validity_end_us(spec_, lease_sent_at_us_, lease_ttl_ms_);
}

bool Lock::is_locked() {
  const AdapterResult result = options_.adapter->is_valid_lock(spec_);
  if (result.ok()) return true;
  if (result.status == AdapterStatus::not_owner) return false;
  throw_backend_error(*options_.adapter, "validity check", spec_, result);
}

Lock Lock::with_retry(RetrySettings settings) const {
  if (acquired_) {
    throw ValidationError("retry", "with_retry() must be called before acquire(); lock " +
                                       quoted(spec_.key) + " was already acquired");
  }
  validate(settings);
  Lock copy = *this;
  copy.options_.retry = std::move(settings);
  copy.attempts_ = 0;
  return copy;
}

Locker::Locker(LockerOptions options) : options_(std::move(options)) { validate_options(options_); }

Lock Locker::lock(std::string key, int64_t ttl_ms) const {
  return Lock(options_, std::move(key), ttl_ms);
}

}  // namespace lockstep
