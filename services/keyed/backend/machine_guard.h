#pragma once
// The simulator drivers' side of the keyed state-machine contract
// (include/lockstep/keyed_state_machine.h): every call into a machine goes through call(),
// and what the driver finds wrong goes to fail(). The first failure is kept as one line naming
// the lock, the call and what it did or threw; from then on the lock is broken: every later call
// into it throws KeyedMachineBroken at once, so nothing the machine says afterwards is carried
// out. KeyedMachineBroken is a ClientProcessFailed: the simulated run ends as an error
// (run/runner.cc) with that line, never as an internal error or an abort.
//
// Paths that must not throw (a release, which a handle's destructor runs; a dying fiber's clean-up)
// use call_quietly() and record(): the failure is kept and the next call into the lock, or the
// step that made the release (KeyedSteps), throws it.
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "harness/scenario_world.h"

namespace lockstep {

class KeyedMachineBroken : public ClientProcessFailed {
 public:
  using ClientProcessFailed::ClientProcessFailed;
};

class MachineGuard {
 public:
  explicit MachineGuard(std::string lock_name) : lock_name_(std::move(lock_name)) {}

  // fn(), the machine's call `op` on `key`, with whatever it throws turned into this lock's
  // failure (and thrown as one). The message is formatted only on failure.
  template <class Fn>
  auto call(std::string_view op, std::string_view key, Fn&& fn) -> decltype(fn()) {
    throw_if_broken();
    try {
      return std::forward<Fn>(fn)();
    } catch (const std::exception& e) {
      fail(threw(op, key, e.what()));
    } catch (...) {
      fail(threw(op, key, "something that is not a std::exception"));
    }
  }
  // The same on a path that must not throw: a throw is recorded and `fallback` returned (also
  // when the lock is broken already: its machine is not called again).
  template <class Fn, class T>
  T call_quietly(std::string_view op, std::string_view key, Fn&& fn, T fallback) noexcept {
    if (broken_) return fallback;
    try {
      return std::forward<Fn>(fn)();
    } catch (const std::exception& e) {
      record_threw(op, key, e.what());
    } catch (...) {
      record_threw(op, key, "something that is not a std::exception");
    }
    return fallback;
  }

  // Records the lock's failure (the first one stays) and throws it.
  [[noreturn]] void fail(std::string what) {
    record(std::move(what));
    throw KeyedMachineBroken(*broken_);
  }
  void record(std::string what) noexcept {
    if (broken_) return;
    try {
      broken_ =
          fmt::format("keyed lock '{}' broke its state-machine contract: {}", lock_name_, what);
    } catch (...) {
      broken_ = std::string("a keyed lock broke its state-machine contract");
    }
  }
  void throw_if_broken() const {
    if (broken_) throw KeyedMachineBroken(*broken_);
  }
  bool broken() const { return broken_.has_value(); }
  // One line with no line break: a machine's message may hold any bytes.
  static std::string one_line(std::string_view text) {
    std::string out(text.substr(0, 400));
    for (char& c : out) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    return out;
  }
  const std::string& lock_name() const { return lock_name_; }

 private:
  static std::string threw(std::string_view op, std::string_view key, std::string_view message) {
    if (key.empty()) return fmt::format("{}() threw: {}", op, one_line(message));
    return fmt::format("{}(key '{}') threw: {}", op, one_line(key), one_line(message));
  }
  void record_threw(std::string_view op, std::string_view key, std::string_view message) noexcept {
    try {
      record(threw(op, key, message));
    } catch (...) {
      record("a call threw");
    }
  }

  std::string lock_name_;
  std::optional<std::string> broken_;
};

}  // namespace lockstep
