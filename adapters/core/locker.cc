#include "adapters/core/locker.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <mutex>
#include <string_view>
#include <utility>

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

// What a caller can still rely on after each operation whose outcome is unknown, and what to do.
std::string_view unknown_outcome_advice(std::string_view operation) {
  if (operation == "create") {
    return "the lock may have been granted to this value: it is not reported as held; release() "
           "it to free the key now, or leave it to expire with its TTL";
  }
  if (operation == "extend") {
    return "the lease may or may not have been set to the new TTL: valid_until_us() is now the "
           "earlier of the validity known before and the new TTL from when the extend was sent; "
           "extend again or stop working before it";
  }
  return "the lock may or may not have been removed: it ends with its TTL at the latest; "
         "release() again to make sure";
}

// A status the operation cannot return, or a backend failure: both mean we do not know the truth.
// A write whose reply never came says so, and what the caller can do about it.
[[noreturn]] void throw_backend_error(const LockAdapter& adapter, std::string_view operation,
                                      const LockSpec& spec, const AdapterResult& result) {
  const std::string what =
      std::string(adapter.name()) + " " + std::string(operation) + " of lock " + quoted(spec.key);
  if (result.status == AdapterStatus::outcome_unknown) {
    throw LockOutcomeUnknownError(what + ": outcome unknown (" + result.message +
                                  "): " + std::string(unknown_outcome_advice(operation)));
  }
  const std::string detail = result.status == AdapterStatus::backend_error
                                 ? result.message
                                 : "unexpected status " + std::string(to_string(result.status));
  throw BackendError(what + " failed: " + detail);
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

// last_detail: what the adapter said about the last refused attempt ("" when only "contended").
RetryError give_up(const std::string& key, int attempts, const std::string& why,
                   const std::string& last_detail) {
  const LockCreateError cause(key, last_detail);
  return RetryError("could not acquire lock " + quoted(key) + " after " + std::to_string(attempts) +
                        " attempt(s): " + why + "; last cause: " + cause.what(),
                    attempts, std::make_exception_ptr(cause));
}

}  // namespace

// What a Lock and its extending task share. valid_until_us and lost are written by the task and
// read by the holder (another thread, for real), so they are atomics; the reason under a mutex.
// Or, for a client that renews its locks itself (LockAdapter::renews_itself), that client and the
// lock it renews: it keeps the validity and the loss, and stop() ends its renewals.
struct AutoExtension {
  std::atomic<int64_t> valid_until_us{0};
  std::atomic<bool> lost{false};
  std::mutex mutex;
  std::string lost_reason;  // guarded by mutex
  std::unique_ptr<BackgroundTask> task;
  LockAdapter* renewing_client = nullptr;  // set while a client's own renewals run
  LockSpec renewing_spec;
  // A renewing client's: who is told of a later validity, and the latest it was told of (or the
  // grant's). Read and written by the holder's polls only.
  std::function<void(int64_t)> on_renewed;
  int64_t renewed_until_us = 0;

  void mark_lost(std::string why) {
    {
      std::lock_guard lock(mutex);
      lost_reason = std::move(why);
    }
    lost.store(true);
  }
  void stop() {
    if (renewing_client != nullptr) {
      LockAdapter* client = std::exchange(renewing_client, nullptr);
      client->stop_renewing(renewing_spec);
    }
    if (!task) return;
    task->request_stop();
    task->join();
  }
  ~AutoExtension() { stop(); }
};

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
  if (options_.gate == nullptr && options_.background != nullptr) {
    options_.gate = options_.background->make_gate();
  }
  validate_key(key);
  validate_ttl_ms(ttl_ms);
  // Drawn only after validation, so a rejected lock does not consume randomness.
  spec_ =
      LockSpec{.key = std::move(key), .value = options_.random->hex_token(16), .ttl_ms = ttl_ms};
  first_value_ = spec_.value;
}

void Lock::next_attempt_value() {
  // The first attempt writes the drawn value; each later one (a retry, or an acquire again after a
  // release) the same with its last 8 hex digits advanced by the attempt's serial: unique among
  // this Lock's attempts, as unlikely as the drawn value to be another Lock's, and no draw.
  // A Random seam whose tokens are not hex gets the serial as a suffix instead.
  const uint32_t serial = attempt_serial_++;
  if (serial == 0) return;
  constexpr size_t kTailDigits = 8;
  uint32_t tail = 0;
  const size_t head = first_value_.size() > kTailDigits ? first_value_.size() - kTailDigits : 0;
  const char* const end = first_value_.data() + first_value_.size();
  const auto [parsed_to, error] = std::from_chars(first_value_.data() + head, end, tail, 16);
  if (head == 0 || error != std::errc() || parsed_to != end) {
    spec_.value = first_value_ + "." + std::to_string(serial);
    return;
  }
  char digits[kTailDigits + 1];
  std::snprintf(digits, sizeof(digits), "%08x", static_cast<unsigned>(tail + serial));
  spec_.value = first_value_.substr(0, head) + digits;
}

