#pragma once
// The simulated world: nodes with their own clocks, client code on fibers, a network, faults, and
// the trace, all driven by one scheduler and one seeded PRNG. A run is a pure function of the
// seed and of what the caller schedules.
//
// Nodes are clients or servers. Client code runs on fibers (spawn) and blocks only through the
// world: sleep_for_us(), or park() until someone calls wake() (a reply arrived) or a deadline
// passes. Server code runs in callbacks delivered to its node (deliver_at, or Network messages).
//
// Faults, and what they guarantee:
// - pause(node, d): stop-the-world for d of true time from now. Nothing of the node runs during
//   the pause (fiber resumptions and deliveries are deferred to its end, in their original order);
//   its clock keeps going; it resumes exactly where it stopped. Called from a fiber of that
//   node, pause() itself is where the fiber stops: it returns at the pause's end.
// - crash(node): the node dies at once. Its fibers never run again normally: a parked fiber is
//   unwound with ProcessKilled (at once, or at the current time when crash() is called from a
//   fiber, since fibers do not resume each other); deliveries to it are dropped; on_crash hooks
//   run (servers drop volatile state). Called from a fiber of that node, crash() throws
//   ProcessKilled itself. restart(node) starts a new incarnation and runs on_restart hooks.
//   Crashing a crashed node, or pausing one, is a traced no-op (random fault schedules do that).
// - Clocks: jump_clock and set_drift act from now on (schedule them with scheduler().at). A sleep
//   that spans a drift change measures its remaining local time at the new rate.
// Every fault is one trace line.
//
// Invariants: one fiber runs at a time; park/sleep are only called from a fiber; a fiber of a
// crashed node never returns from park/sleep normally; nothing here reads the wall clock or
// iterates an unordered container.
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "lockstep/clock.h"
#include "lockstep/random.h"
#include "sim/network.h"
#include "sim/node_clock.h"
#include "sim/scheduler.h"
#include "sim/time.h"
#include "sim/trace.h"

namespace lockstep::sim {

class Fiber;

// Thrown from park()/sleep_for_us() in a fiber whose node crashed or whose run is being torn down.
// Deliberately not a std::exception: code that catches std::exception lets it pass; code that
// catches (...) must rethrow.
struct ProcessKilled {};

struct WorldOptions {
  uint64_t seed = 1;
  SchedulerOptions scheduler;
  NetworkOptions network;
  size_t fiber_stack_bytes = size_t{256} * 1024;
  size_t trace_keep_lines_max = 2'000'000;
  bool trace_hash = true;  // false (with no lines kept): the trace only counts lines (trace.h)
};

using FiberId = int;

// Identifies one park of one fiber; a wake for an older park is ignored.
struct Waiter {
  FiberId fiber = -1;
  uint64_t generation = 0;
};

enum class ParkResult { woken, deadline };

class World {
 public:
  explicit World(WorldOptions options);
  ~World();  // unwinds fibers that have not finished (ProcessKilled), then frees them
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  Scheduler& scheduler() { return scheduler_; }
  Trace& trace() { return trace_; }
  Prng& prng() { return prng_; }
  Network& network() { return *network_; }
  TimeUs now_us() const { return scheduler_.now_us(); }
  uint64_t seed() const { return options_.seed; }

  // Appends a trace line at the current true time.
  size_t trace_line(const TraceLine& line) { return trace_.add(now_us(), line); }
  size_t trace_line(std::string_view text) { return trace_.add(now_us(), text); }
  // The same, formatted only when the trace keeps it; the hash reads the format string and the
  // arguments as they are (sim/trace.h). Arguments are still evaluated: pass plain values.
  template <typename... Args>
  size_t trace_linef(fmt::format_string<Args...> format, const Args&... args) {
    return trace_line(FormattedLine<Args...>(format, args...));
  }
  // The same again, for a line whose text costs: make() returns the text, called only when the
  // trace reads it.
  template <typename Make>
  size_t trace_line_by(Make&& make) {
    if (!trace_.wants_text()) return trace_line(std::string_view());
    return trace_line(std::string_view(std::forward<Make>(make)()));
  }
  bool trace_wants_text() const { return trace_.wants_text(); }

  // --- nodes and clocks ---
  NodeId add_node(std::string name, ClockSpec clock = {});
  size_t node_count() const { return nodes_.size(); }
  const std::string& node_name(NodeId node) const;
  NodeClock& node_clock(NodeId node);
  int64_t local_us(NodeId node) const;      // the node's wall reading now
  int64_t monotonic_us(NodeId node) const;  // the node's oscillator now (never jumps)
  // The Clock seam for code on this node (owned by the world, valid for its lifetime).
  Clock& clock(NodeId node);
  bool alive(NodeId node) const;
  uint64_t incarnation(NodeId node) const;
  bool paused(NodeId node) const;

  // --- fibers ---
  // Runs body on a new fiber of node from true time start_us (>= now). ProcessKilled ends it
  // quietly; any other escaping exception ends the run with an error (run() rethrows it).
  FiberId spawn(NodeId node, std::string name, std::function<void()> body, TimeUs start_us = -1);
  bool in_fiber() const { return current_fiber_ >= 0; }
  FiberId current_fiber() const { return current_fiber_; }
  NodeId current_node() const;  // the running fiber's node; must be in a fiber
  size_t unfinished_fibers() const;
  // The nodes of the fibers that have not finished, one entry per fiber, in spawn order. After
  // run() ended with an empty queue each of them is parked with nothing left to wake it (stuck).
  std::vector<NodeId> unfinished_fiber_nodes() const;

