#include "sim/node_clock.h"

#include <fmt/format.h>

#include "sim/assert.h"

namespace lockstep::sim {
namespace {

__extension__ typedef __int128 Int128;  // __extension__: -Wpedantic knows no __int128
constexpr int64_t kPpm = 1'000'000;

int64_t rate_ppm(int64_t drift_ppm) { return kPpm + drift_ppm; }

void check_drift(int64_t drift_ppm) {
  LOCKSTEP_SIM_CHECK(
      drift_ppm > -kPpm && drift_ppm < kPpm,
      fmt::format("drift_ppm {} outside (-1e6, 1e6): the clock must move forward", drift_ppm));
}

// Clamps a 128-bit intermediate back into int64 (far-future values saturate, not wrap).
int64_t saturate(Int128 v) {
  if (v > INT64_MAX) return INT64_MAX;
  if (v < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(v);
}

// ceil(a / b) for a >= 0, b > 0, in whichever width holds a + b.
template <typename Wide>
Wide ceil_div(Wide a, Wide b) {
  return (a + b - 1) / b;
}

}  // namespace

NodeClock::NodeClock(ClockSpec spec)
    : base_local_(kLocalEpochUs + spec.offset_us),
      base_monotonic_(kMonotonicOriginUs),
      drift_ppm_(spec.drift_ppm) {
  check_drift(spec.drift_ppm);
}

int64_t NodeClock::local_us(TimeUs t) const {
  LOCKSTEP_SIM_CHECK(
      t >= base_true_,
      fmt::format("local_us({}) precedes the clock's latest change at {}", t, base_true_));
  return saturate(base_local_ + Int128{local_duration(t - base_true_)});
}

int64_t NodeClock::monotonic_us(TimeUs t) const {
  LOCKSTEP_SIM_CHECK(
      t >= base_true_,
      fmt::format("monotonic_us({}) precedes the clock's latest change at {}", t, base_true_));
  return saturate(base_monotonic_ + Int128{local_duration(t - base_true_)});
}

int64_t NodeClock::local_duration(TimeUs true_us) const {
  LOCKSTEP_SIM_CHECK(true_us >= 0, "a duration is not negative");
  // Read for every clock reading: the 128-bit division is for the products that need it.
  if (drift_ppm_ == 0) return true_us;
  const int64_t rate = rate_ppm(drift_ppm_);
  if (true_us <= INT64_MAX / rate) return true_us * rate / kPpm;
  return saturate(Int128{true_us} * rate / kPpm);
}

TimeUs NodeClock::true_duration_for(int64_t local_us) const {
  if (local_us <= 0) return 0;
  // The smallest T with floor(T * rate / 1e6) >= local_us.
  if (drift_ppm_ == 0) return local_us;
  const int64_t rate = rate_ppm(drift_ppm_);
  if (local_us <= (INT64_MAX - rate) / kPpm) return ceil_div(local_us * kPpm, rate);
  return saturate(ceil_div(Int128{local_us} * kPpm, Int128{rate}));
}

TimeUs NodeClock::true_time_when_local_reaches(int64_t target_local, TimeUs from) const {
  if (local_us(from) >= target_local) return from;
  // target_local > local_us(from) >= base_local_, so the remaining distance is positive.
  const Int128 distance = Int128{target_local} - base_local_;
  const Int128 t = base_true_ + ceil_div(distance * kPpm, Int128{rate_ppm(drift_ppm_)});
  return t >= kTimeNever ? kTimeNever : static_cast<TimeUs>(t);
}

void NodeClock::jump(TimeUs now, int64_t delta_us) {
  base_local_ = saturate(Int128{local_us(now)} + delta_us);
  base_monotonic_ = monotonic_us(now);
  base_true_ = now;
}

void NodeClock::set_drift_ppm(TimeUs now, int64_t drift_ppm) {
  check_drift(drift_ppm);
  base_local_ = local_us(now);
  base_monotonic_ = monotonic_us(now);
  base_true_ = now;
  drift_ppm_ = drift_ppm;
}

}  // namespace lockstep::sim
