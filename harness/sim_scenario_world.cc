#include "harness/sim_scenario_world.h"

namespace lockstep {

TimeUs SimScenarioWorld::true_time_at_monotonic(int node, int64_t monotonic_us) {
  const sim::NodeClock& node_clock = world_.node_clock(node);
  const TimeUs now = world_.now_us();
  const int64_t ahead_us = monotonic_us - node_clock.monotonic_us(now);
  if (ahead_us >= 0) return now + node_clock.true_duration_for(ahead_us);
  return now - node_clock.true_duration_for(-ahead_us);
}

int SimScenarioWorld::add_client_node(const std::string& name, int64_t clock_offset_us,
                                      int64_t drift_ppm) {
  return world_.add_node(name, {.offset_us = clock_offset_us, .drift_ppm = drift_ppm});
}

void SimScenarioWorld::spawn(int node, const std::string& name, std::function<void()> body,
                             TimeUs start_us) {
  // A client killed by a fault unwinds with ProcessKilled (sim) or ClientKilled (its own crash()):
  // both end the process quietly.
  world_.spawn(
      node, name,
      [fn = std::move(body)] {
        try {
          fn();
        } catch (const ClientKilled&) {
        }
      },
      start_us);
}

}  // namespace lockstep
