#pragma once
// What `sweep` and `calibrate` add to the command line for CI: a time budget (`--time 30s`) and
// SIGINT/SIGTERM caught, so a job's timeout (or Ctrl-C) leaves the partial report, replay files and
// JUnit written instead of nothing.
//
// Invariants:
// - While an InterruptWatch lives, the first SIGINT or SIGTERM is only recorded (caught()); the
//   command stops taking seeds (explore/stop.h), writes what it has, and exits 128 + the signal's
//   number (130, 143) unless it found a violation (1). Another signal a second or more later ends
//   the process at once, as the signal's default action would; one sooner is the same request
//   (GNU timeout signals the command, then its process group), also when it arrives after the
//   watch ended: once a signal was caught, the handler stays for the rest of the process. Servers and drivers the run started are still killed by
//   the process registry's handler (real/process_registry.h), which hands the signal on to this one.
// - At most one watch at a time; its destructor (nothing caught) puts back the action it replaced when that is still
//   the current one (a handler installed over it since, the registry's, hands signals on to the
//   action it saved; once no watch is active, that action ends the process as the default would).
#include <csignal>
#include <cstdint>
#include <string>

namespace lockstep {

class InterruptWatch {
 public:
  InterruptWatch();
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

  // The signal caught while a watch was active, 0 if none. Async-signal-safe to read.
  static int caught();

 private:
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
};

// The exit code of a command a signal cut short: 128 + its number, as a shell reports a process it
// ended.
int interrupted_exit_code(int signal_number);

// "--time" values: a decimal count with a unit, `ms`, `s`, `m` or `h` (plain digits are seconds),
// greater than 0 and at most 7 days. Returns microseconds; throws UsageError naming the flag and the
// valid forms.
int64_t parse_duration_us(const std::string& flag, const std::string& text);

}  // namespace lockstep
