#pragma once
// Redlock's settings, as in Redis-DLM: defaults on the manager, overridden per acquire and per
// extend.
//
//   duration_ms        the lease each node grants, before the time spent acquiring is subtracted
//   retry_count        retries after the first attempt (acquire only)
//   retry_delay_ms     the longest wait between attempts; each wait is drawn in [0, retry_delay_ms]
//                      so contenders do not retry in lock step
//   max_hold_time_ms   how long one lock may be held across extends, from its first grant
//   drift_factor       the part of the duration set aside for clock drift, in [0, 1)
//   drift_constant_ms  a fixed drift allowance added to it
//   request_timeout_ms how long one round of requests to the nodes may take: small against the
//                      duration, so a dead node costs little of the lease (not in Redis-DLM, which
//                      cannot time out its clients; Redlock's step 2 asks for it)
// validate() rejects out-of-range or contradictory settings with a ValidationError naming the
// parameter. Invariant of validated settings: request_timeout_ms < duration_ms <= max_hold_time_ms.
#include <cstdint>
#include <optional>

namespace lockstep {

// The default lease: a manager's default settings are validated against it, so it bounds the
// defaults' request_timeout_ms (below it), drift_constant_ms and max_hold_time_ms (at least it).
inline constexpr int64_t kRedlockDefaultDurationMs = 10'000;

struct RedlockSettings {
  int64_t duration_ms = kRedlockDefaultDurationMs;
  // Redis-DLM's defaults are 0 retries (one attempt: contenders give up at once); these are
  // node-redlock's count and delay, so a default acquire outlasts a short-held lock. Each wait is
  // drawn in [0, retry_delay_ms] (Redis-DLM's jitter), so contenders spread out.
  int retry_count = 10;
  int64_t retry_delay_ms = 200;
  int64_t max_hold_time_ms = 60'000;
  double drift_factor = 0.001;
  int64_t drift_constant_ms = 5;
  int64_t request_timeout_ms = 50;
};

// A subset of the settings for one acquire or one extend; unset fields keep the defaults (for an
// extend: the lock's own duration).
struct RedlockOverrides {
  std::optional<int64_t> duration_ms{};
  std::optional<int> retry_count{};
  std::optional<int64_t> retry_delay_ms{};
  std::optional<int64_t> max_hold_time_ms{};
  std::optional<double> drift_factor{};
  std::optional<int64_t> drift_constant_ms{};
  std::optional<int64_t> request_timeout_ms{};
};

RedlockSettings apply(const RedlockSettings& defaults, const RedlockOverrides& overrides);
void validate(const RedlockSettings& settings);

// The drift allowance for a lease of duration_ms: duration * drift_factor + drift_constant, in us
// (rounded up, so the allowance never shrinks by rounding).
int64_t drift_allowance_us(int64_t duration_ms, double drift_factor, int64_t drift_constant_ms);
// What is left of a lease of duration_ms after elapsed_us spent acquiring it and the drift
// allowance: <= 0 means the lock is not valid.
int64_t validity_us(int64_t duration_ms, int64_t elapsed_us, const RedlockSettings& settings);

}  // namespace lockstep
