// BM_Sweep/ADAPTER: what `lockstep sweep --adapter ADAPTER --keep-going --shrink 0 --jobs 1` runs,
// for a fixed seed range (seeds 1..N, every fault kind, fencing on), timed end to end in this
// process: drawing each seed's spec, the simulated run, the checkers and the excuse judge. One
// iteration is the whole range. Counters, as rates over the iteration's wall time:
// seeds_per_second and events_per_second (simulator events, the sweep's stats.events); for a
// co-simulated ext adapter also exchanges_per_seed, the lines the harness sent its drivers per seed
// (each waits for the driver's `idle`: BM_Ext_SimExchange's cost is paid once per exchange).
// A co-simulated ext adapter without node 20 and its packages is skipped with the reason.
//
// The range is fixed per adapter (kSeeds below) so a figure is comparable across builds: change it
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

#include "explore/sweep.h"
#include "explore/worker_pool.h"
#include "services/ext/driver/sim_driver.h"
#include "services/keep_warm.h"

namespace {

struct SweepCase {
  const char* adapter;
  int seeds;        // seeds 1..seeds, the same every run
  bool own = true;  // lockstep's adapter (also timed on every core), not a co-simulated library
};

// About half a second of work per iteration at the figures of issue 18, on this machine. The ext
// adapters (co-simulated npm libraries, a Node driver per client) stand beside redis: issue 19
// bounds a co-simulated seed's cost at 20 times lockstep's own adapter's.
constexpr SweepCase kCases[] = {{"memory", 2'000},
                                {"redis", 500},
                                {"redlock", 200},
                                {"mongo", 200},
                                {"ext:locco-redis", 20, false},
                                {"ext:locco-memory", 50, false},
                                {"ext:redis-semaphore", 20, false},
                                {"ext:node-redlock", 10, false},
                                {"ext:redis-semaphore-redlock", 10, false}};

constexpr int kJobsRangeFactor = 5;

void BM_Sweep(benchmark::State& state, SweepCase c, int jobs) {
  const lockstep::SweepConfig config{.adapter = c.adapter,
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
  const lockstep::KeepBackendsWarm warm;
  const uint64_t exchanges_before = lockstep::ext::SimDriverProcess::exchanges_total();
  for (auto _ : state) {
    lockstep::SweepResult r;
    try {
      r = lockstep::run_sweep(config);
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
  const uint64_t exchanges = lockstep::ext::SimDriverProcess::exchanges_total() - exchanges_before;
  if (exchanges > 0 && seeds > 0) {
    state.counters["exchanges_per_seed"] =
        static_cast<double>(exchanges) / static_cast<double>(seeds);
  }
}

[[maybe_unused]] const bool registered = [] {
  for (const SweepCase& c : kCases) {
    benchmark::RegisterBenchmark((std::string("BM_Sweep/") + c.adapter).c_str(), BM_Sweep, c, 1)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  const int cores = lockstep::available_cores();
  if (cores < 2) return true;
  for (const SweepCase& c : kCases) {
    if (!c.own) continue;
    const std::string name =
        std::string("BM_Sweep/") + c.adapter + "/jobs:" + std::to_string(cores);
    SweepCase longer = c;
    longer.seeds *= kJobsRangeFactor;
    benchmark::RegisterBenchmark(name.c_str(), BM_Sweep, longer, cores)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  return true;
}();

}  // namespace