Lock& Lock::acquire() {
  if (std::optional<RetryError> gave_up = try_acquire()) throw std::move(*gave_up);
  return *this;
}

std::optional<RetryError> Lock::try_acquire() {
  Clock& clock = *options_.clock;
  const RetrySettings& settings = options_.retry;
  const int64_t started_at_us = clock.monotonic_us();
  std::optional<int64_t> deadline_us;
  if (settings.total_time_ms) deadline_us = started_at_us + *settings.total_time_ms * 1000;
  RetryProgress progress{.started_at_ms = started_at_us / 1000};
  fencing_token_.reset();
  attempts_ = 0;
  if (auto_) {
    throw ValidationError("auto_extend", "acquire() again while the lock is auto-extending");
  }

  // A client that retries by itself gets one call: its loop, not this one, decides (adapter.h).
  const bool retries_itself = options_.adapter->retries_itself();
  const bool whole_library = retries_itself || options_.adapter->is_whole_library();
  const int attempts_max = retries_itself ? 1 : max_attempts(settings);
  std::string last_detail;  // the adapter's word on the last refusal
  for (int attempt = 0; attempt < attempts_max; ++attempt) {
    attempts_ = attempt + 1;
    next_attempt_value();
    const int64_t attempt_started_us = clock.monotonic_us();
    LeaseCall call = call_for_lease([&] { return options_.adapter->create_lock(spec_); },
                                    attempt_started_us, spec_.ttl_ms);
    AdapterResult& result = call.result;
    if (result.ok() && !whole_library &&
        clock.monotonic_us() - attempt_started_us >= spec_.ttl_ms * 1000) {
      // The grant arrived after its whole TTL had passed (a slow reply, a pause): the lease may
      // already belong to someone else. Never report it as held; clean up and count it as failed.
      // A give-back that did not come back done may leave the lease on the server (one longer
      // than the TTL asked, as etcd's whole seconds): then the acquire's outcome is unknown.
      const AdapterResult given_back = gated([&] { return options_.adapter->release_lock(spec_); });
      const bool gone = given_back.ok() || given_back.status == AdapterStatus::not_owner;
      result = gone ? AdapterResult{.status = AdapterStatus::contended,
                                    .message =
                                        "the grant came after the whole TTL had passed "
                                        "(released again)"}
                    : AdapterResult{.status = AdapterStatus::outcome_unknown,
                                    .message =
                                        "the grant came after the whole TTL had passed, "
                                        "and giving it back failed (" +
                                        given_back.message + ")"};
    }
    if (result.ok()) {
      if (fencing() == FencingSupport::monotonic) fencing_token_ = result.fencing_token;
      acquired_ = true;
      released_ = false;
      acquired_at_us_ = attempt_started_us;
      lease_valid_until_us_ = call.valid_until_us;
      validity_reported_ = call.validity_reported;
      validity_cap_us_ = kNoValidityCap;
      refused_reason_.clear();
      return std::nullopt;
    }
    if (result.status != AdapterStatus::contended) {
      throw_backend_error(*options_.adapter, "create", spec_, result);  // never retried
    }
    last_detail = std::move(result.message);
    if (attempts_ == attempts_max) break;
    progress.attempt_number = attempt;
    const std::optional<int64_t> delay_ms = next_delay_ms(settings, *options_.random, progress);
    if (!delay_ms) return give_up(spec_.key, attempts_, "stopped by retry_delay_fn", last_detail);
    progress.previous_delay_ms = *delay_ms;
    if (!sleep_within_deadline(clock, *delay_ms, deadline_us)) {
      return give_up(spec_.key, attempts_,
                     "total_time_ms = " + std::to_string(*settings.total_time_ms) + " spent",
                     last_detail);
    }
  }
  return give_up(spec_.key, attempts_, exhausted_reason(settings), last_detail);
}

bool Lock::release(ReleaseOptions options) {
  // The extensions stop first: a release and an extension in flight must not share the adapter,
  // and an extension after the release would be refused anyway.
  if (auto_) {
    auto_->stop();
    auto_.reset();
  }
  released_ = true;
  const AdapterResult result = gated([&] { return options_.adapter->release_lock(spec_); });
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
  if (std::optional<LockExtendError> refused = try_extend(ttl_ms)) throw std::move(*refused);
}

