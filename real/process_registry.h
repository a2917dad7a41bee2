#pragma once
// The process-wide registry of child processes the harness started (servers), so none outlives it.
//
// Invariants:
// - A pid is registered from spawn until it is reaped, and only by its owner (ChildProcess).
// - On SIGINT or SIGTERM every registered pid gets SIGKILL, then the signal goes on to the handler
//   that was installed before (Catch2's, or the default, which ends the process). At exit, the
//   same kill runs (atexit). The handlers are (re)installed at each registration, because test
//   frameworks restore their own handlers between tests.
// - At most kMaxChildren live at once: a bounded, lock-free table the signal handler can read.
#include <sys/types.h>

#include <cstddef>

namespace lockstep::real {

inline constexpr size_t kMaxChildren = 256;

void register_child(pid_t pid);
void unregister_child(pid_t pid);

// SIGKILL to every registered pid. Async-signal-safe.
void kill_registered_children();

// How many pids are registered now (for tests).
size_t registered_child_count();

}  // namespace lockstep::real
