#pragma once
// A named scenario as data: what its clients do, step by step, and what strikes them when, built
// from the scenario's options (Scenario::spec) and run by one engine (harness/spec_engine.h). The
// code of a scenario says only how its numbers make its timeline, and what it expects.
//
// A spec is a list of entries in the order the engine takes them before the world starts: add a
// client, start one of its programs, strike at a moment, cut a client from a server. The order is
// part of the spec: adding a client and starting it draw from the run's seed, and faults that fall
// on one instant run in the order they were scheduled.
//
// A program is a list of steps over one lock at a time. An acquire makes the program's lock; a
// refused acquire either ends the program or, when the step says so, lets it go on without a lock:
// the steps that need one are skipped until the next acquire. A program may repeat its steps.
//
// A fault is timed from the start of the world, or from the moment a server granted a client's
// lease (the first grant fact the history attributes to it). A start or a fault may also wait for
// an anchor: a step of a client's first program, done in its first round; it is then taken at
// that moment, its times counted from it (simulator only: a real run cannot start a thread once
// under way), and never if the program ends before. Its record (FaultTag, `what`, its
// duration) is what the judge sees; its action is what the engine does.
//
// Invariants (validate() throws std::invalid_argument naming the bound): clients referred to exist
// and are added before they are started, struck or cut; at most kClientsMax clients and
// kStepsMax steps a program; times and durations not negative.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "adapters/core/retry.h"
#include "harness/hold_step.h"
#include "lockstep/fault.h"

namespace lockstep {

// What a scheduled fault is, for the history: its kind, whom it strikes (-1 / "": every client /
// every server) and its size in the kind's unit (include/lockstep/fault.h).
struct FaultTag {
  FaultKind kind = FaultKind::other;
  int client = -1;
  std::string server;
  int64_t amount = 0;
};

enum class StepKind {
  acquire,            // key, ttl_ms, retry (none: one attempt), end_if_refused
  read,               // the guarded resource, remembered
  write_next,         // writes what read gave plus one (nothing if the read was refused)
  increment,          // read, work ms, write read+1
  careful_increment,  // read, work ms but only while the lock is valid, write if still valid, leave
  pause,              // stop-the-world for ms (a fault, recorded)
  sleep,              // ms
  sleep_until,        // until ms after the program started, by its monotonic clock
  // The same, the clock read in whole milliseconds: until it reads ms past the millisecond the
  // program started in (a wait that needs no finer aim, as the partition scenario's heal wait).
  sleep_until_whole_ms,
  sleep_out_validity,  // until ttl_ms after the lock was acquired, by its clock, then leave
  extend,              // ttl_ms
  release,
  leave,            // leaves the critical section without releasing
  is_locked,        // asks whether the lock is still held
  crash,            // the client dies here (Client::crash)
  auto_extend,      // starts the lock's auto-extension every ms (0: a third of its TTL)
  work_until_lost,  // works ms in steps of step_ms, asking lost() before each write
  // A keyed lock's calls (harness/keyed_calls.h), each on its own, outside the program's lock:
  rw_hold,     // keyed-rw: key, shared or exclusive, pause_ms stopped inside, held ms
  fifo_hold,   // fifo: key, held ms, waiting at most max_wait_ms
  fifo_clear,  // fifo: clear(), turning every waiter away
  // A holder's whole turn on a key (harness/hold_step.h), outside the program's lock.
  hold,
  // Ends the program if the run's true time has reached ms: later steps never start.
  stop_after,
  // Takes each of `keys` once, in order, asking again until bound_us has passed since it began
  // each (retrying every tenth of ttl_ms, at least 10 ms), holds it 1 ms and releases it.
  take_each_key,
};

struct SpecStep {
  StepKind kind = StepKind::sleep;
  std::string key = "resource";          // acquire
  int64_t ttl_ms = 0;                    // acquire, extend, sleep_out_validity
  int64_t ms = 0;                        // the kind's duration or moment
  int64_t step_ms = 0;                   // work_until_lost
  std::optional<RetrySettings> retry{};  // acquire: none is one attempt
  bool end_if_refused = true;            // acquire
  bool shared = false;                   // rw_hold: a reader
  int64_t pause_ms = 0;                  // rw_hold
  std::optional<int64_t> max_wait_ms{};  // fifo_hold
  HoldStep hold{};                       // hold
  std::vector<std::string> keys{};       // take_each_key
  int64_t bound_us = 0;                  // take_each_key
};

// What the engine does when a fault strikes.
enum class SpecAction {
  none,                // recorded only: what it stands for is done otherwise (the spec's cuts)
  pause_client,        // client stops for the fault's duration
  kill_client,         // client dies (recorded as its death: a checker waits for nothing of it)
  partition_client,    // client cut off from every server; amount 1 two-way, 0 replies lost
  heal,                // every cut ends
  server_drift,        // every server's clock runs amount ppm off
  jump_server_clocks,  // every server's wall clock jumps amount us
  jump_server_clock,   // server's wall clock jumps amount us
  pause_server,        // server stops for the fault's duration
  crash_server,
  restart_server,
  end_session,        // the servers end client's session
  reset_connections,  // client's connections reset
  failover,           // the primary dies and a replica takes over (recorded with what it lost)
  fifo_clear,         // a keyed fifo lock's clear(): every waiter is turned away
  slow_server,        // every message to and from server takes amount us longer (0: no longer)
  // The simulator's own (its network, its clocks):
  jump_client_clock,  // client's wall clock jumps amount us
  client_drift,       // client's clocks run amount ppm off
  network_latency,    // every message takes amount us one way
  network_loss,       // every message is lost with probability amount percent
  network_restore,    // the network as it was when the run was built
  stall_client,       // client's links hold what is sent (amount 1 two-way) until a heal
};

struct SpecFault {
  SpecAction action = SpecAction::heal;
  int64_t at_us = 0;
  // >= 0: at_us counts from the first lease a server granted this client (its grant fact).
  int after_grant_of = -1;
  int client = -1;  // the struck client (by index)
  int server = -1;  // the struck server (by index)
  int64_t amount = 0;
  int64_t duration_us = 0;  // recorded: how long the fault lasts
  // What the history records (tag.client is an index, -1 for everyone) and the trace says. Not
  // recorded for kill_client and failover, which record themselves.
  FaultTag tag{};
  std::string what;
  // false: the action alone, nothing recorded (the end of a fault recorded with its duration).
  bool recorded = true;
  // >= 0: a crash_server and the restart_server of the same pair: the restart brings the server
  // back only if no other crash of it came after its pair's crash.
  int crash_pair = -1;
  // Actions taken at the same instant, after this one's, as one (a heal of every fault).
  std::vector<SpecFault> then{};
};

struct SpecClient {
  std::string name;
  int64_t clock_offset_us = 0;
  int64_t drift_ppm = 0;
};

struct SpecProgram {
  int client = 0;
  int64_t start_ms = 0;
  int64_t jitter_us = 0;
  int repeat = 1;  // runs its steps this many times
  // Killed from outside while inside (or the world ending under it), the client leaves its
  // critical section as it unwinds, as Client::crash does.
  bool leave_when_killed = false;
  std::vector<SpecStep> steps;
};

struct SpecCut {  // the client cannot reach the server from the start, and never heals
  int client = 0;
  int server = 0;
  bool two_way = true;
};

// A step of a client's first program: an entry anchored there is taken once that step is done.
struct SpecAnchor {
  int client = -1;  // -1: no anchor
  int step = 0;
};

struct SpecEntry {
  enum class Kind { add, start, fault, cut };
  Kind kind = Kind::add;
  SpecAnchor after{};     // start and fault only: taken then, times counted from then
  SpecClient client{};    // add
  SpecProgram program{};  // start
  SpecFault fault{};      // fault
  SpecCut cut{};          // cut
};

struct ScenarioSpec {
  std::vector<SpecEntry> entries;
  int servers_required = 0;      // > 0: the scenario is written for this many servers
  int64_t fixed_latency_us = 0;  // > 0: every message takes exactly this long (sim)
  int64_t server_drift_ppm = 0;  // != 0: set before anything runs (a backend that cannot refuses)
  std::string needs_sim;         // non-empty: why it runs only in the simulator
  std::optional<int64_t> liveness_bound_us{};

