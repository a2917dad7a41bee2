#include "services/redlock/adapter/redlock_settings.h"

#include <cmath>
#include <string>

#include "adapters/core/errors.h"
#include "adapters/core/locker.h"
#include "adapters/core/retry.h"

namespace lockstep {

RedlockSettings apply(const RedlockSettings& defaults, const RedlockOverrides& o) {
  return {.duration_ms = o.duration_ms.value_or(defaults.duration_ms),
          .retry_count = o.retry_count.value_or(defaults.retry_count),
          .retry_delay_ms = o.retry_delay_ms.value_or(defaults.retry_delay_ms),
          .max_hold_time_ms = o.max_hold_time_ms.value_or(defaults.max_hold_time_ms),
          .drift_factor = o.drift_factor.value_or(defaults.drift_factor),
          .drift_constant_ms = o.drift_constant_ms.value_or(defaults.drift_constant_ms),
          .request_timeout_ms = o.request_timeout_ms.value_or(defaults.request_timeout_ms)};
}

void validate(const RedlockSettings& s) {
  validate_ttl_ms(s.duration_ms, "duration_ms");
  if (s.retry_count < 0 || s.retry_count > kMaxRetryTimes) {
    throw ValidationError("retry_count", "must be in [0, " + std::to_string(kMaxRetryTimes) +
                                             "], got " + std::to_string(s.retry_count));
  }
  if (s.retry_delay_ms < 0 || s.retry_delay_ms > kRetryDelayMaxMs) {
    throw ValidationError("retry_delay_ms", "must be in [0, " + std::to_string(kRetryDelayMaxMs) +
                                                "] ms, got " + std::to_string(s.retry_delay_ms));
  }
  if (s.max_hold_time_ms < s.duration_ms || s.max_hold_time_ms > kTtlMaxMs) {
    throw ValidationError("max_hold_time_ms", "must be in [duration_ms, 24 h], got " +
                                                  std::to_string(s.max_hold_time_ms));
  }
  if (!(s.drift_factor >= 0.0 && s.drift_factor < 1.0)) {
    throw ValidationError("drift_factor",
                          "must be in [0, 1), got " + std::to_string(s.drift_factor));
  }
  if (s.drift_constant_ms < 0 || s.drift_constant_ms > s.duration_ms) {
    throw ValidationError("drift_constant_ms", "must be in [0, duration_ms], got " +
                                                   std::to_string(s.drift_constant_ms));
  }
  if (s.request_timeout_ms <= 0 || s.request_timeout_ms >= s.duration_ms) {
    throw ValidationError("request_timeout_ms", "must be in (0, duration_ms), got " +
                                                    std::to_string(s.request_timeout_ms));
  }
}

int64_t drift_allowance_us(int64_t duration_ms, double drift_factor, int64_t drift_constant_ms) {
  const double proportional_us =
      std::ceil(static_cast<double>(duration_ms) * 1000.0 * drift_factor);
  return static_cast<int64_t>(proportional_us) + drift_constant_ms * 1000;
}

int64_t validity_us(int64_t duration_ms, int64_t elapsed_us, const RedlockSettings& settings) {
  return duration_ms * 1000 - elapsed_us -
         drift_allowance_us(duration_ms, settings.drift_factor, settings.drift_constant_ms);
}

}  // namespace lockstep
