#include "sim/world.h"

#include <algorithm>
#include <deque>
#include <utility>

#include <fmt/format.h>

#include "sim/assert.h"
#include "sim/fiber.h"
#include "sim/sim_clock.h"

namespace lockstep::sim {
namespace {

// Bounds that only a runaway scenario reaches; they fail loudly instead of eating the machine.
constexpr size_t kNodesMax = 100'000;
constexpr size_t kFibersMax = 1'000'000;
constexpr size_t kDeferredPerNodeMax = 1'000'000;
constexpr size_t kFibersNamedInMessageMax = 5;

// In registration order; by index, so a hook may register another (which runs next time).
void run_hooks(const std::vector<std::function<void()>>& hooks) {
  const size_t count = hooks.size();
  for (size_t i = 0; i < count; ++i) hooks[i]();
}

std::string describe(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

}  // namespace

struct World::Node {
  Node(World& world, NodeId id, std::string node_name, ClockSpec spec)
      : name(std::move(node_name)), clock(spec), sim_clock(world, id) {}

  std::string name;
  NodeClock clock;
  SimClock sim_clock;
  bool alive = true;
  uint64_t incarnation = 1;
  bool paused = false;          // until its end_pause event runs (not merely until the time)
  TimeUs paused_until_us = 0;   // meaningful while paused
  std::deque<Action> deferred;  // what arrived during the pause, in arrival order
  std::vector<Action> crash_hooks;
  std::vector<Action> restart_hooks;
  std::vector<Action> program_end_hooks;
};

// One fiber and its park state. generation counts parks: a Waiter or a scheduled resume names
// the park it belongs to, so anything aimed at an older park is stale and ignored.
struct World::FiberSlot {
  enum class State { starting, running, armed, parked, waking, done };

