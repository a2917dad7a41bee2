#pragma once
// EtcdCluster: Debian's etcd (3.4) started by the harness on loopback, as 1 or 3 members, faulted
// and always stopped.
//
// Invariants:
// - Every member listens on 127.0.0.1 only (client and peer ports that were free), with its data
//   in a fresh temp dir; a start that loses a port to another process retries on new ones.
// - Construction returns only once every member answers /v3/maintenance/status and they agree on
//   a leader (bounded by start_timeout_ms); restart() likewise for the member it starts. No fixed
//   sleeps stand in for readiness.
// - Every process is owned by PID (real/child_process.h): stop() or the destructor ends it
//   (SIGTERM, then SIGKILL after stop_timeout_ms), reaps it and removes the dirs; Ctrl-C, SIGTERM
//   and exit kill it through the process registry. Start it from a thread that outlives it.
// - restart(i) uses member i's ports and dir: its WAL and data carry over, as after a crash.
// - No clock faults: etcd is a Go program, whose clock reads go through the vDSO rather than
//   libc, so libfaketime cannot reach it (measured: a +100 days fake time left its Date header
//   true). Its leases are timed on the monotonic clock anyway.
// Errors: etcd missing -> real::ServerUnavailable (says what to install); a member not starting
// -> real::ServerStartError with the tail of its log.
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lockstep::real {

class ChildProcess;

struct EtcdClusterOptions {
  int members = 1;
  // etcd's --heartbeat-interval and --election-timeout. 500 ms makes its minimum lease TTL 1 s
  // (ceil(1.5 election timeouts)); etcd's default of 1000 would make it 2 s.
  int64_t heartbeat_ms = 100;
  int64_t election_timeout_ms = 500;
  int64_t start_timeout_ms = 15000;
  int64_t stop_timeout_ms = 3000;
};

class EtcdCluster {
 public:
  explicit EtcdCluster(EtcdClusterOptions options = {});
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  // The absolute path of etcd on PATH; throws ServerUnavailable when there is none.
  static std::string binary_path();

  int members() const { return static_cast<int>(members_.size()); }
  int client_port(int member) const;
  std::vector<int> client_ports() const;
  pid_t pid(int member) const;
  bool running(int member) const;
  // The member the others follow now (asked over the gateway), -1 when none answers with one.
  int leader() const;

  void pause(int member);   // SIGSTOP; returns once the kernel reports it stopped
  void resume(int member);  // SIGCONT; returns once it runs again
  void crash(int member);   // SIGKILL and reap; its dir stays for restart()
  // A failover: the member the others follow crashes. Throws std::runtime_error when none leads.
  void crash_leader();
  void restart(int member);  // crash() if running, then start on the same ports and dir
  void stop();               // every member, graceful then forced; removes the dirs. Idempotent.

  std::string log_tail(int member, size_t bytes_max = 2000) const;

 private:
  struct Member;
  void start_all();
  void start_member(Member& m);
  bool wait_ready(const std::vector<int>& which, int64_t timeout_ms);
  std::string initial_cluster() const;

  EtcdClusterOptions options_;
  std::string binary_;
  std::vector<std::unique_ptr<Member>> members_;
};

}  // namespace lockstep::real
