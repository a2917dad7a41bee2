#pragma once
// The Recorder writes the history of a run: it stamps each event with true time, gives it a trace
// line, and appends it. It is also the LeaseObserver of in-process backends, attributing each
// grant, extend and revoke to the client whose code made the call.
//
// After close() (the run has ended and the world is being torn down) events are ignored, so code
// unwinding a killed client cannot add to a finished history. record() is thread-safe (the real
// world's clients are threads); the stamp and the append happen under one lock, so the history
// stays in time order. A simulated run records from its one thread (fibers, not threads): with
// RecorderHooks::one_thread there is no lock, and a record from any other thread than the one that
// made the recorder is an error (LOCKSTEP_CHECK), never a race.
#include <functional>
#include <mutex>
#include <string_view>
#include <thread>

#include "adapters/core/lease_observer.h"
#include "history/history.h"
#include "sim/trace.h"

namespace lockstep {

struct RecorderHooks {
  std::function<TimeUs()> now_us;  // true time
  // Appends a trace line (the event's, sim/trace.h), returns its index.
  std::function<size_t(const sim::TraceLine&)> trace_line;
  std::function<int()> current_client;  // the client running now, or -1
  // The most events the history may hold; the event that would pass it is dropped, the recorder
  // is full() from then on, and on_full runs once (the runner stops the world there).
  size_t events_max = SIZE_MAX;
  std::function<void()> on_full;
  bool one_thread = false;  // every record() from the thread that made the recorder: no lock
};

class Recorder final : public LeaseObserver {
 public:
  explicit Recorder(RecorderHooks hooks) : hooks_(std::move(hooks)) {
    history_.reserve(256);  // a swarm seed's history, about: no regrowth copying events
  }

  // Stamps time and trace line, appends, returns the index (or npos once closed).
  size_t record(HistoryEvent e);
  void close() { closed_ = true; }
  bool closed() const { return closed_; }
  bool full() const { return full_; }

  // A simulated run's scenario may watch the events as they are recorded, to act at the moment
  // something happens (crash-in-acquire kills its holder once a server granted its lease). One
  // watcher; simulated runs only (one_thread), so it runs on the simulator's thread, in order.
  void watch(std::function<void(const HistoryEvent&)> watcher);

  History& history() { return history_; }
  const History& history() const { return history_; }
  TimeUs now_us() const { return hooks_.now_us(); }

  void on_grant(std::string_view server, std::string_view key, std::string_view value,
                int64_t ttl_us, uint64_t fencing_token) override;
  void on_extend(std::string_view server, std::string_view key, std::string_view value,
                 int64_t ttl_us) override;
  void on_revoke(std::string_view server, std::string_view key, std::string_view value,
                 RevokeCause cause) override;

 private:
  RecorderHooks hooks_;
  bool full_ = false;
  std::mutex mutex_;  // unused with hooks_.one_thread
  std::thread::id owner_ = std::this_thread::get_id();
  History history_;
  bool closed_ = false;
  std::function<void(const HistoryEvent&)> watcher_;
};

}  // namespace lockstep