std::optional<LockExtendError> Lock::try_extend(int64_t ttl_ms) {
  validate_ttl_ms(ttl_ms);
  if (auto_) throw ValidationError("extend", "the lock is auto-extending (auto_extend())");
  Clock& clock = *options_.clock;
  const int64_t sent_at_us = clock.monotonic_us();
  const LeaseCall call = call_for_lease(
      [&] { return options_.adapter->extend_lock(spec_, ttl_ms); }, sent_at_us, ttl_ms);
  const AdapterResult& result = call.result;
  const int64_t returned_us = clock.monotonic_us();
  // Late: after the TTL asked (the server set the lease to it when the extend arrived, so it may
  // end before the one known before, and has by now), or within it but past the validity the
  // adapter can promise for it (a session lock's is cut to how soon the server may end a silent
  // session): over before it returned, so not held. The lease is capped at that validity.
  std::string late;
  if (result.ok() && returned_us - sent_at_us >= ttl_ms * 1000) {
    late =
        "came after its " + std::to_string(ttl_ms) + " ms had passed, so the lease may have ended";
  } else if (result.ok() && returned_us >= call.valid_until_us) {
    late = "came after the validity it gave had ended (" +
           std::to_string(returned_us - call.valid_until_us) + " us ago)";
  }
  if (!late.empty()) {
    validity_cap_us_ = std::min(validity_cap_us_, call.valid_until_us);
    return LockExtendError("lock " + quoted(spec_.key) + ": the extend's reply " + late +
                           "; not reported as held");
  }
  if (result.ok()) {
    lease_valid_until_us_ = call.valid_until_us;
    validity_reported_ = call.validity_reported;
    validity_cap_us_ = kNoValidityCap;  // the server's lease is this extend's, whatever came before
    return std::nullopt;
  }
  if (result.status == AdapterStatus::not_owner) {
    // The adapter may know why (Redlock: the maximum hold time, a lost quorum): keep its word.
    std::string why = "lock " + quoted(spec_.key) + " is no longer held by this owner" +
                      (result.message.empty() ? " (it expired or another owner took it)"
                                              : " (" + result.message + ")") +
                      "; extend does not re-create it";
    refused_reason_ = "an extend was refused: " + why;
    return LockExtendError(std::move(why));
  }
  // Applied or not, nobody can tell: the lease is the old one or the new TTL's, whichever ends
  // first.
  validity_cap_us_ = std::min(validity_cap_us_, call.valid_until_us);
  throw_backend_error(*options_.adapter, "extend", spec_, result);
}

int64_t Lock::valid_until_us() const {
  if (!acquired_) return 0;
  if (auto_ && auto_->renewing_client != nullptr)
    return auto_->renewing_client->renewal_state(spec_).valid_until_us;
  if (auto_) return auto_->valid_until_us.load();
  return std::min(validity_cap_us_, lease_valid_until_us_);
}

bool Lock::is_locked() {
  if (auto_) throw ValidationError("is_locked", "the lock is auto-extending: poll lost() instead");
  const AdapterResult result = gated([&] { return options_.adapter->is_valid_lock(spec_); });
  if (result.ok()) return true;
  if (result.status == AdapterStatus::not_owner) return false;
  throw_backend_error(*options_.adapter, "validity check", spec_, result);
}

