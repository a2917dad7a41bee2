#include "sim/sim_clock.h"

#include <fmt/format.h>

#include "sim/assert.h"
#include "sim/world.h"

namespace lockstep::sim {

int64_t SimClock::now_us() { return world_.local_us(node_); }

int64_t SimClock::monotonic_us() { return world_.monotonic_us(node_); }

void SimClock::sleep_for_us(int64_t duration_us) {
  // Sleeping on another node's clock would measure the wrong oscillator (and park the wrong node).
  LOCKSTEP_SIM_CHECK(world_.in_fiber() && world_.current_node() == node_,
                     fmt::format("sleep on node {}'s clock from outside its fibers", node_));
  world_.sleep_for_us(duration_us);
}

}  // namespace lockstep::sim
