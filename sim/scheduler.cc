#include "sim/scheduler.h"

#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "sim/assert.h"

namespace lockstep::sim {
namespace {

// Beyond this many pending events a run is surely broken (a loop scheduling without end);
// failing loudly beats exhausting memory.
constexpr size_t kPendingEventsMax = 10'000'000;

constexpr uint32_t slot_of(EventId id) { return static_cast<uint32_t>(id & 0xffff'ffffU); }
constexpr uint32_t generation_of(EventId id) { return static_cast<uint32_t>(id >> 32); }

}  // namespace

Scheduler::Scheduler(SchedulerOptions options) : options_(options) {
  LOCKSTEP_SIM_CHECK(options_.time_max_us >= 0, "time_max_us must not be negative");
}

EventId Scheduler::at(TimeUs t_us, std::function<void()> fn) {
  LOCKSTEP_SIM_CHECK(fn != nullptr, "an event needs a callback");
  LOCKSTEP_SIM_CHECK(live_events_ < kPendingEventsMax,
                     fmt::format("more than {} pending events", kPendingEventsMax));
  uint32_t slot;
  if (free_slots_.empty()) {
    LOCKSTEP_SIM_CHECK(slots_.size() < std::numeric_limits<uint32_t>::max(), "slot index overflow");
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  Slot& s = slots_[slot];
  s.fn = std::move(fn);
  s.cancelled = false;
  heap_.push_back(Entry{std::max(t_us, now_us_), next_seq_++, slot});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
  ++live_events_;
  return (static_cast<EventId>(s.generation) << 32) | slot;
}

void Scheduler::cancel(EventId id) {
  const uint32_t slot = slot_of(id);
  if (id == kNoEvent || slot >= slots_.size()) return;
  Slot& s = slots_[slot];
  // A freed slot has a new generation: the id's event already ran or was dropped.
  if (s.generation != generation_of(id) || s.cancelled || s.fn == nullptr) return;
  s.cancelled = true;
  s.fn = nullptr;  // release what the callback holds now, not when its entry surfaces
  --live_events_;
}

void Scheduler::free_slot(uint32_t slot) {
  Slot& s = slots_[slot];
  s.fn = nullptr;
  s.cancelled = false;
  if (++s.generation == 0) s.generation = 1;  // ids are never 0 (kNoEvent)
  free_slots_.push_back(slot);
}

bool Scheduler::drop_cancelled_top() {
  const uint32_t slot = heap_.front().slot;
  if (!slots_[slot].cancelled) return false;
  std::pop_heap(heap_.begin(), heap_.end(), Later{});
  heap_.pop_back();
  free_slot(slot);
  return true;
}

bool Scheduler::pending() const { return live_events_ > 0; }

void Scheduler::clear() {
  // Destroying a callback may schedule new events (a destructor that sends); drop those too.
  constexpr int kRoundsMax = 1000;
  for (int round = 0; !heap_.empty(); ++round) {
    LOCKSTEP_SIM_CHECK(round < kRoundsMax, "event callbacks keep scheduling while being dropped");
    std::vector<Entry> heap = std::move(heap_);
    heap_.clear();
    std::vector<std::function<void()>> doomed;
    doomed.reserve(heap.size());
    for (const Entry& e : heap) {
      doomed.push_back(std::move(slots_[e.slot].fn));
      if (!slots_[e.slot].cancelled) --live_events_;
      free_slot(e.slot);
    }
    doomed.clear();
  }
}

RunResult Scheduler::result(RunEnd end, std::string message) const {
  return RunResult{end, events_run_, now_us_, std::move(message)};
}

RunResult Scheduler::run() { return run_events(kTimeNever); }

RunResult Scheduler::run_until(TimeUs t_us) {
  RunResult r = run_events(t_us);
  if (r.end == RunEnd::queue_empty && t_us > now_us_) {
    if (t_us > options_.time_max_us) {
      now_us_ = options_.time_max_us;
      return result(RunEnd::time_bound,
                    fmt::format("time bound: run_until({}us) is past time_max_us {}", t_us,
                                options_.time_max_us));
    }
    now_us_ = t_us;
    r.time_us = now_us_;
  }
  return r;
}

RunResult Scheduler::run_events(TimeUs limit_us) {
  LOCKSTEP_SIM_CHECK(!running_, "run() from inside an event");
  struct Running {
    bool& flag;
    explicit Running(bool& f) : flag(f) { flag = true; }
    ~Running() { flag = false; }
  } running(running_);
  while (true) {
    if (stop_requested_) {
      stop_requested_ = false;
      return result(RunEnd::stopped, "stopped");
    }
    while (!heap_.empty() && drop_cancelled_top()) {
    }
    if (heap_.empty()) return result(RunEnd::queue_empty, "");
    const Entry next = heap_.front();
    if (next.time_us > limit_us) return result(RunEnd::queue_empty, "");
    if (next.time_us > options_.time_max_us) {
      return result(RunEnd::time_bound,
                    fmt::format("time bound: next event at {}us is past time_max_us {}",
                                next.time_us, options_.time_max_us));
    }
    if (events_run_ >= options_.events_max) {
      return result(RunEnd::event_bound,
                    fmt::format("event bound: {} events run (events_max), {} still pending",
                                events_run_, live_events_));
    }
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    heap_.pop_back();
    // Move the callback out and free its slot first: it may schedule (reallocating slots_) or
    // cancel its own id, which must then be a no-op.
    std::function<void()> fn = std::move(slots_[next.slot].fn);
    free_slot(next.slot);
    --live_events_;
    now_us_ = next.time_us;
    ++events_run_;
    fn();
  }
}

}  // namespace lockstep::sim
