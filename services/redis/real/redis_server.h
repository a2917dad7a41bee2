#pragma once
// RedisServerProcess: a Debian redis-server the harness starts, faults and always stops.
//
// Invariants:
// - It listens on 127.0.0.1 only, on a port that was free (chosen by the kernel; a start that loses
//   the port to another process retries on a new one), with its files in a fresh temp dir.
// - Construction returns only once the server answers PING (bounded by start_timeout_ms), and
//   restart() likewise; no fixed sleeps stand in for readiness.
// - Every process is owned by PID (ChildProcess): stop() or the destructor ends it (SIGTERM, then
//   SIGKILL after stop_timeout_ms), reaps it and removes the dir; Ctrl-C, SIGTERM and exit kill it
//   through the process registry. Start it from a thread that outlives it (see ChildProcess).
// - restart() uses the same port and dir, so what persistence wrote (AOF) carries over.
// - Clock faults (libfaketime) apply to the server's wall clock, hence to key expiry; they stay in
//   force across restarts.
// Errors: redis-server or libfaketime missing -> ServerUnavailable (says what to install); the
// server not starting -> ServerStartError with the tail of its log.
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace lockstep::real {

class ChildProcess;

// none: no AOF, no RDB (a crash loses everything). everysec / always: AOF with that fsync policy.
enum class Persistence { none, everysec, always };
std::string_view to_string(Persistence persistence);
// "none", "everysec", "always" (the `persistence` option); anything else is none.
Persistence persistence_from_name(std::string_view name);

struct RedisServerOptions {
  Persistence persistence = Persistence::none;
  // Server clock (libfaketime). Setting any of these three needs libfaketime.
  std::string clock_rate;      // "" real rate; "x2" runs twice as fast
  int64_t clock_offset_s = 0;  // starts this far ahead (negative: behind)
  bool clock_jumps = false;    // allow jump_clock_s() with no rate or offset
  int64_t start_timeout_ms = 5000;
  int64_t stop_timeout_ms = 2000;
};

class RedisServerProcess {
 public:
  explicit RedisServerProcess(RedisServerOptions options = {});
  ~RedisServerProcess();
  RedisServerProcess(const RedisServerProcess&) = delete;
  RedisServerProcess& operator=(const RedisServerProcess&) = delete;

  // The absolute path of redis-server on PATH; throws ServerUnavailable when there is none.
  static std::string binary_path();

  pid_t pid() const { return pid_; }  // the current (or, once stopped, the last) process
  int port() const { return port_; }
  const std::string& dir() const { return dir_; }
  bool running() const;
  // "127.0.0.1:PORT"
  std::string endpoint() const;

  void pause();    // SIGSTOP; returns once the kernel reports it stopped
  void resume();   // SIGCONT; returns once it runs again
  void crash();    // SIGKILL and reap; the dir stays for restart()
  void restart();  // crash() if running, then start again on the same port and dir
  void stop();     // graceful, then forced; reaps and removes the dir. Idempotent.

  // Moves the server's wall clock by `seconds` (negative: back) at once. Needs a clock option.
  void jump_clock_s(int64_t seconds);

  // The last bytes of the server's log and captured output, for error messages.
  std::string log_tail(size_t bytes_max = 2000) const;

 private:
  bool uses_faketime() const;
  bool start_on_port(int port);  // false: the port was taken
  void start_on_free_port();

  RedisServerOptions options_;
  std::string binary_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  int64_t clock_offset_s_ = 0;  // the offset now in force (options plus jumps)
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace lockstep::real
