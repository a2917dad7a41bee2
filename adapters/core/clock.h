#pragma once
// The Clock seam: a node's view of time. Adapters read time and sleep only through it, so the same
// adapter code runs against real time and against the simulator's virtual time.
//
// Invariants:
// - now_us() is the node's local wall clock in microseconds since the Unix epoch. It may drift,
//   be offset from true time, and jump forward or backward when the world says so. Code must not
//   assume it is monotonic.
// - sleep_for_us(d) blocks the caller for d microseconds as the node's oscillator measures them (a
//   monotonic duration: drift stretches or shrinks it, jumps of the wall clock do not). d <= 0
//   returns at once.
#include <cstdint>

namespace lockstep {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t now_us() = 0;
  virtual void sleep_for_us(int64_t duration_us) = 0;

  int64_t now_ms() { return now_us() / 1000; }
  void sleep_for_ms(int64_t duration_ms) { sleep_for_us(duration_ms * 1000); }
};

// The real machine's clock: std::chrono::system_clock for now_us() (plus a fixed skew, so a real
// client can be told to run ahead or behind), std::this_thread::sleep_for for sleeping.
class SystemClock final : public Clock {
 public:
  explicit SystemClock(int64_t skew_us = 0) : skew_us_(skew_us) {}
  int64_t now_us() override;
  void sleep_for_us(int64_t duration_us) override;

 private:
  int64_t skew_us_;
};

}  // namespace lockstep
