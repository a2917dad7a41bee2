#pragma once
// PgServerProcess: a private PostgreSQL 15 cluster (Debian's postgresql-15) the harness starts,
// faults and always stops.
//
// The server refuses to run as root. A harness running as root starts it as the `postgres` user
// the package creates (ChildProcess::run_as), in a data dir it owns; any other user runs it as
// itself. initdb takes seconds, so it runs once per process into a template cluster (removed at
// exit, by a signal through the process registry, or by the next start when a run was killed),
// which each server copies into a fresh temp dir of its own.
//
// Invariants:
// - It listens on 127.0.0.1 only (no Unix socket), on a port that was free (a start that loses the
//   port retries on a new one). Construction returns only once it accepts sessions (polled, bounded
//   by start_timeout_ms); restart() likewise.
// - The postmaster is owned by PID (ChildProcess, with PR_SET_PDEATHSIG after the drop to the
//   postgres user). Its backends are its children: it ends them itself when it stops, and they
//   exit on their own when it dies (PostgreSQL watches for postmaster death), so killing the
//   postmaster by PID (stop(), the process registry on a signal) leaves no process behind.
// - crash() is `pg_ctl -m immediate stop`: SIGQUIT to the postmaster, which kills its backends and
//   exits without a checkpoint (SIGKILL to them all if that takes longer than stop_timeout_ms).
//   Advisory locks die with it; sequences come back from the WAL (ahead by up to 32 values).
// - pause() stops the postmaster and every backend (SIGSTOP, each confirmed stopped); resume()
//   continues them. stop() is a fast shutdown (SIGINT), then SIGKILL; it reaps and removes the
//   dir; idempotent.
// Errors: no PostgreSQL 15 binaries -> ServerUnavailable (says what to install); root without a
// `postgres` user -> ServerUnavailable; the server not starting -> ServerStartError with its log.
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace lockstep::real {

class ChildProcess;

struct PgServerOptions {
  int64_t start_timeout_ms = 30'000;
  int64_t stop_timeout_ms = 10'000;
  int max_connections = 300;  // retry-storm's 200 clients each hold a session
  // More `-c NAME=VALUE` settings for the server (the harness's come first).
  std::vector<std::pair<std::string, std::string>> settings;
};

class PgServerProcess {
 public:
  explicit PgServerProcess(PgServerOptions options = {});
  ~PgServerProcess();
  PgServerProcess(const PgServerProcess&) = delete;
  PgServerProcess& operator=(const PgServerProcess&) = delete;

  // The directory of PostgreSQL 15's programs (postgres, initdb): LOCKSTEP_PG_BINDIR, else
  // /usr/lib/postgresql/15/bin. Throws ServerUnavailable when it has none.
  static std::string bin_dir();

  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  const std::string& dir() const { return dir_; }
  std::string endpoint() const;
  bool running() const;
  // The postmaster's children now (backends and auxiliary processes), from /proc.
  std::vector<pid_t> children() const;

  void pause();
  void resume();
  void crash();
  void restart();  // crash() if running, then start on the same port and data dir
  void stop();

  std::string log_tail(size_t bytes_max = 2000) const;

 private:
  bool start_on_port(int port);  // false: the port was taken
  void wait_until_gone(const std::vector<pid_t>& pids);

  PgServerOptions options_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace lockstep::real
