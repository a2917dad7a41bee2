#pragma once
// The Clock seam: a node's view of time. Adapters read time and sleep only through it, so the same
// adapter code runs against real time and against the simulator's virtual time.
//
// A node has two clocks, as CLOCK_REALTIME and CLOCK_MONOTONIC are:
// - now_us() is the node's wall clock in microseconds since the Unix epoch. It may drift, be
//   offset from true time, and jump forward or backward (an NTP step, an operator). Read it only
//   for what must be a wall time (a timestamp another machine compares: Mongo's client-time
//   expiry). Never measure a duration or a local expiry on it.
// - monotonic_us() is the node's oscillator in microseconds from an arbitrary origin: it never
//   jumps and never goes back; it runs fast or slow with the node's drift. Measure elapsed time,
//   validity and local expiry on it.
// - sleep_for_us(d) blocks the caller for d microseconds of monotonic_us() (drift stretches or
//   shrinks it, wall-clock jumps do not). d <= 0 returns at once.
#include <cstdint>

namespace lockstep {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t now_us() = 0;
  virtual int64_t monotonic_us() = 0;
  virtual void sleep_for_us(int64_t duration_us) = 0;

  int64_t now_ms() { return now_us() / 1000; }
  void sleep_for_ms(int64_t duration_ms) { sleep_for_us(duration_ms * 1000); }
};

// The real machine's clocks: std::chrono::system_clock for now_us() (plus a fixed skew, so a real
// client can be told to run ahead or behind), std::chrono::steady_clock for monotonic_us(),
// std::this_thread::sleep_for for sleeping.
class SystemClock final : public Clock {
 public:
  explicit SystemClock(int64_t skew_us = 0) : skew_us_(skew_us) {}
  int64_t now_us() override;
  int64_t monotonic_us() override;
  void sleep_for_us(int64_t duration_us) override;

 private:
  int64_t skew_us_;
};

}  // namespace lockstep
