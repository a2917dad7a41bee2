#include "lockstep/clock.h"

#include <chrono>
#include <thread>

namespace lockstep {

int64_t SystemClock::now_us() {
  const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::microseconds>(since_epoch).count() + skew_us_;
}

int64_t SystemClock::monotonic_us() {
  const auto since_boot = std::chrono::steady_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::microseconds>(since_boot).count();
}

// sleep_for measures a duration on a steady clock, so wall-clock jumps do not stretch it.
void SystemClock::sleep_for_us(int64_t duration_us) {
  if (duration_us <= 0) return;
  std::this_thread::sleep_for(std::chrono::microseconds(duration_us));
}

}  // namespace lockstep
