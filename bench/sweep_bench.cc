// BM_Sweep/ADAPTER: what `lockstep sweep --adapter ADAPTER --keep-going --shrink 0 --jobs 1` runs,
// for a fixed seed range (seeds 1..N, every fault kind, fencing on), timed end to end in this
// process: drawing each seed's spec, the simulated run, the checkers and the excuse judge. One
// iteration is the whole range. Counters, as rates over the iteration's wall time:
// seeds_per_second and events_per_second (simulator events, the sweep's stats.events); for a
// co-simulated ext adapter also exchanges_per_seed, the lines the harness sent its drivers per seed
// (each waits for the driver's `idle`: BM_Ext_SimExchange's cost is paid once per exchange).
// A co-simulated ext adapter without node 20 and its packages is skipped with the reason.
//
// The range is fixed per adapter (each service's bench registers its cases with its range) so a figure is comparable across builds: change it
// and the figures before and after no longer measure the same work. --jobs is 1 because the
// figure is per core; `sweep --jobs N` multiplies it by at most N. BM_Sweep/ADAPTER/jobs:N (lockstep's
// own adapters, N every core this process may use, when more than one) times `--jobs N` over a
// range kJobsRangeFactor times longer: what a sweep on this whole machine gets, forks and the
// ordered tally included (each iteration forks its workers, as each sweep does; over BM_Sweep's
// short ranges the forks of this large process were a third of the time). Run the jobs cases on
// their own (--benchmark_filter=BM_Sweep/.*/jobs): after the other cases have grown this
// process's heap, each fork costs more than a `lockstep sweep` process's does.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <exception>
#include <string>

#include "bench/sweep_bench.h"
#include "explore/sweep.h"
#include "explore/worker_pool.h"
#include "services/keep_warm.h"

namespace lockstep::bench {
namespace {

constexpr int kJobsRangeFactor = 5;

void BM_Sweep(benchmark::State& state, const SweepBenchCase& c, int jobs) {
  const SweepConfig config{.adapter = c.adapter,
                           .first_seed = 1,
                           .seeds = c.seeds,
                           .keep_going = true,  // every seed, violating or not
                           .shrink_max = 0,
                           .report_dir = "",
                           .jobs = jobs};
  uint64_t seeds = 0;
  uint64_t events = 0;
  // Drivers stay warm across iterations, as they do across a long sweep's seeds: the figure is a
  // sweep's steady state (the first iteration starts them, and is timed too).
  const KeepBackendsWarm warm;
  const uint64_t exchanges_before = c.exchanges_total ? c.exchanges_total() : 0;
  for (auto _ : state) {
    SweepResult r;
    try {
      r = run_sweep(config);
    } catch (const std::exception& e) {  // e.g. no node 20 for an ext adapter: say why
      return state.SkipWithError(e.what());
    }
    if (r.seeds_run != c.seeds) return state.SkipWithError("the sweep did not run every seed");
    seeds += static_cast<uint64_t>(r.seeds_run);
    events += r.events;
  }
  state.counters["seeds_per_second"] =
      benchmark::Counter(static_cast<double>(seeds), benchmark::Counter::kIsRate);
  state.counters["events_per_second"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  const uint64_t exchanges = c.exchanges_total ? c.exchanges_total() - exchanges_before : 0;
  if (exchanges > 0 && seeds > 0) {
    state.counters["exchanges_per_seed"] =
        static_cast<double>(exchanges) / static_cast<double>(seeds);
  }
}

}  // namespace

bool register_sweep_benchmark(SweepBenchCase c) {
  benchmark::RegisterBenchmark(("BM_Sweep/" + c.adapter).c_str(), BM_Sweep, c, 1)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  const int cores = available_cores();
  if (cores < 2 || !c.own) return true;
  const std::string name = "BM_Sweep/" + c.adapter + "/jobs:" + std::to_string(cores);
  c.seeds *= kJobsRangeFactor;
  benchmark::RegisterBenchmark(name.c_str(), BM_Sweep, c, cores)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  return true;
}

}  // namespace lockstep::bench
