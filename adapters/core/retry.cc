#include "adapters/core/retry.h"

#include <string>

#include "adapters/core/errors.h"

namespace lockstep {
namespace {

std::string got(int64_t value) { return ", got " + std::to_string(value); }

// Exactly one shape: a fixed delay or a delay function, never both, jitter only on a fixed delay.
void validate_shape(const RetrySettings& s) {
  const bool custom = static_cast<bool>(s.retry_delay_fn);
  if (custom && s.retry_delay_ms) {
    throw ValidationError("retry_delay_ms",
                          "cannot be combined with retry_delay_fn: give a fixed delay or a delay "
                          "function, not both");
  }
  if (custom && s.retry_jitter_ms != 0) {
    throw ValidationError("retry_jitter_ms",
                          "applies to a fixed retry_delay_ms, not to retry_delay_fn (draw jitter "
                          "inside the function)");
  }
  if (s.retry_delay_ms && !s.retry_times) {
    throw ValidationError("retry_times", "is required with retry_delay_ms (how many retries?)");
  }
  if (!custom && !s.retry_delay_ms && s.retry_times.value_or(0) > 0) {
    throw ValidationError("retry_delay_ms",
                          "is required when retry_times > 0 (or give retry_delay_fn)");
  }
}

void validate_ranges(const RetrySettings& s) {
  if (s.retry_delay_ms && (*s.retry_delay_ms <= 0 || *s.retry_delay_ms > kRetryDelayMaxMs)) {
    throw ValidationError("retry_delay_ms", "must be in (0, " + std::to_string(kRetryDelayMaxMs) +
                                                "] ms" + got(*s.retry_delay_ms));
  }
  if (s.retry_times && (*s.retry_times < 0 || *s.retry_times > kMaxRetryTimes)) {
    throw ValidationError("retry_times", "must be in [0, " + std::to_string(kMaxRetryTimes) +
                                             "] (0 means a single attempt)" + got(*s.retry_times));
  }
  if (s.retry_jitter_ms < 0 || s.retry_jitter_ms > kRetryDelayMaxMs) {
    throw ValidationError("retry_jitter_ms", "must be in [0, " + std::to_string(kRetryDelayMaxMs) +
                                                 "] ms" + got(s.retry_jitter_ms));
  }
  if (s.total_time_ms && (*s.total_time_ms <= 0 || *s.total_time_ms > kTotalTimeMaxMs)) {
    throw ValidationError("total_time_ms", "must be in (0, " + std::to_string(kTotalTimeMaxMs) +
                                               "] ms" + got(*s.total_time_ms));
  }
}

// Settings that are coherent but would silently not do what the caller evidently meant.
void validate_intent(const RetrySettings& s) {
  const bool retries_possible = s.retry_delay_ms || s.retry_delay_fn;
  if (s.retry_jitter_ms > 0 && !s.retry_delay_ms) {
    throw ValidationError("retry_jitter_ms",
                          "needs retry_delay_ms: jitter is added to a fixed delay");
  }
  if (s.total_time_ms && !retries_possible) {
    throw ValidationError("total_time_ms",
                          "caps retrying, but no retries are configured: set retry_delay_ms and "
                          "retry_times, or retry_delay_fn");
  }
}

}  // namespace

void validate(const RetrySettings& settings) {
  validate_shape(settings);
  validate_ranges(settings);
  validate_intent(settings);
}

}  // namespace lockstep