void Lock::auto_extend(AutoExtendOptions options) {
  if (!acquired_ || released_) {
    throw ValidationError("auto_extend", "needs a held lock: call it after acquire()");
  }
  if (auto_) throw ValidationError("auto_extend", "the lock is auto-extending already");
  if (options_.adapter->renews_itself()) return renew_by_client(options);
  if (options_.background == nullptr) {
    throw ValidationError("background", "auto_extend() needs LockerOptions::background");
  }
  const int64_t ttl_ms = spec_.ttl_ms;
  const int64_t every_ms = renewal_every_ms(options);
  auto state = std::make_shared<AutoExtension>();
  state->valid_until_us.store(valid_until_us());
  // The task holds raw pointers: the adapter and clock outlive every Lock over them, and the state
  // outlives the task's every step but a stopped one (its owner stops and joins the task before
  // freeing it; a simulated join that cannot wait leaves a stopped task, which returns untouched).
  AutoExtension* shared = state.get();
  LockAdapter* adapter = options_.adapter;
  Clock* clock = options_.clock;
  const LockSpec spec = spec_;
  state->task = options_.background->start(
      "auto-extend " + spec.key,
      [shared, adapter, clock, gate = options_.gate, spec, every_ms, ttl_ms,
       on_renewed = std::move(options.on_renewed)](StopWaiter& stop) {
        for (int64_t renewal = 0; renewal < kAutoExtendRenewalsMax; ++renewal) {
          if (!stop.wait_for_us(every_ms * 1000)) return;
          GatePass pass(gate.get());  // the owner's other locks share the adapter
          const int64_t sent_at_us = clock->monotonic_us();
          const AdapterResult result = adapter->extend_lock(spec, ttl_ms);
          const int64_t returned_us = clock->monotonic_us();
          if (stop.stop_requested()) return;  // released meanwhile: the result is nobody's
          const int64_t valid_until_us =
              result.ok() ? adapter->validity_end_us(spec, sent_at_us, ttl_ms) : 0;
          // Late: after its TTL, or after the validity the adapter can promise for it.
          const bool late =
              returned_us - sent_at_us >= ttl_ms * 1000 || returned_us >= valid_until_us;
          if (result.ok() && !late) {
            shared->valid_until_us.store(valid_until_us);
            if (on_renewed) on_renewed(valid_until_us);
            continue;
          }
          shared->mark_lost(
              result.ok()
                  ? "an extension's reply came after its TTL, or the validity it gave, had passed"
                  : "an extension failed: " + std::string(to_string(result.status)) +
                        (result.message.empty() ? "" : ": " + result.message));
          return;
        }
        shared->mark_lost("kAutoExtendRenewalsMax extensions made");
      });
  auto_ = std::move(state);
}

int64_t Lock::renewal_every_ms(AutoExtendOptions options) const {
  const int64_t ttl_ms = spec_.ttl_ms;
  const int64_t every_ms =
      options.every_ms == 0 ? std::max<int64_t>(ttl_ms / 3, 1) : options.every_ms;
  if (every_ms <= 0 || every_ms >= ttl_ms) {
    throw ValidationError("every_ms", "must be in (0, " + std::to_string(ttl_ms) +
                                          ") ms (the TTL), got " + std::to_string(every_ms));
  }
  return every_ms;
}

void Lock::renew_by_client(AutoExtendOptions options) {
  const int64_t every_ms = renewal_every_ms(options);
  // Outside the gate, as the Locker's own auto-extension starts: a call of another lock of this
  // client (a whole client's acquire loop) may hold it far longer than this holder's validity.
  const AdapterResult started = options_.adapter->start_renewing(spec_, every_ms);
  if (!started.ok()) throw_backend_error(*options_.adapter, "auto-extend", spec_, started);
  auto state = std::make_shared<AutoExtension>();
  state->renewing_client = options_.adapter;
  state->renewing_spec = spec_;
  state->on_renewed = std::move(options.on_renewed);
  state->renewed_until_us = valid_until_us();
  auto_ = std::move(state);
}

bool Lock::lost() { return !lost_reason().empty(); }

std::string Lock::lost_reason() {
  if (!acquired_) return "not acquired";
  if (released_) return "released";
  if (!refused_reason_.empty()) return refused_reason_;
  int64_t until_us = 0;
  if (auto_ && auto_->renewing_client != nullptr) {
    // One read of the client's word: its loss and the validity it goes by.
    RenewalState state = auto_->renewing_client->renewal_state(spec_);
    if (!state.lost_reason.empty()) return std::move(state.lost_reason);
    until_us = state.valid_until_us;
    if (until_us > auto_->renewed_until_us) {
      auto_->renewed_until_us = until_us;
      if (auto_->on_renewed) auto_->on_renewed(until_us);
    }
  } else if (auto_ && auto_->lost.load()) {
    std::lock_guard lock(auto_->mutex);
    return auto_->lost_reason;
  } else {
    until_us = valid_until_us();
  }
  const int64_t now_us = options_.clock->monotonic_us();
  if (now_us >= until_us) {
    return "the validity ended " + std::to_string(now_us - until_us) +
           " us ago by this holder's clock";
  }
  return {};
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

Locker::Locker(LockerOptions options) : options_(std::move(options)) {
  validate_options(options_);
  // One gate for every Lock this Locker makes: they share its adapter.
  if (options_.gate == nullptr && options_.background != nullptr) {
    options_.gate = options_.background->make_gate();
  }
}

Lock Locker::lock(std::string key, int64_t ttl_ms) const {
  return Lock(options_, std::move(key), ttl_ms);
}

}  // namespace lockstep