  static constexpr int kClientsMax = 2000;
  static constexpr int kStepsMax = 64;
  static constexpr int kRepeatMax = 10'000;

  // Building: add_client returns the client's index, start the program it added.
  int add_client(std::string name, int64_t clock_offset_us = 0, int64_t drift_ppm = 0);
  SpecProgram& start(int client, int64_t start_ms, std::vector<SpecStep> steps,
                     int64_t jitter_us = 0, int repeat = 1);
  void strike(SpecFault fault);
  // The last entry (a start or a fault) waits for the client's step: see SpecAnchor.
  void anchor_last(int client, int step);
  void cut(int client, int server, bool two_way);
  int client_count() const;

  void validate() const;
};

// Steps, as a scenario writes them.
SpecStep acquire_step(int64_t ttl_ms, std::optional<RetrySettings> retry = std::nullopt,
                      std::string key = "resource");
SpecStep step(StepKind kind, int64_t ms = 0);
SpecStep extend_step(int64_t ttl_ms);
// The plain client's steps: acquire `resource` (retrying as given), increment over hold_ms of
// work, release.
std::vector<SpecStep> take_work_release_steps(int64_t ttl_ms, int64_t hold_ms,
                                              std::optional<RetrySettings> retry);
// first's steps, then then's.
std::vector<SpecStep> joined(std::vector<SpecStep> first, const std::vector<SpecStep>& then);

// Faults, as a scenario writes them: recorded as what they are (their FaultTag).
// Client `client` stops for pause_us of true time from at_us.
SpecFault pause_client_fault(int client, int64_t at_us, int64_t pause_us, std::string what);
// Client `client` cut off from every server (two-way, or its replies lost) from at_ms for
// length_ms; the cut ends with a heal_fault.
SpecFault partition_fault(int client, int64_t at_ms, int64_t length_ms, bool two_way,
                          std::string what);
SpecFault heal_fault(int64_t at_ms, std::string what);

std::string step_kind_name(StepKind kind);
std::string spec_action_name(SpecAction action);
// The spec as the engine will take it (`lockstep scenarios NAME --spec`).
nlohmann::ordered_json to_json(const ScenarioSpec& spec);

}  // namespace lockstep
