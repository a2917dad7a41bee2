#include "explore/stop.h"

#include <csignal>

#include <fmt/format.h>

namespace lockstep {

std::string signal_name(int signal_number) {
  switch (signal_number) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return fmt::format("signal {}", signal_number);
  }
}

std::string StopClock::reason() const {
  if (const int s = signal(); s != 0) return signal_name(s);
  return budget_over() ? "time" : "";
}

int64_t StopClock::elapsed_us() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               start_)
      .count();
}

}  // namespace lockstep
