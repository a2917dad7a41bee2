#pragma once
// ChildProcess: one program the harness runs (a server), owned by PID from spawn to reap.
//
// Invariants:
// - The child is registered in the process registry until reaped, so Ctrl-C or exit kills it.
// - The child also gets SIGKILL when the thread that spawned it ends (PR_SET_PDEATHSIG), so even
//   a harness killed by SIGKILL leaves no server behind. Spawn from a thread that outlives it.
// - The destructor kills (SIGKILL) and reaps a child that is still there. Every wait is bounded.
// - Spawning does only async-signal-safe work between fork and exec (argv and environment are
//   built before the fork), so it is safe in a multi-threaded process.
// - A child started with run_as (a server that refuses to run as root, started by a harness that
//   is root) drops to that user and group before exec, and arms PR_SET_PDEATHSIG after the drop
//   (a change of credentials clears it), so it dies with its spawning thread like any other.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::real {

// A user and group for the child to run as (setgroups to none, setgid, setuid before exec).
struct RunAs {
  uid_t uid = 0;
  gid_t gid = 0;
};

struct SpawnOptions {
  std::string path;               // absolute path of the program
  std::vector<std::string> args;  // argv[1..]
  std::vector<std::string>
      extra_env;                // "NAME=value", added to (overriding) the current environment
  std::string output_path;      // stdout and stderr go here (appended); stdin is /dev/null
  std::optional<RunAs> run_as;  // none: the harness's own user
};

// The absolute path of `name` found on PATH, if it is there and executable.
std::optional<std::string> find_on_path(const std::string& name);

class ChildProcess {
 public:
  explicit ChildProcess(const SpawnOptions& options);  // throws std::system_error if fork fails
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool reaped() const { return reaped_; }
  bool stopped() const { return stopped_; }

  // Sends a signal (no-op once reaped).
  void signal(int signal_number);
  // Waits up to timeout_ms for the child to exit and reaps it. True when it has exited.
  bool wait_exit_for_ms(int64_t timeout_ms);
  // True (and reaps) if it has exited already; never blocks.
  bool exited_now();
  // SIGSTOP and wait until the kernel reports it stopped; SIGCONT and wait until it runs again.
  // Each is a no-op when the child is already in that state (or reaped).
  void stop_and_wait();
  void continue_and_wait();
  // SIGKILL and reap.
  void kill_and_reap();
  // SIGTERM (resuming a stopped child, which handles it only once it runs), then SIGKILL if it
  // has not exited within timeout_ms; reaped either way.
  void terminate(int64_t timeout_ms);

 private:
  void mark_reaped();
  void wait_for_state(int flags, bool (*wanted)(int status));

  pid_t pid_ = -1;
  bool reaped_ = false;
  bool stopped_ = false;
};

}  // namespace lockstep::real
