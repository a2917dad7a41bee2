#pragma once
// The process-wide registry of child processes the harness started (servers) and of the temp
// dirs they use, so none outlives it.
//
// Invariants:
// - A pid is registered from spawn until it is reaped, and only by its owner (ChildProcess).
// - On SIGINT, SIGTERM or SIGHUP every registered pid gets SIGKILL and is reaped, every registered
//   temp dir is removed (async-signal-safe calls only: openat, getdents64, unlinkat), then the
//   signal goes on to the handler that was installed before (Catch2's, or the default, which ends
//   the process). At exit, the same kill runs (atexit); dirs are their owners' to remove then. The handlers are (re)installed at each registration, because test
//   frameworks restore their own handlers between tests.
// - At most kMaxChildren live at once, and kMaxTempDirs dirs of at most kTempDirPathMax bytes:
//   bounded, lock-free tables the signal handler can read. A dir is removed to kTempDirDepthMax
//   levels (a server's data dir has two).
#include <sys/types.h>

#include <cstddef>
#include <string>

namespace lockstep::real {

inline constexpr size_t kMaxChildren = 256;
inline constexpr size_t kMaxTempDirs = 256;
inline constexpr size_t kTempDirPathMax = 512;
inline constexpr int kTempDirDepthMax = 8;

void register_child(pid_t pid);
void unregister_child(pid_t pid);

// SIGKILL to every registered pid. Async-signal-safe.
void kill_registered_children();

// A temp dir to remove should a fatal signal end the process first. A path longer than
// kTempDirPathMax, or a full table, is an assertion.
void register_temp_dir(const std::string& path);
void unregister_temp_dir(const std::string& path);
// Removes every registered temp dir and its contents. Async-signal-safe; for the handler and tests.
void remove_registered_temp_dirs();

// A file this process owns under dir, named PREFIX<pid> (a library's shared-memory counters,
// /dev/shm/mongoc-<pid>), to unlink should a fatal signal end the process: left behind, the next
// process given this pid would find it. At most kPidFilesMax; a longer path is an assertion.
inline constexpr size_t kPidFilesMax = 8;
void register_own_pid_file(const std::string& dir, const std::string& prefix);

// How many pids are registered now (for tests).
size_t registered_child_count();

}  // namespace lockstep::real
