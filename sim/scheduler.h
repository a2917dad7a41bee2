#pragma once
// The event queue: callbacks ordered by (true time, sequence number), run one at a time.
//
// Invariants: time never goes backward; events at the same time run in the order they were
// scheduled; nothing is ordered by address or by hashing. A run ends when the queue is empty, when
// stop() is called, or when a bound (max events, max time) is hit; a bound hit is reported as such
// in RunResult, never mistaken for a normal end.
//
// The bounds: events_max caps events_run() over the scheduler's life (RunResult.events is that
// total too), and no event later than time_max_us ever runs (now never passes it). Cancelled
// events are not counted. A run_until(t) that ran everything due by t ends with queue_empty
// ("nothing left before the limit"); pending() tells whether later events remain.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/time.h"

namespace lockstep::sim {

struct SchedulerOptions {
  uint64_t events_max = 20'000'000;
  TimeUs time_max_us = 24LL * 3600 * kUsPerSec;
};

enum class RunEnd { queue_empty, stopped, event_bound, time_bound };

struct RunResult {
  RunEnd end = RunEnd::queue_empty;
  uint64_t events = 0;
  TimeUs time_us = 0;
  std::string message;  // for the bounds: what was exceeded, in words
};

// Never 0 for a scheduled event, so callers can use kNoEvent as "none".
using EventId = uint64_t;
inline constexpr EventId kNoEvent = 0;

class Scheduler {
 public:
  explicit Scheduler(SchedulerOptions options = {});

  TimeUs now_us() const { return now_us_; }
  uint64_t events_run() const { return events_run_; }

  // Runs fn at true time t_us (clamped to now if earlier). Returns an id for cancel().
  EventId at(TimeUs t_us, std::function<void()> fn);
  EventId after(TimeUs delay_us, std::function<void()> fn) {
    const bool saturates = delay_us >= kTimeNever - now_us_;
    return at(saturates ? kTimeNever : now_us_ + delay_us, std::move(fn));
  }
  // A cancelled event never runs. Cancelling an event that already ran is a no-op.
  void cancel(EventId id);

  RunResult run();
  // Runs events with time <= t_us, then sets now to t_us (if nothing stopped it first).
  RunResult run_until(TimeUs t_us);
  void stop() { stop_requested_ = true; }
  bool pending() const;
  size_t pending_count() const { return live_events_; }
  // Drops every pending event without running it (their callbacks are destroyed).
  void clear();

 private:
  // The heap holds small trivially copyable entries; callbacks live in slots, reused through a
  // free list, so cancel() is O(1), frees the callback at once, and memory stays bounded by the
  // number of pending events. An EventId is (slot generation << 32 | slot index); a slot's
  // generation changes whenever it is freed, so an old id never cancels a newer event.
  struct Entry {
    TimeUs time_us;
    uint64_t seq;
    uint32_t slot;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.time_us != b.time_us ? a.time_us > b.time_us : a.seq > b.seq;
    }
  };
  struct Slot {
    std::function<void()> fn;
    uint32_t generation = 1;
    bool cancelled = false;
  };
  RunResult run_events(TimeUs limit_us);
  bool drop_cancelled_top();
  void free_slot(uint32_t slot);
  RunResult result(RunEnd end, std::string message) const;

  SchedulerOptions options_;
  TimeUs now_us_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t events_run_ = 0;
  size_t live_events_ = 0;
  bool stop_requested_ = false;
  bool running_ = false;     // inside run_events: a nested run would break time's order
  std::vector<Entry> heap_;  // a binary heap under Later: top is the earliest (time, seq)
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
};

}  // namespace lockstep::sim
