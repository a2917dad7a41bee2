#pragma once
// SimDriverProcess: a co-simulated driver (services/ext/PROTOCOL.md, version 2), spoken to in exchanges:
// the harness writes one line and reads the driver's lines up to its `idle` line. The driver
// owns no time, no sockets and no randomness of its own, so what it writes is a function of the
// lines it was sent; this class only moves lines, the simulator decides when to send them
// (services/ext/backend/ext_sim.cc).
//
// Invariants:
// - Owned by PID from spawn to reap, registered in the process registry meanwhile, killed by the
//   kernel if the starting thread ends (PR_SET_PDEATHSIG); the destructor SIGKILLs and reaps it
//   (a co-simulated driver holds nothing worth a polite shutdown: its sockets are simulated).
// - A driver may serve several runs, one after another, each begun by `init` and ended by
//   reset() (services/ext/driver/sim_driver_pool.h keeps them warm between a sweep's seeds).
// - exchange() returns the lines of exactly one exchange, or throws SimDriverError when the driver
//   died, wrote a malformed line, or did not reach `idle` within the real-time deadline (a guard
//   against a hung process, never a simulated outcome). After an error every exchange throws.
// - Bounded: lines by kLineMaxBytes, lines per exchange by kExchangeLinesMax, stderr kept as a tail.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "services/ext/driver/protocol.h"
#include "services/ext/driver/protocol_rules.h"

namespace lockstep::ext {

inline constexpr size_t kExchangeLinesMax = 100'000;

class SimDriverError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The client's simulated clocks, sent with every line (`now`).
struct SimNow {
  int64_t wall_ms = 0;
  int64_t mono_ns = 0;
};

// Version 2's lines besides version 1's ready, responses and events.
struct SimConnect {
  int conn = 0;
  int server = 0;
};
struct SimSend {
  int conn = 0;
  std::string bytes;  // decoded from base64
};
struct SimClose {
  int conn = 0;
};
using SimLine = std::variant<Ready, Response, Event, SimConnect, SimSend, SimClose>;

struct SimExchange {
  std::vector<SimLine> lines;            // in the order written
  std::optional<int64_t> next_timer_ns;  // the idle line's, on the driver's monotonic clock
};

struct SimDriverOptions {
  std::string program;            // absolute path (node)
  std::vector<std::string> args;  // argv[1..]
  std::string name;               // for messages
  int64_t exchange_deadline_ms = 10'000;
  size_t stderr_tail_bytes = 4096;
};

class SimDriverProcess {
 public:
  explicit SimDriverProcess(SimDriverOptions options);  // spawns; reads nothing yet
  ~SimDriverProcess();
  SimDriverProcess(const SimDriverProcess&) = delete;
  SimDriverProcess& operator=(const SimDriverProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Version 2 request lines. `fields_json` is a JSON object's text (version 1's encode(), or
  // {"op": "tick"}); `now` is added to it.
  SimExchange exchange(const std::string& fields_json, SimNow now);
  // SIGKILL and reap (a crashed client); later exchanges throw.
  void kill();
  // Ends the run in the driver (op `reset`): true when it answered with a bare idle line and so is
  // as a fresh process started with the same command (its next line an init); otherwise it is
  // killed and false.
  bool reset();
  // Neither killed nor reaped, its descriptors closed: for a forked child that inherited the
  // object (the process is its parent's to stop).
  void abandon();
  bool usable() const { return failed_.empty(); }
  // Exchanges begun by every driver of this process so far (a cost figure: BM_Sweep's
  // exchanges_per_seed). Never decides anything in a run.
  static uint64_t exchanges_total();
  const SimDriverOptions& options() const { return options_; }
  void rename(std::string name) { options_.name = std::move(name); }

 private:
  [[noreturn]] void fail(const ProtocolRule& rule, const std::string& what);
  void drain_stderr();

  SimDriverOptions options_;
  pid_t pid_ = -1;
  int to_driver_fd_ = -1;
  int from_driver_fd_ = -1;
  int stderr_fd_ = -1;
  bool reaped_ = false;
  std::string failed_;  // set once it failed: every later exchange throws this
  std::string out_buffer_;
  std::string stderr_tail_;
};

// base64 (RFC 4648, with padding) as the Node drivers write it.
std::string base64_encode(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace lockstep::ext
