#pragma once
// LOCKSTEP_SIM_CHECK: a precondition or invariant that holds in every build type. A failure throws
// std::logic_error naming the condition, the message and the place, so a broken invariant ends a
// run loudly instead of going on with a corrupted simulation (plain assert vanishes under NDEBUG).
#include <stdexcept>
#include <string>
#include <string_view>

namespace lockstep::sim {

[[noreturn]] inline void check_failed(const char* condition, std::string_view message,
                                      const char* file, int line) {
  std::string text = "check failed: ";
  text += condition;
  text += " (";
  text += message;
  text += ") at ";
  text += file;
  text += ':';
  text += std::to_string(line);
  throw std::logic_error(text);
}

}  // namespace lockstep::sim

#define LOCKSTEP_SIM_CHECK(cond, msg)                                                  \
  do {                                                                             \
    if (!(cond)) ::lockstep::sim::check_failed(#cond, (msg), __FILE__, __LINE__); \
  } while (false)
