#pragma once
// The simulator as a ScenarioWorld: client nodes are sim::World nodes (same ids), processes are
// fibers, faults are scheduler events. Everything, including jitter draws, comes from the run's
// seed, so a run is a pure function of (scenario, seed, build).
#include <map>
#include <memory>

#include "harness/scenario_world.h"
#include "sim/sim_background.h"
#include "sim/world.h"

namespace lockstep {

class SimScenarioWorld final : public ScenarioWorld {
 public:
  explicit SimScenarioWorld(sim::World& world) : world_(world) {}

  sim::World& sim() { return world_; }

  WorldKind kind() const override { return WorldKind::sim; }
  TimeUs now_us() override { return world_.now_us(); }
  size_t add_trace_line(const sim::TraceLine& line) override { return world_.trace_line(line); }
  bool trace_wants_text() const override { return world_.trace_wants_text(); }
  int add_client_node(const std::string& name, int64_t clock_offset_us, int64_t drift_ppm) override;
  Clock& clock(int node) override { return world_.clock(node); }
  TimeUs true_time_at_monotonic(int node, int64_t monotonic_us) override;
  Background& background(int node) override {
    std::unique_ptr<sim::SimBackground>& slot = backgrounds_[node];
    if (!slot) slot = std::make_unique<sim::SimBackground>(world_, node);
    return *slot;
  }
  int64_t draw_between(int64_t lo, int64_t hi) override { return world_.prng().between(lo, hi); }
  uint64_t draw_u64() override { return world_.prng().next_u64(); }
  void spawn(int node, const std::string& name, std::function<void()> body,
             TimeUs start_us) override;
  void at(TimeUs t_us, std::function<void()> fn) override {
    world_.scheduler().at(t_us, std::move(fn));
  }
  void pause(int node, TimeUs duration_us) override {
    world_.pause(node, duration_us, "stop-the-world");
  }
  void crash(int node) override { world_.crash(node); }
  int current_node() override { return world_.in_fiber() ? world_.current_node() : -1; }

 private:
  sim::World& world_;
  std::map<int, std::unique_ptr<sim::SimBackground>> backgrounds_;  // by node, made on first use
};

}  // namespace lockstep
