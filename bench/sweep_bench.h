#pragma once
// BM_Sweep/ADAPTER (bench/sweep_bench.cc): each lock service registers its own adapters' cases from
// its bench/ folder, with a fixed seed range so a figure is comparable across builds.
#include <cstdint>
#include <functional>
#include <string>

namespace lockstep::bench {

struct SweepBenchCase {
  std::string adapter;
  int seeds = 0;    // seeds 1..seeds, the same every run
  bool own = true;  // lockstep's adapter (also timed on every core), not a co-simulated library
  // A co-simulated library's count of exchanges with its drivers so far (exchanges_per_seed).
  std::function<uint64_t()> exchanges_total;
};

// Registers BM_Sweep/ADAPTER and, for lockstep's own adapters on a machine of more than one core,
// BM_Sweep/ADAPTER/jobs:N. Returns true, for a static initialiser.
bool register_sweep_benchmark(SweepBenchCase c);

}  // namespace lockstep::bench
