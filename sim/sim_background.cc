#include "sim/sim_background.h"

#include <algorithm>
#include <deque>
#include <exception>
#include <optional>

#include "sim/assert.h"
#include "sim/world.h"

namespace lockstep::sim {

namespace {

// What the task's fiber and its owner share. The owner may drop its task without a join that
// could wait (see the header), so the fiber keeps this alive on its own.
class SharedTask final : public StopWaiter {
 public:
  SharedTask(World& world, NodeId node) : world_(world), node_(node) {}

  bool wait_for_us(int64_t duration_us) override {
    if (stop_requested_) return false;
    if (duration_us <= 0) return true;
    const Waiter waiter = world_.prepare_park();
    sleeping_ = waiter;
    world_.park_for_local(waiter, duration_us);
    sleeping_.reset();
    return !stop_requested_;
  }

  void request_stop() {
    stop_requested_ = true;
    if (sleeping_) world_.wake(*sleeping_);
  }
  bool stop_requested() const override { return stop_requested_; }

  void join() {
    if (done_ || std::uncaught_exceptions() > 0) return;
    if (!world_.in_fiber() || !world_.alive(node_)) return;
    joiner_ = world_.prepare_park();
    world_.park(*joiner_);
    joiner_.reset();
  }

  // The fiber's last act, whether its body returned or its node died under it.
  void finished() {
    done_ = true;
    if (joiner_) world_.wake(*joiner_);
  }

 private:
  World& world_;
  NodeId node_;
  bool stop_requested_ = false;
  bool done_ = false;
  std::optional<Waiter> sleeping_;  // the task fiber's park while it waits
  std::optional<Waiter> joiner_;    // the owner's park while it joins
};

class SimTask final : public BackgroundTask {
 public:
  explicit SimTask(std::shared_ptr<SharedTask> shared) : shared_(std::move(shared)) {}
  ~SimTask() override {
    request_stop();
    try {
      join();
    } catch (const ProcessKilled&) {
      // The joiner's node died while it waited, and a destructor cannot pass that on. The fiber
      // is marked killed, so its next park throws again and it unwinds from there.
    }
  }
  void request_stop() override { shared_->request_stop(); }
  void join() override { shared_->join(); }

 private:
  std::shared_ptr<SharedTask> shared_;
};

// Fibers of one node taking turns. leave() hands the gate straight to the first waiter (held_
// stays true), so a fiber that arrives between the hand-over and the waiter's resumption cannot
// overtake it. A waiter killed with its node (ProcessKilled out of park) withdraws, or, when the
// gate was already handed to it, passes it on: a dead fiber never keeps the gate.
class FiberGate final : public CallGate {
 public:
  explicit FiberGate(World& world) : world_(world) {}

  void enter() override {
    if (!held_) {
      held_ = true;
      return;
    }
    LOCKSTEP_SIM_CHECK(waiting_.size() < kWaitersMax, "CallGate: too many waiting fibers");
    const Waiter waiter = world_.prepare_park();
    waiting_.push_back(waiter);
    try {
      // Woken only by leave(), which has made us the holder.
      while (world_.park(waiter) != ParkResult::woken) {
      }
    } catch (...) {
      const auto self = std::find_if(waiting_.begin(), waiting_.end(), [&](const Waiter& w) {
        return w.fiber == waiter.fiber && w.generation == waiter.generation;
      });
      if (self != waiting_.end()) {
        waiting_.erase(self);
      } else {
        leave();
      }
      throw;
    }
  }

  void leave() override {
    LOCKSTEP_SIM_CHECK(held_, "CallGate: leave() without enter()");
    if (waiting_.empty()) {
      held_ = false;
      return;
    }
    const Waiter next = waiting_.front();
    waiting_.pop_front();
    world_.wake(next);
  }

 private:
  // Fibers of one client's Locker: its owner and one task per auto-extending lock.
  static constexpr size_t kWaitersMax = 100'000;
  World& world_;
  bool held_ = false;
  std::deque<Waiter> waiting_;
};

}  // namespace

std::shared_ptr<CallGate> SimBackground::make_gate() { return std::make_shared<FiberGate>(world_); }

std::unique_ptr<BackgroundTask> SimBackground::start(std::string name,
                                                     std::function<void(StopWaiter&)> body) {
  auto shared = std::make_shared<SharedTask>(world_, node_);
  world_.spawn(node_, std::move(name), [shared, body = std::move(body)] {
    struct Finish {
      SharedTask& task;
      ~Finish() { task.finished(); }
    } finish{*shared};
    if (!shared->stop_requested()) body(*shared);
  });
  return std::make_unique<SimTask>(std::move(shared));
}

}  // namespace lockstep::sim
