#pragma once
// The Background seam on a simulated node: each task is a fiber of that node, so a pause of the
// node stops it and a crash kills it with the node's other fibers. Its waits park the fiber until
// the node's oscillator has run the duration (drift applies) or a stop wakes it.
//
// join() from a fiber of the node parks until the task's fiber has finished. It returns at once
// when the task is done, was never started, or its fiber can no longer finish (the node crashed:
// the joiner then dies with it); and when called while an exception unwinds the caller (parking
// there would throw out of a destructor).
//
// make_gate(): a CallGate for fibers of this node, admitting waiters in arrival order.
#include <memory>

#include "lockstep/background.h"
#include "sim/network.h"

namespace lockstep::sim {

class World;

class SimBackground final : public Background {
 public:
  SimBackground(World& world, NodeId node) : world_(world), node_(node) {}
  std::unique_ptr<BackgroundTask> start(std::string name,
                                        std::function<void(StopWaiter&)> body) override;
  std::shared_ptr<CallGate> make_gate() override;

 private:
  World& world_;
  NodeId node_;
};

}  // namespace lockstep::sim
