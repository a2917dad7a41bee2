#pragma once
// LOCKSTEP_CHECK: a precondition or invariant that holds in every build type (plain assert
// vanishes under NDEBUG). A failure throws std::logic_error naming the condition, the reason and
// the place, so a broken invariant ends a run loudly (and a test reports it) instead of going on
// with corrupted state. The simulator's LOCKSTEP_SIM_CHECK is this same check. Not for expected
// failures: those are AdapterResult values or typed LockErrors.
#include <stdexcept>
#include <string>
#include <string_view>

namespace lockstep::detail {

[[noreturn]] inline void check_failed(const char* condition, std::string_view why, const char* file,
                                      int line) {
  throw std::logic_error(std::string("check failed: ") + condition + " (" + std::string(why) +
                         ") at " + file + ":" + std::to_string(line));
}

}  // namespace lockstep::detail

#define LOCKSTEP_CHECK(condition, why)                                                       \
  do {                                                                                       \
    if (!(condition)) ::lockstep::detail::check_failed(#condition, why, __FILE__, __LINE__); \
  } while (false)
