#pragma once
// The Clock seam for code on a simulated node: now_us() is the node's local wall clock,
// monotonic_us() its oscillator (drifts, never jumps); sleep_for_us() parks the calling fiber
// (which must belong to this node) for that duration of its oscillator.
#include "lockstep/clock.h"
#include "sim/network.h"

namespace lockstep::sim {

class World;

class SimClock final : public Clock {
 public:
  SimClock(World& world, NodeId node) : world_(world), node_(node) {}
  int64_t now_us() override;
  int64_t monotonic_us() override;
  void sleep_for_us(int64_t duration_us) override;

 private:
  World& world_;
  NodeId node_;
};

}  // namespace lockstep::sim
