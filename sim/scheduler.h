#pragma once
// The event queue: callbacks ordered by (true time, sequence number), run one at a time.
//
// Invariants: time never goes backward; events at the same time run in the order they were
// scheduled; nothing is ordered by address or by hashing. A run ends when the queue is empty, when
// stop() is called, or when a bound (max events, max time) is hit; a bound hit is reported as such
// in RunResult, never mistaken for a normal end.
#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <vector>

#include "sim/time.h"

namespace lockstep::sim {

struct SchedulerOptions {
  uint64_t max_events = 20'000'000;
  TimeUs max_time_us = 24LL * 3600 * kUsPerSec;
};

enum class RunEnd { queue_empty, stopped, event_bound, time_bound };

struct RunResult {
  RunEnd end = RunEnd::queue_empty;
  uint64_t events = 0;
  TimeUs time_us = 0;
  std::string message;  // for the bounds: what was exceeded, in words
};

using EventId = uint64_t;

class Scheduler {
 public:
  explicit Scheduler(SchedulerOptions options = {});

  TimeUs now_us() const { return now_us_; }
  uint64_t events_run() const { return events_run_; }

  // Runs fn at true time t_us (clamped to now if earlier). Returns an id for cancel().
  EventId at(TimeUs t_us, std::function<void()> fn);
  EventId after(TimeUs delay_us, std::function<void()> fn) { return at(now_us_ + delay_us, std::move(fn)); }
  // A cancelled event never runs. Cancelling an event that already ran is a no-op.
  void cancel(EventId id);

  RunResult run();
  // Runs events with time <= t_us, then sets now to t_us (if nothing stopped it first).
  RunResult run_until(TimeUs t_us);
  void stop() { stop_requested_ = true; }
  bool pending() const;

 private:
  struct Event {
    TimeUs time_us;
    uint64_t seq;
    std::function<void()> fn;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time_us != b.time_us ? a.time_us > b.time_us : a.seq > b.seq;
    }
  };
  RunResult run_events(TimeUs limit_us);

  SchedulerOptions options_;
  TimeUs now_us_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t events_run_ = 0;
  bool stop_requested_ = false;
  std::priority_queue<Event, std::vector<Event>, Later> queue_;
  std::vector<uint64_t> cancelled_;  // sorted seqs of cancelled, not yet popped events
};

}  // namespace lockstep::sim