  // In a fiber: sleep for a local duration (drift applies, jumps do not).
  void sleep_for_us(int64_t local_duration_us);
  // In a fiber: a Waiter for the park that follows; hand it to whoever will wake us.
  Waiter prepare_park();
  // In a fiber: suspend until wake(waiter) or the true-time deadline. Throws ProcessKilled.
  ParkResult park(Waiter waiter, TimeUs deadline_us = kTimeNever);
  // In a fiber: suspend until wake(waiter), or until this fiber's node's monotonic clock reaches
  // local_deadline_us (kTimeNever: no deadline). A timeout a client measures on its own
  // oscillator: a drift change while parked re-times what is left, as a sleep's, so it ends when
  // that oscillator says, whatever its rate did meanwhile.
  ParkResult park_until_local(Waiter waiter, int64_t local_deadline_us);
  // The same, local_timeout_us of this node's monotonic clock from now.
  ParkResult park_for_local(Waiter waiter, int64_t local_timeout_us);
  // From anywhere: resume the parked fiber (deferred while its node is paused). Stale waiters
  // (already woken, timed out, or of a finished fiber) are ignored.
  void wake(Waiter waiter);

  // --- delivery to a node (servers' message handling) ---
  // Runs fn on node at true time t_us: deferred while the node is paused, dropped if the node is
  // crashed or restarted since `incarnation` (pass incarnation(node) at send time).
  void deliver_at(NodeId node, uint64_t incarnation, TimeUs t_us, std::function<void()> fn);
  // The same, but a drop runs on_drop (the caller traces it its own way) instead of tracing
  // "node N drop delivery". defer_while_paused = false runs fn even on a paused node: for
  // callbacks that only buffer data and wake a fiber (network Delivery::buffer).
  void deliver_at(NodeId node, uint64_t incarnation, TimeUs t_us, std::function<void()> fn,
                  std::function<void()> on_drop, bool defer_while_paused = true);
  // A server's own timer (a keepalive's idle, a probe's interval): runs fn on node when its
  // monotonic clock reads local_deadline_us, as deliver_at does at a true time (deferred while
  // paused; on_drop, or a trace line, once the node crashed or restarted since `incarnation`). A
  // drift change before then re-times it, as it does a sleep.
  void deliver_at_local(NodeId node, uint64_t incarnation, int64_t local_deadline_us,
                        std::function<void()> fn, std::function<void()> on_drop = nullptr);

  // --- faults (from now) ---
  void pause(NodeId node, TimeUs duration_us, std::string_view why = "");
  void crash(NodeId node);
  void restart(NodeId node);
  void on_crash(NodeId node, std::function<void()> hook);
  void on_restart(NodeId node, std::function<void()> hook);
  // Runs hook each time the last fiber of node that had not finished finishes (its program
  // ended, or a crash killed it): the process would exit, and its kernel close its sockets.
  void on_program_end(NodeId node, std::function<void()> hook);
  void jump_clock(NodeId node, int64_t delta_us);
  void set_drift(NodeId node, int64_t drift_ppm);

  // Runs until no fiber is left and the queue is empty, or a bound is hit. Rethrows an exception
  // that escaped a fiber body.
  RunResult run();
  // Unwinds every unfinished fiber now, as the destructor does: their handlers and destructors
  // run while what they use (the harness's clients) still exists. Call it before freeing that.
  void unwind_unfinished();

 private:
  struct Node;
  struct FiberSlot;
  using Action = std::function<void()>;

  // Events aimed at a fiber capture (slot, generation) only: 16 bytes fit std::function's
  // inline buffer, so the hot path (sleep, park, wake) allocates nothing.
  static Action resume_event(FiberSlot* slot, uint64_t generation);
  static Action deadline_event(FiberSlot* slot, uint64_t generation);
  void resume_fiber(FiberSlot& slot, uint64_t generation);
  void schedule_resume(FiberSlot& slot, uint64_t generation, TimeUs t_us);
  Node& node_ref(NodeId node);
  const Node& node_ref(NodeId node) const;
  FiberSlot& current_slot();
  std::string fiber_label(const FiberSlot& slot) const;
  bool fiber_dead(const FiberSlot& slot) const;
  void throw_if_killed(FiberSlot& slot);
  void suspend(FiberSlot& slot);
  void switch_to(FiberSlot& slot);
  void finish(FiberSlot& slot);
  void record_failure(FiberSlot& slot, std::exception_ptr failure);
  void kill(FiberSlot& slot);
  void unwind(FiberSlot& slot);
  void on_deadline(FiberSlot& slot, uint64_t generation);
  void deliver_now(NodeId node, uint64_t incarnation, Action fn, Action on_drop,
                   bool defer_while_paused);
  void defer(Node& node, Action action);
  void end_pause(NodeId node, uint64_t incarnation);
  void retime_sleepers(NodeId node, int64_t drift_ppm);
  struct LocalTimer;
  void retime_local_timers(NodeId node);
  void schedule_local_timer(uint64_t id, LocalTimer& timer);
  void fire_local_timer(uint64_t id);

  WorldOptions options_;
  Scheduler scheduler_;
  Trace trace_;
  Prng prng_;
  std::unique_ptr<Network> network_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<FiberSlot>> fibers_;
  // deliver_at_local's timers not yet due, by id (ordered: re-timed in id order).
  struct LocalTimer {
    NodeId node = 0;
    uint64_t incarnation = 0;
    int64_t local_deadline_us = 0;
    Action fn;
    Action on_drop;
    EventId event = kNoEvent;
  };
  std::map<uint64_t, LocalTimer> local_timers_;
  uint64_t next_local_timer_ = 0;
  size_t unfinished_fibers_ = 0;
  FiberId current_fiber_ = -1;
  std::exception_ptr fiber_failure_;
};

}  // namespace lockstep::sim
