// The simulator's own speed: the event queue alone, a park/wake round trip between two fibers,
// and N client fibers sleeping in a loop (the shape of a real run). Each reports
// items_per_second; SleepingClients also reports how much simulated time passes per wall second.
// Scenario runs a catalogue scenario end to end through the runner (memory adapter, no trace).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "run/runner.h"
#include "sim/scheduler.h"
#include "sim/world.h"

namespace {

using lockstep::sim::NodeId;
using lockstep::sim::RunEnd;
using lockstep::sim::RunResult;
using lockstep::sim::Scheduler;
using lockstep::sim::TimeUs;
using lockstep::sim::Waiter;
using lockstep::sim::World;

// A chain of events, each scheduling the next after a pseudo-random delay (an LCG: cheap, and the
// same on every run). Small enough for std::function's inline buffer, like most real callbacks.
struct Tick {
  Scheduler* scheduler;
  uint32_t* state;
  void operator()() const {
    *state = *state * 1'664'525U + 1'013'904'223U;
    scheduler->after(1 + (*state >> 22), *this);
  }
};

void BM_Sim_EventQueue(benchmark::State& state) {
  constexpr int kChains = 1'024;  // events pending at any moment
  constexpr uint64_t kEventsPerRun = 1 << 16;
  uint64_t events = 0;
  for (auto _ : state) {
    Scheduler scheduler({.events_max = kEventsPerRun});
    uint32_t lcg = 12'345;
    for (int i = 0; i < kChains; ++i) scheduler.at(i, Tick{&scheduler, &lcg});
    const RunResult r = scheduler.run();
    if (r.end != RunEnd::event_bound) state.SkipWithError("the run ended before its event bound");
    events += r.events;
  }
  state.SetItemsProcessed(static_cast<int64_t>(events));
}
BENCHMARK(BM_Sim_EventQueue);

// Two fibers hand control back and forth: each wakes the other, then parks. One item is one round
// trip (two parks, two wakes, two resumptions through the scheduler).
void BM_Sim_FiberSwitch(benchmark::State& state) {
  constexpr int kRoundTrips = 10'000;
  for (auto _ : state) {
    World world({.fiber_stack_bytes = 64 * 1024, .trace_keep_lines_max = 0});
    const NodeId node = world.add_node("node");
    Waiter waiting[2];
    for (int self = 0; self < 2; ++self) {
      world.spawn(node, self == 0 ? "ping" : "pong", [&world, &waiting, self] {
        for (int i = 0; i < kRoundTrips; ++i) {
          waiting[self] = world.prepare_park();
          world.wake(waiting[1 - self]);
          world.park(waiting[self]);
        }
      });
    }
    world.run();  // ends with pong parked for good; the world's destructor unwinds it
  }
  state.SetItemsProcessed(state.iterations() * kRoundTrips);
}
BENCHMARK(BM_Sim_FiberSwitch);

// N clients, each sleeping a drawn 100..1100 us in a loop; about 200k sleeps per iteration in all.
void BM_Sim_SleepingClients(benchmark::State& state) {
  const int clients = static_cast<int>(state.range(0));
  const int sleeps_each = std::max(1, 200'000 / clients);
  uint64_t events = 0;
  TimeUs simulated_us = 0;
  for (auto _ : state) {
    World world({.fiber_stack_bytes = 32 * 1024, .trace_keep_lines_max = 0});
    for (int c = 0; c < clients; ++c) {
      const NodeId node = world.add_node("client-" + std::to_string(c));
      world.spawn(node, "client", [&world, sleeps_each] {
        for (int i = 0; i < sleeps_each; ++i) world.sleep_for_us(world.prng().between(100, 1'100));
      });
    }
    const RunResult r = world.run();
    if (r.end != RunEnd::queue_empty) state.SkipWithError(r.message.c_str());
    events += r.events;
    simulated_us += r.time_us;
  }
  state.SetItemsProcessed(static_cast<int64_t>(events));
  // Simulated seconds per wall second: how much faster than real time a run goes.
  state.counters["sim_to_wall"] =
      benchmark::Counter(static_cast<double>(simulated_us) / 1e6, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Sim_SleepingClients)->Arg(10)->Arg(1'000)->Arg(10'000)->Unit(benchmark::kMillisecond);

// One catalogue scenario per iteration, judged as in a real run. events_per_second and sim_to_wall
// are over the runner's own wall clock (run_scenario's stats), so setup outside it is not counted.
void BM_Sim_Scenario(benchmark::State& state, const char* scenario) {
  uint64_t events = 0;
  int64_t sim_us = 0;
  int64_t wall_us = 0;
  for (auto _ : state) {
    const lockstep::RunReport report =
        lockstep::run_scenario({.scenario = scenario, .adapter = "memory", .keep_trace = false});
    if (report.end != lockstep::RunEnd::complete)
      return state.SkipWithError(report.end_message.c_str());
    events += report.stats.events;
    sim_us += report.stats.sim_time_us;
    wall_us += report.stats.wall_time_us;
  }
  const double wall_s = static_cast<double>(std::max<int64_t>(wall_us, 1)) / 1e6;
  state.SetItemsProcessed(static_cast<int64_t>(events));
  state.counters["events_per_second"] = static_cast<double>(events) / wall_s;
  state.counters["sim_to_wall"] = static_cast<double>(sim_us) / 1e6 / wall_s;
}

[[maybe_unused]] const bool registered_scenarios = [] {
  for (const char* scenario : {"gc-pause", "retry-storm"}) {
    benchmark::RegisterBenchmark((std::string("BM_Sim_Scenario/") + scenario).c_str(),
                                 BM_Sim_Scenario, scenario)
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
