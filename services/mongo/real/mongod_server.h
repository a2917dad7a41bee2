#pragma once
// MongodProcess: a mongod the harness starts (when one is on PATH), faults and always stops. It is
// a one-member replica set (rs0), so w:majority, readConcern majority and $$NOW pipelines behave
// as in production.
//
// Invariants:
// - It listens on 127.0.0.1 only, on a port that was free (a start that loses the port to another
//   process retries on a new one), with its data in a fresh temp dir (--dbpath).
// - Construction returns only once the member is a writable primary (hello polled through
//   libmongoc, bounded by start_timeout_ms; replSetInitiate sent once it answers); restart() waits
//   the same way. No fixed sleeps stand in for readiness.
// - Every process is owned by PID (ChildProcess): stop() or the destructor ends it (SIGTERM, then
//   SIGKILL after stop_timeout_ms), reaps it and removes the dir; Ctrl-C, SIGTERM and exit kill it
//   through the process registry. Start it from a thread that outlives it (see ChildProcess).
// - restart() uses the same port and dbpath, so what mongod journaled carries over.
// Errors: no mongod on PATH -> ServerUnavailable (says how to provide one); the server not
// starting or not becoming primary -> ServerStartError with the tail of its log.
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

namespace lockstep::real {

class ChildProcess;

struct MongodOptions {
  int64_t start_timeout_ms = 30'000;  // process start + replSetInitiate + election
  int64_t stop_timeout_ms = 10'000;
  int ttl_monitor_sleep_secs = 0;  // 0: mongod's default (60 s)
};

class MongodProcess {
 public:
  explicit MongodProcess(MongodOptions options = {});
  ~MongodProcess();
  MongodProcess(const MongodProcess&) = delete;
  MongodProcess& operator=(const MongodProcess&) = delete;

  // The absolute path of mongod on PATH; throws ServerUnavailable when there is none.
  static std::string binary_path();

  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  const std::string& dir() const { return dir_; }
  bool running() const;
  // "mongodb://127.0.0.1:PORT" (a direct connection to the one member).
  std::string uri() const;

  void pause();    // SIGSTOP; returns once the kernel reports it stopped
  void resume();   // SIGCONT; returns once it runs again
  void crash();    // SIGKILL and reap; the dir stays for restart()
  void restart();  // crash() if running, then start again on the same port and dbpath
  void stop();     // graceful, then forced; reaps and removes the dir. Idempotent.

  std::string log_tail(size_t bytes_max = 2000) const;

 private:
  bool start_on_port(int port);  // false: the port was taken
  void start_on_free_port();
  void wait_until_primary();

  MongodOptions options_;
  std::string binary_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace lockstep::real
