#pragma once
// A node's local clock as a function of true time.
//
// local(t) = base_local + (t - base_true) * (1e6 + drift_ppm) / 1e6, piecewise: every change of
// drift or jump starts a new segment at the current true time. Jumps move the wall reading
// (local_us) but not the oscillator: monotonic_us(t) = base_monotonic + the same drifted duration,
// never jumping, and durations (true_duration_for) depend on drift only. That is how
// CLOCK_REALTIME and CLOCK_MONOTONIC behave on real machines.
// All arithmetic is integer (128-bit intermediates); drift_ppm is bounded to (-1e6, 1e6).
#include <cstdint>
#include <vector>

#include "sim/time.h"

namespace lockstep::sim {

struct ClockSpec {
  int64_t offset_us = 0;  // local minus true at t=0, on top of kLocalEpochUs
  int64_t drift_ppm = 0;  // +10000 runs 1% fast
};

// Where every node's monotonic clock starts (as if each had booted an hour before true time 0).
inline constexpr int64_t kMonotonicOriginUs = 3'600'000'000;

class NodeClock {
 public:
  explicit NodeClock(ClockSpec spec = {});

  // The local wall reading at true time t (t must not precede the latest segment start).
  int64_t local_us(TimeUs t) const;
  // The oscillator's reading at true time t: starts at kMonotonicOriginUs, drifts, never jumps.
  int64_t monotonic_us(TimeUs t) const;
  // Local microseconds that pass while true time advances by true_us (drift only).
  int64_t local_duration(TimeUs true_us) const;
  // True microseconds the node's oscillator needs to measure local_us (drift only; rounds up).
  TimeUs true_duration_for(int64_t local_us) const;
  // The earliest true time >= from at which local_us(t) >= target_local, or kTimeNever if the
  // clock never gets there with the current segment (it always does: rate > 0).
  TimeUs true_time_when_local_reaches(int64_t target_local, TimeUs from) const;

  // Changes from true time now on.
  void jump(TimeUs now, int64_t delta_us);
  void set_drift_ppm(TimeUs now, int64_t drift_ppm);
  int64_t drift_ppm() const { return drift_ppm_; }

 private:
  TimeUs base_true_ = 0;
  int64_t base_local_ = 0;
  int64_t base_monotonic_ = 0;
  int64_t drift_ppm_ = 0;
};

}  // namespace lockstep::sim
