#pragma once
// DriverProcess: one lock-library driver the harness runs, spoken to over the ext protocol
// (services/ext/PROTOCOL.md, services/ext/driver/protocol.h): requests on its stdin, replies on its stdout.
//
// Invariants:
// - Owned by PID from spawn to reap, registered in the process registry meanwhile (Ctrl-C and exit
//   kill it), and killed by the kernel if the thread that started it ends (PR_SET_PDEATHSIG). The
//   destructor asks it to shut down, waits a bounded time, then SIGKILLs and reaps it.
// - Construction returns once the driver's `ready` line arrived and was valid (protocol 1, and its
//   clock reading lies between ours around the read: it reads CLOCK_MONOTONIC), else throws
//   DriverStartError with the reason and the tail of its stderr.
// - call() is thread-safe (a shared driver serves several clients) and returns within the request
//   deadline. A driver that dies, closes stdout, overruns a deadline or writes a malformed line is
//   failed for good: that call and every later one return the failure, with its stderr tail, and
//   never a lock result.
// - Everything the driver writes is bounded: lines by kLineMaxBytes, stderr kept as a tail.
#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "services/ext/driver/protocol.h"
#include "services/ext/driver/protocol_rules.h"

namespace lockstep::ext {

class DriverStartError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct DriverOptions {
  std::string program;            // absolute path (node)
  std::vector<std::string> args;  // argv[1..]
  std::string name;               // for messages: "ext:locco-redis a"
  int64_t start_deadline_ms = 15'000;
  int64_t request_deadline_ms = 10'000;
  size_t stderr_tail_bytes = 4096;
  std::function<void(const Event&)> on_event;  // called on the reader thread
};

enum class DriverFailure { none, died, hung, malformed };
std::string_view to_string(DriverFailure failure);

struct CallResult {
  DriverFailure failure = DriverFailure::none;
  Response response;    // valid when failure == none
  std::string message;  // otherwise: what happened, with the stderr tail
  int64_t sent_ns = 0;  // CLOCK_MONOTONIC around the exchange, for the protocol's overhead
  int64_t received_ns = 0;

  bool ok() const { return failure == DriverFailure::none; }
};

class DriverProcess {
 public:
  explicit DriverProcess(DriverOptions options);
  ~DriverProcess();
  DriverProcess(const DriverProcess&) = delete;
  DriverProcess& operator=(const DriverProcess&) = delete;

  const Ready& ready() const { return ready_; }
  pid_t pid() const { return pid_; }

  // Sends request (its id is assigned here) and waits for its response, bounded by the deadline.
  CallResult call(Request request);

  // Stop-the-world of the driver: SIGSTOP and wait until the kernel reports it stopped; SIGCONT
  // and wait until it runs. No-ops once it is dead.
  void stop();
  void resume();
  // SIGKILL and reap; later calls report the driver died.
  void kill();

  DriverFailure failure() const;
  std::string stderr_tail() const;

 private:
  void read_loop();
  void teardown();
  // must hold mutex_; rule: the protocol rule the driver broke (nullptr: none, e.g. killed by us)
  void fail_locked(DriverFailure failure, const ProtocolRule* rule, std::string message);
  void handle_line(const std::string& line);
  bool reap_now();  // must hold wait_mutex_; true once reaped
  std::string exit_description();
  std::string tail_locked() const;  // must hold mutex_

  DriverOptions options_;
  pid_t pid_ = -1;
  int to_driver_fd_ = -1;    // its stdin
  int from_driver_fd_ = -1;  // its stdout
  int stderr_fd_ = -1;
  Ready ready_;

  mutable std::mutex mutex_;  // guards everything below except the wait_ members
  std::condition_variable changed_;
  bool have_ready_ = false;
  int64_t ready_received_ns_ = 0;
  bool closing_ = false;
  int64_t next_id_ = 1;
  std::map<int64_t, std::optional<Response>> pending_;  // id -> its response once it came
  DriverFailure failure_ = DriverFailure::none;
  std::string failure_message_;
  std::string failure_detail_;  // failure_message_ without the driver's name
  std::string stderr_tail_;

  std::mutex write_mutex_;  // one request line at a time on the driver's stdin
  std::mutex wait_mutex_;   // serialises waitpid on pid_; taken before mutex_ when both are
  bool reaped_ = false;
  bool stopped_ = false;
  int exit_status_ = 0;

  std::thread reader_;  // last: starts once the members above exist
};

}  // namespace lockstep::ext
