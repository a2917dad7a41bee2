#pragma once
// The Background seam: work that runs beside its caller, in the caller's process, such as a lock's
// auto-extension or a lock client's own renewal watchdog (ClientSeams::background). Real: a thread
// (ThreadBackground, adapters/core/background.h). Simulator: a fiber of the caller's node, so a pause of that
// process stops it and a crash kills it, as SIGSTOP and SIGKILL stop a library's timers.
//
// Invariants:
// - A task's body runs once, beside the caller (a thread may begin it before start() returns).
// - The body waits only through its StopWaiter: wait_for_us(d) sleeps d microseconds of the
//   node's monotonic clock and returns false at once when a stop was requested (before or during
//   the wait), so a stopped task never starts another step.
// - join() returns once the body has returned: it may wait out one step in flight (an adapter
//   call, bounded by that call's own timeout). The task's destructor requests a stop and joins.
// - The body and its caller must not use one adapter or connection at the same time: they take
//   turns through a CallGate (make_gate()), as Lock does for every adapter call.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace lockstep {

class StopWaiter {
 public:
  virtual ~StopWaiter() = default;
  // Sleeps duration_us of the monotonic clock; false when a stop was requested instead.
  virtual bool wait_for_us(int64_t duration_us) = 0;
  // Whether a stop was requested: a body checks it after a step that blocked (an adapter call)
  // before it touches its owner's state, which a stopped task must leave alone.
  virtual bool stop_requested() const = 0;
};

class BackgroundTask {
 public:
  virtual ~BackgroundTask() = default;
  virtual void request_stop() = 0;
  virtual void join() = 0;
};

// Admits one holder at a time among a caller and its background tasks, so that an adapter and its
// connection (a hiredis context, Redlock's map of held locks, a mongoc client: none is safe to use
// from two threads) see one call at a time. Real: a mutex. Simulator: the fibers of one node
// waiting for it park and are admitted in arrival order. enter() may block for as long as the
// holder's call lasts (bounded by that call's own timeout); it is never re-entered by its holder.
class CallGate {
 public:
  virtual ~CallGate() = default;
  virtual void enter() = 0;
  virtual void leave() = 0;
};

// Holds a gate for a scope; a null gate admits at once.
class GatePass {
 public:
  explicit GatePass(CallGate* gate) : gate_(gate) {
    if (gate_ != nullptr) gate_->enter();
  }
  ~GatePass() {
    if (gate_ != nullptr) gate_->leave();
  }
  GatePass(const GatePass&) = delete;
  GatePass& operator=(const GatePass&) = delete;

 private:
  CallGate* gate_;
};

class Background {
 public:
  virtual ~Background() = default;
  // Starts body on its own thread or fiber. name labels it in traces and thread names.
  virtual std::unique_ptr<BackgroundTask> start(std::string name,
                                                std::function<void(StopWaiter&)> body) = 0;
  // A gate for the callers and tasks that share one adapter (see CallGate).
  virtual std::shared_ptr<CallGate> make_gate() = 0;
};

}  // namespace lockstep