  World* world = nullptr;
  FiberId id = -1;
  NodeId node = -1;
  uint64_t incarnation = 0;
  std::string name;
  std::unique_ptr<Fiber> fiber;
  State state = State::starting;
  uint64_t generation = 0;
  ParkResult result = ParkResult::woken;
  bool woken_while_armed = false;  // wake() between prepare_park() and park()
  bool killed = false;
  EventId deadline_event = kNoEvent;
  // A sleep in progress, or a park with a deadline on the node's clock (timed_locally): local time
  // still to measure from sleep_from_us (see retime_sleepers).
  bool sleeping = false;
  bool timed_locally = false;
  int64_t sleep_left_local_us = 0;
  TimeUs sleep_from_us = 0;
};

World::World(WorldOptions options)
    : options_(options),
      scheduler_(options.scheduler),
      trace_(options.trace_keep_lines_max, options.trace_hash),
      prng_(options.seed),
      network_(std::make_unique<Network>(*this, options.network)) {}

World::~World() {
  // Unwind every unfinished fiber so its stack's destructors run while the world still exists;
  // then drop pending events, whose callbacks may hold references into it.
  unwind_unfinished();
  scheduler_.clear();
  local_timers_.clear();
}

void World::unwind_unfinished() {
  try {
    // By index: an unwinding fiber may still spawn (fibers_ grows; the new ones are unwound too).
    for (size_t i = 0; i < fibers_.size(); ++i) {
      if (fibers_[i]->state != FiberSlot::State::done) unwind(*fibers_[i]);
    }
  } catch (...) {
    // Must not throw (the destructor calls it); the fibers left are freed by Boost's forced
    // unwinding when the world goes.
  }
}

// --- nodes and clocks ---

NodeId World::add_node(std::string name, ClockSpec clock) {
  LOCKSTEP_SIM_CHECK(nodes_.size() < kNodesMax, "too many nodes");
  const NodeId id = static_cast<NodeId>(nodes_.size());
  trace_linef("node {} add {} offset {:+}us drift {:+}ppm", id, name, clock.offset_us,
              clock.drift_ppm);
  nodes_.push_back(std::make_unique<Node>(*this, id, std::move(name), clock));
  return id;
}

World::Node& World::node_ref(NodeId node) {
  LOCKSTEP_SIM_CHECK(node >= 0 && static_cast<size_t>(node) < nodes_.size(),
                     fmt::format("no node {}", node));
  return *nodes_[static_cast<size_t>(node)];
}

const World::Node& World::node_ref(NodeId node) const {
  LOCKSTEP_SIM_CHECK(node >= 0 && static_cast<size_t>(node) < nodes_.size(),
                     fmt::format("no node {}", node));
  return *nodes_[static_cast<size_t>(node)];
}

const std::string& World::node_name(NodeId node) const { return node_ref(node).name; }
NodeClock& World::node_clock(NodeId node) { return node_ref(node).clock; }
int64_t World::local_us(NodeId node) const { return node_ref(node).clock.local_us(now_us()); }

int64_t World::monotonic_us(NodeId node) const {
  return node_ref(node).clock.monotonic_us(now_us());
}
Clock& World::clock(NodeId node) { return node_ref(node).sim_clock; }
bool World::alive(NodeId node) const { return node_ref(node).alive; }
uint64_t World::incarnation(NodeId node) const { return node_ref(node).incarnation; }
bool World::paused(NodeId node) const { return node_ref(node).paused; }

// --- fibers ---

FiberId World::spawn(NodeId node, std::string name, std::function<void()> body, TimeUs start_us) {
  Node& n = node_ref(node);
  LOCKSTEP_SIM_CHECK(n.alive, fmt::format("spawn on crashed node {}", node));
  LOCKSTEP_SIM_CHECK(body != nullptr, "a fiber needs a body");
  if (start_us < 0) start_us = now_us();
  LOCKSTEP_SIM_CHECK(start_us >= now_us(), "a fiber cannot start in the past");
  LOCKSTEP_SIM_CHECK(fibers_.size() < kFibersMax, "too many fibers");

  const FiberId id = static_cast<FiberId>(fibers_.size());
  auto slot = std::make_unique<FiberSlot>();
  slot->world = this;
  slot->id = id;
  slot->node = node;
  slot->incarnation = n.incarnation;
  slot->name = std::move(name);
  FiberSlot* s = slot.get();
  // ProcessKilled ends the fiber quietly; anything else escapes to Fiber, which hands it to
  // switch_to() (record_failure).
  slot->fiber = std::make_unique<Fiber>(
      [this, s, body = std::move(body)] {
        try {
          body();
        } catch (const ProcessKilled&) {
          trace_linef("fiber {} ({}) killed", s->id, s->name);
          return;
        }
        trace_linef("fiber {} ({}) done", s->id, s->name);
      },
      options_.fiber_stack_bytes);
  fibers_.push_back(std::move(slot));
  ++unfinished_fibers_;
  trace_linef("fiber {} ({}) spawn on node {} at {}us", s->id, s->name, node, start_us);
  schedule_resume(*s, 0, start_us);
  return id;
}

// A fiber's lines of every run (spawn, done, killed, timeout) spell this out in their own format
// strings, so a hashed run records numbers, not a string made for them: keep them alike.
std::string World::fiber_label(const FiberSlot& slot) const {
  return fmt::format("fiber {} ({})", slot.id, slot.name);
}

NodeId World::current_node() const {
  LOCKSTEP_SIM_CHECK(in_fiber(), "current_node() outside a fiber");
  return fibers_[static_cast<size_t>(current_fiber_)]->node;
}

size_t World::unfinished_fibers() const { return unfinished_fibers_; }

std::vector<NodeId> World::unfinished_fiber_nodes() const {
  std::vector<NodeId> nodes;
  for (const auto& slot : fibers_) {
    if (slot->state != FiberSlot::State::done) nodes.push_back(slot->node);
  }
  return nodes;
}

World::FiberSlot& World::current_slot() {
  LOCKSTEP_SIM_CHECK(in_fiber(), "park/sleep/prepare_park only from inside a fiber");
  return *fibers_[static_cast<size_t>(current_fiber_)];
}

bool World::fiber_dead(const FiberSlot& slot) const {
  const Node& n = *nodes_[static_cast<size_t>(slot.node)];
  return slot.killed || !n.alive || n.incarnation != slot.incarnation;
}

void World::throw_if_killed(FiberSlot& slot) {
  if (!fiber_dead(slot)) return;
  slot.killed = true;
  throw ProcessKilled{};
}

void World::sleep_for_us(int64_t local_duration_us) {
  FiberSlot& s = current_slot();
  throw_if_killed(s);
  if (local_duration_us <= 0) return;
  const Waiter waiter = prepare_park();
  s.sleeping = true;
  s.sleep_left_local_us = local_duration_us;
  s.sleep_from_us = now_us();
  const TimeUs true_us = node_ref(s.node).clock.true_duration_for(local_duration_us);
  park(waiter, true_us >= kTimeNever - now_us() ? kTimeNever : now_us() + true_us);
}

ParkResult World::park_for_local(Waiter waiter, int64_t local_timeout_us) {
  if (local_timeout_us >= kTimeNever - monotonic_us(current_slot().node)) {
    return park(waiter, kTimeNever);
  }
  return park_until_local(waiter, monotonic_us(current_slot().node) + local_timeout_us);
}

ParkResult World::park_until_local(Waiter waiter, int64_t local_deadline_us) {
  FiberSlot& s = current_slot();
  if (local_deadline_us == kTimeNever) return park(waiter, kTimeNever);
  Node& node = node_ref(s.node);
  const int64_t left_local_us = std::max<int64_t>(0, local_deadline_us - monotonic_us(s.node));
  // Timed as a sleep (retime_sleepers re-times it when the node's drift changes); park() and
  // suspend() clear the mark however the park ends.
  s.timed_locally = true;
  s.sleep_left_local_us = left_local_us;
  s.sleep_from_us = now_us();
  const TimeUs true_us = node.clock.true_duration_for(left_local_us);
  return park(waiter, true_us >= kTimeNever - now_us() ? kTimeNever : now_us() + true_us);
}

Waiter World::prepare_park() {
  FiberSlot& s = current_slot();
  throw_if_killed(s);
  LOCKSTEP_SIM_CHECK(s.state == FiberSlot::State::running || s.state == FiberSlot::State::armed,
                     "prepare_park() in a fiber that is not running");
  ++s.generation;
  s.state = FiberSlot::State::armed;
  s.woken_while_armed = false;
  return Waiter{s.id, s.generation};
}

ParkResult World::park(Waiter waiter, TimeUs deadline_us) {
  FiberSlot& s = current_slot();
  LOCKSTEP_SIM_CHECK(waiter.fiber == s.id && waiter.generation == s.generation &&
                         s.state == FiberSlot::State::armed,
                     "park() needs the Waiter of this fiber's latest prepare_park()");
  throw_if_killed(s);
  if (s.woken_while_armed || deadline_us <= now_us()) {
    s.state = FiberSlot::State::running;
    s.sleeping = false;
    s.timed_locally = false;
    return s.woken_while_armed ? ParkResult::woken : ParkResult::deadline;
  }
  if (deadline_us != kTimeNever) {
    s.deadline_event = scheduler_.at(deadline_us, deadline_event(&s, s.generation));
  }
  s.state = FiberSlot::State::parked;
  suspend(s);
  return s.result;
}

// Back to the scheduler; returns when resumed. A fiber resumed to die throws from here.
void World::suspend(FiberSlot& slot) {
  slot.fiber->suspend();
  slot.state = FiberSlot::State::running;
  slot.sleeping = false;
  slot.timed_locally = false;
  scheduler_.cancel(std::exchange(slot.deadline_event, kNoEvent));
  throw_if_killed(slot);
}

void World::wake(Waiter waiter) {
  if (waiter.fiber < 0) return;  // a default Waiter: nobody to wake
  LOCKSTEP_SIM_CHECK(static_cast<size_t>(waiter.fiber) < fibers_.size(),
                     fmt::format("wake() of unknown fiber {}", waiter.fiber));
  FiberSlot& s = *fibers_[static_cast<size_t>(waiter.fiber)];
  if (s.generation != waiter.generation) return;  // an older park: stale
  if (s.state == FiberSlot::State::armed) {
    s.woken_while_armed = true;
  } else if (s.state == FiberSlot::State::parked) {
    s.state = FiberSlot::State::waking;
    s.result = ParkResult::woken;
    scheduler_.cancel(std::exchange(s.deadline_event, kNoEvent));
    // Never resumed from here: wake() may run inside another fiber, and fibers do not nest.
    schedule_resume(s, s.generation, now_us());
  }
  // Any other state: already woken, timed out, running on, or finished. Stale.
}

World::Action World::resume_event(FiberSlot* slot, uint64_t generation) {
  return [slot, generation] { slot->world->resume_fiber(*slot, generation); };
}

World::Action World::deadline_event(FiberSlot* slot, uint64_t generation) {
  return [slot, generation] { slot->world->on_deadline(*slot, generation); };
}

void World::on_deadline(FiberSlot& s, uint64_t generation) {
  if (s.generation != generation || s.state != FiberSlot::State::parked) return;
  s.deadline_event = kNoEvent;
  s.state = FiberSlot::State::waking;
  s.result = ParkResult::deadline;
  if (!s.sleeping) trace_linef("fiber {} ({}) timeout", s.id, s.name);
  resume_fiber(s, generation);
}

void World::schedule_resume(FiberSlot& slot, uint64_t generation, TimeUs t_us) {
  scheduler_.at(t_us, resume_event(&slot, generation));
}

void World::resume_fiber(FiberSlot& s, uint64_t generation) {
  const bool due = s.generation == generation &&
                   (s.state == FiberSlot::State::waking || s.state == FiberSlot::State::starting);
  if (!due) return;  // stale: a newer park, or already finished
  if (fiber_dead(s)) return unwind(s);
  Node& n = *nodes_[static_cast<size_t>(s.node)];
  if (n.paused) return defer(n, resume_event(&s, generation));
  switch_to(s);
}

void World::switch_to(FiberSlot& slot) {
  LOCKSTEP_SIM_CHECK(!in_fiber(), "a fiber is resumed only from the scheduler, not another fiber");
  LOCKSTEP_SIM_CHECK(slot.fiber != nullptr && !slot.fiber->done(), "switch to a finished fiber");
  current_fiber_ = slot.id;
  slot.state = FiberSlot::State::running;
  try {
    slot.fiber->resume();
  } catch (...) {
    current_fiber_ = -1;
    record_failure(slot, std::current_exception());
  }
  current_fiber_ = -1;
  if (slot.fiber->done()) finish(slot);
}

void World::finish(FiberSlot& slot) {
  slot.state = FiberSlot::State::done;
  slot.fiber.reset();  // frees the stack now; the slot stays so old Waiters stay harmless
  scheduler_.cancel(std::exchange(slot.deadline_event, kNoEvent));
  --unfinished_fibers_;
  Node& n = node_ref(slot.node);
  if (n.program_end_hooks.empty()) return;
  for (const auto& other : fibers_) {  // bounded by the fibers spawned
    if (other->node == slot.node && other->state != FiberSlot::State::done) return;
  }
  run_hooks(n.program_end_hooks);
}

void World::record_failure(FiberSlot& slot, std::exception_ptr failure) {
  trace_linef("{} failed: {}", fiber_label(slot), describe(failure));
  if (!fiber_failure_) fiber_failure_ = std::move(failure);
  scheduler_.stop();
}

// Kills a fiber of a crashed node: at once from the scheduler, or as the next event at this
// time from inside a fiber (fibers do not resume each other).
void World::kill(FiberSlot& slot) {
  slot.killed = true;
  if (!in_fiber()) return unwind(slot);
  scheduler_.at(now_us(), [this, id = slot.id] {
    FiberSlot& s = *fibers_[static_cast<size_t>(id)];
    if (s.state != FiberSlot::State::done) unwind(s);
  });
}

// Resumes a killed fiber so that its park throws ProcessKilled and its stack unwinds.
void World::unwind(FiberSlot& slot) {
  slot.killed = true;
  scheduler_.cancel(std::exchange(slot.deadline_event, kNoEvent));
  if (slot.state == FiberSlot::State::done) return;
  if (slot.state == FiberSlot::State::starting) {
    trace_linef("fiber {} ({}) killed before start", slot.id, slot.name);
    return finish(slot);  // its body never ran: nothing on its stack to unwind
  }
  switch_to(slot);
  LOCKSTEP_SIM_CHECK(slot.state == FiberSlot::State::done,
                     fiber_label(slot) + " did not end when killed");
}

// --- delivery ---

void World::deliver_at(NodeId node, uint64_t incarnation, TimeUs t_us, std::function<void()> fn) {
  deliver_at(node, incarnation, t_us, std::move(fn), nullptr);
}

void World::deliver_at(NodeId node, uint64_t incarnation, TimeUs t_us, std::function<void()> fn,
                       std::function<void()> on_drop, bool defer_while_paused) {
  node_ref(node);  // checks the id now, not when the event runs
  scheduler_.at(t_us, [this, node, incarnation, defer_while_paused, fn = std::move(fn),
                       on_drop = std::move(on_drop)]() mutable {
    deliver_now(node, incarnation, std::move(fn), std::move(on_drop), defer_while_paused);
  });
}

void World::deliver_at_local(NodeId node, uint64_t incarnation, int64_t local_deadline_us,
                             std::function<void()> fn, std::function<void()> on_drop) {
  node_ref(node);  // checks the id now, not when the timer fires
  const uint64_t id = ++next_local_timer_;
  local_timers_.emplace(id, LocalTimer{.node = node,
                                       .incarnation = incarnation,
                                       .local_deadline_us = local_deadline_us,
                                       .fn = std::move(fn),
                                       .on_drop = std::move(on_drop)});
  schedule_local_timer(id, local_timers_.at(id));
}

// At the true time the timer's node's clock, at its rate now, reads the deadline.
void World::schedule_local_timer(uint64_t id, LocalTimer& timer) {
  const int64_t left_us = std::max<int64_t>(0, timer.local_deadline_us - monotonic_us(timer.node));
  const TimeUs true_us = node_ref(timer.node).clock.true_duration_for(left_us);
  timer.event = scheduler_.at(true_us >= kTimeNever - now_us() ? kTimeNever : now_us() + true_us,
                              [this, id] { fire_local_timer(id); });
}

void World::fire_local_timer(uint64_t id) {
  auto it = local_timers_.find(id);
  if (it == local_timers_.end()) return;
  LocalTimer timer = std::move(it->second);
  local_timers_.erase(it);
  deliver_now(timer.node, timer.incarnation, std::move(timer.fn), std::move(timer.on_drop), true);
}

// What is left of each of the node's timers is measured at its new rate from now.
void World::retime_local_timers(NodeId node_id) {
  for (auto& [id, timer] : local_timers_) {
    if (timer.node != node_id) continue;
    scheduler_.cancel(timer.event);
    schedule_local_timer(id, timer);
  }
}

void World::deliver_now(NodeId node, uint64_t incarnation, Action fn, Action on_drop,
                        bool defer_while_paused) {
  Node& n = node_ref(node);
  if (!n.alive || n.incarnation != incarnation) {
    if (on_drop) return on_drop();
    trace_linef("node {} drop delivery ({})", node, n.alive ? "restarted" : "down");
    return;
  }
  if (n.paused && defer_while_paused) {
    return defer(
        n, [this, node, incarnation, fn = std::move(fn), on_drop = std::move(on_drop)]() mutable {
          deliver_now(node, incarnation, std::move(fn), std::move(on_drop), true);
        });
  }
  fn();
}

void World::defer(Node& node, Action action) {
  LOCKSTEP_SIM_CHECK(node.deferred.size() < kDeferredPerNodeMax,
                     fmt::format("node {} deferred more than {} actions in one pause", node.name,
                                 kDeferredPerNodeMax));
  node.deferred.push_back(std::move(action));
}

// --- faults ---

void World::pause(NodeId node, TimeUs duration_us, std::string_view why) {
  Node& n = node_ref(node);
  LOCKSTEP_SIM_CHECK(duration_us >= 0, "a pause lasts a non-negative time");
  // The reason, " (why)", is in the line only when there is one.
  const std::string_view open = why.empty() ? "" : " (";
  const std::string_view close = why.empty() ? "" : ")";
  if (!n.alive) {
    trace_linef("node {} pause {}us ignored: down{}{}{}", node, duration_us, open, why, close);
    return;
  }
  trace_linef("node {} pause {}us{}{}{}", node, duration_us, open, why, close);
  const TimeUs end_us = duration_us >= kTimeNever - now_us() ? kTimeNever : now_us() + duration_us;
  if (!n.paused || end_us > n.paused_until_us) {
    n.paused_until_us = end_us;
    scheduler_.at(end_us, [this, node, inc = n.incarnation] { end_pause(node, inc); });
  }
  n.paused = true;
  if (!in_fiber() || current_node() != node) return;
  // The caller is on the paused node: it stops here and goes on when the pause ends.
  FiberSlot& s = current_slot();
  throw_if_killed(s);  // a fiber being torn down never blocks again
  ++s.generation;
  s.state = FiberSlot::State::waking;
  defer(n, resume_event(&s, s.generation));
  suspend(s);
}

void World::end_pause(NodeId node, uint64_t incarnation) {
  Node& n = node_ref(node);
  const bool current = n.alive && n.incarnation == incarnation;
  if (!current || !n.paused || now_us() < n.paused_until_us) return;  // superseded
  n.paused = false;
  trace_linef("node {} pause end", node);
  std::deque<Action> items = std::exchange(n.deferred, {});
  // Bounded by what was deferred before this point; an item may pause or crash the node again.
  while (!items.empty() && !n.paused && n.alive && n.incarnation == incarnation) {
    Action item = std::move(items.front());
    items.pop_front();
    item();
  }
  if (items.empty()) return;
  if (n.paused && n.alive && n.incarnation == incarnation) {
    // Paused again: the leftovers came first, so they go ahead of anything deferred since.
    for (Action& a : n.deferred) items.push_back(std::move(a));
    n.deferred = std::move(items);
    return;
  }
  // Crashed meanwhile: each leftover runs now and drops itself (with its trace line).
  for (Action& a : items) scheduler_.at(now_us(), std::move(a));
}

void World::crash(NodeId node) {
  Node& n = node_ref(node);
  if (!n.alive) {
    trace_linef("node {} crash ignored: already down", node);
    return;
  }
  trace_linef("node {} crash", node);
  n.alive = false;
  n.paused = false;
  // What waited for the pause's end now runs and finds the node dead (drops are traced).
  for (Action& a : n.deferred) scheduler_.at(now_us(), std::move(a));
  n.deferred.clear();
  run_hooks(n.crash_hooks);
  const FiberId self = current_fiber_;
  // By index, up to the fibers that exist now: unwinding one may spawn others.
  const size_t existing = fibers_.size();
  for (size_t i = 0; i < existing; ++i) {
    FiberSlot& slot = *fibers_[i];
    if (slot.node == node && slot.id != self && slot.state != FiberSlot::State::done) kill(slot);
  }
  if (self >= 0 && fibers_[static_cast<size_t>(self)]->node == node) {
    fibers_[static_cast<size_t>(self)]->killed = true;
    throw ProcessKilled{};
  }
}

void World::restart(NodeId node) {
  Node& n = node_ref(node);
  LOCKSTEP_SIM_CHECK(!n.alive, fmt::format("restart of live node {}: crash it first", node));
  n.alive = true;
  ++n.incarnation;
  trace_linef("node {} restart incarnation {}", node, n.incarnation);
  run_hooks(n.restart_hooks);
}

void World::on_crash(NodeId node, std::function<void()> hook) {
  LOCKSTEP_SIM_CHECK(hook != nullptr, "an on_crash hook needs a callback");
  node_ref(node).crash_hooks.push_back(std::move(hook));
}

void World::on_program_end(NodeId node, std::function<void()> hook) {
  LOCKSTEP_SIM_CHECK(hook != nullptr, "an on_program_end hook needs a callback");
  node_ref(node).program_end_hooks.push_back(std::move(hook));
}

void World::on_restart(NodeId node, std::function<void()> hook) {
  LOCKSTEP_SIM_CHECK(hook != nullptr, "an on_restart hook needs a callback");
  node_ref(node).restart_hooks.push_back(std::move(hook));
}

void World::jump_clock(NodeId node, int64_t delta_us) {
  node_ref(node).clock.jump(now_us(), delta_us);
  trace_linef("node {} clock jump {:+}us", node, delta_us);
}

void World::set_drift(NodeId node, int64_t drift_ppm) {
  retime_sleepers(node, drift_ppm);  // sets the new rate
  retime_local_timers(node);
  trace_linef("node {} clock drift {:+}ppm", node, drift_ppm);
}

// Sleepers measured part of their sleep at the old rate; the rest is measured at the new one.
void World::retime_sleepers(NodeId node_id, int64_t drift_ppm) {
  Node& node = node_ref(node_id);
  std::vector<FiberSlot*> sleepers;
  for (const auto& slot : fibers_) {
    if (slot->node != node_id || !(slot->sleeping || slot->timed_locally)) continue;
    if (slot->state != FiberSlot::State::parked) continue;  // already due: nothing to re-time
    const int64_t measured_us = node.clock.local_duration(now_us() - slot->sleep_from_us);
    slot->sleep_left_local_us = std::max<int64_t>(0, slot->sleep_left_local_us - measured_us);
    slot->sleep_from_us = now_us();
    sleepers.push_back(slot.get());
  }
  node.clock.set_drift_ppm(now_us(), drift_ppm);
  for (FiberSlot* s : sleepers) {
    scheduler_.cancel(s->deadline_event);
    const TimeUs left_us = node.clock.true_duration_for(s->sleep_left_local_us);
    const TimeUs at_us = left_us >= kTimeNever - now_us() ? kTimeNever : now_us() + left_us;
    s->deadline_event = scheduler_.at(at_us, deadline_event(s, s->generation));
  }
}

// --- running ---

RunResult World::run() {
  LOCKSTEP_SIM_CHECK(!in_fiber(), "run() from inside a fiber");
  RunResult result = scheduler_.run();
  if (fiber_failure_) std::rethrow_exception(std::exchange(fiber_failure_, nullptr));
  if (result.end == RunEnd::queue_empty && unfinished_fibers_ > 0) {
    std::string names;
    size_t named = 0;
    for (const auto& slot : fibers_) {
      if (slot->state == FiberSlot::State::done) continue;
      if (named++ == kFibersNamedInMessageMax) {
        names += ", ...";
        break;
      }
      names += (names.empty() ? "" : ", ") + fiber_label(*slot);
    }
    result.message = fmt::format("{} fibers still parked with nothing left to wake them: {}",
                                 unfinished_fibers_, names);
  }
  return result;
}

}  // namespace lockstep::sim
