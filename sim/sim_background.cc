#include "sim/sim_background.h"

#include <exception>
#include <optional>

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
    const TimeUs true_us = world_.node_clock(node_).true_duration_for(duration_us);
    const TimeUs deadline_us =
        true_us >= kTimeNever - world_.now_us() ? kTimeNever : world_.now_us() + true_us;
    world_.park(waiter, deadline_us);
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
    join();
  }
  void request_stop() override { shared_->request_stop(); }
  void join() override { shared_->join(); }

 private:
  std::shared_ptr<SharedTask> shared_;
};

}  // namespace

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
