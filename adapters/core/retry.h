#pragma once
// Retry settings for acquire(): how long to wait between attempts when the key is contended.
//
// Exactly one of two shapes:
// - fixed: retry_delay_ms and retry_times (both > 0), optionally jittered by up to
//   retry_jitter_ms (drawn from the Random seam) so contenders do not retry in lock step;
// - custom: retry_delay_fn, which sees the attempt and returns the next delay, or calls stop().
// Either may add total_time_ms, a hard cap on the whole acquire that is never overshot: an attempt
// is made only if it starts within the cap, and a sleep is shortened to end at the cap.
// retry_times counts retries after the first attempt: at most 1 + retry_times attempts.
// validate() rejects contradictory or out-of-range settings with a ValidationError naming the
// parameter. Default-constructed settings mean "no retries": one attempt, then RetryError.
#include <cstdint>
#include <functional>
#include <optional>

namespace lockstep {

struct RetrySettings;

struct RetryAttempt {
  int attempt_number = 0;         // zero-based index of the attempt that just failed
  int64_t started_at_ms = 0;      // local time when acquire began
  int64_t previous_delay_ms = 0;  // the delay returned for the previous attempt (0 at first)
  const RetrySettings* settings = nullptr;
  std::function<void()> stop{};  // call to stop retrying; the returned delay is then ignored
};

struct RetrySettings {
  std::optional<int64_t> retry_delay_ms{};
  std::optional<int> retry_times{};
  std::optional<int64_t> total_time_ms{};
  int64_t retry_jitter_ms = 0;
  std::function<int64_t(const RetryAttempt&)> retry_delay_fn{};

  static RetrySettings none() { return RetrySettings{.retry_times = 0}; }
};

// Limits, documented so users know where validation draws the line.
inline constexpr int kMaxRetryTimes = 1'000'000;
inline constexpr int64_t kRetryDelayMaxMs = 3'600'000;  // one hour
// The longest a fixed schedule can take; also keeps start + total_time_ms far from overflow.
inline constexpr int64_t kTotalTimeMaxMs = kRetryDelayMaxMs * kMaxRetryTimes;

// Throws ValidationError when settings are contradictory or out of range.
void validate(const RetrySettings& settings);

}  // namespace lockstep
