// The in-process memory adapter under contention, beside a std::mutex-guarded map doing the same
// insert+erase (the adapter's irreducible work), in one run (Google Benchmark).
//
//   BM_Lock_AcquireRelease/memory/contenders:N[/keys:many][/hold:1ms]
//       N contenders (contention.h), create+release one key, or each on its own keys (of 1024);
//       /hold:1ms sleeps 1 ms between the grant and the release
//   BM_Baseline_StdMutexMap/contenders:N   lock, insert, erase, unlock one key (Threads(N))
//
// items_per_second counts successful create+release pairs; calls_per_success counts adapter calls
// (contended creates included) per pair. A contended create retries at once after a yield. The
// wait and fairness counters are contention.h's.
#include <benchmark/benchmark.h>

#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/contention.h"
#include "bench/sweep_bench.h"
#include "lockstep/clock.h"
#include "services/memory/adapter/memory_adapter.h"

namespace {

namespace bench = lockstep::bench;

constexpr int64_t kTtlMs = 60'000;

// Creates until granted, holds, then releases; returns the adapter calls made. Throws on a failure
// other than contention.
int64_t pair(lockstep::MemoryAdapter& adapter, lockstep::LockSpec& spec,
             bench::Acquisition& acquisition, std::chrono::microseconds hold) {
  int64_t calls = 1;
  for (lockstep::AdapterResult r = adapter.create_lock(spec); !r.ok();
       r = adapter.create_lock(spec)) {
    if (r.status != lockstep::AdapterStatus::contended)
      throw std::runtime_error("a create failed other than by contention");
    std::this_thread::yield();
    ++calls;
  }
  acquisition.granted();
  bench::hold(hold);
  if (!adapter.release_lock(spec).ok()) throw std::runtime_error("a release failed");
  return calls + 1;
}

// One adapter (and clock) per benchmark run, shared by its contenders.
void BM_Memory(benchmark::State& state, int contenders, bool many_keys,
               std::chrono::microseconds hold) {
  lockstep::SystemClock clock;
  lockstep::MemoryAdapter adapter(lockstep::MemoryAdapterOptions{.clock = &clock});
  std::vector<lockstep::LockSpec> specs;
  for (int c = 0; c < contenders; ++c)
    specs.push_back({.value = "owner:" + std::to_string(c), .ttl_ms = kTtlMs});
  bench::run_contention(state, contenders, "calls_per_success",
                        [&](int c, int64_t sequence, bench::Acquisition& acquisition) {
                          lockstep::LockSpec& spec = specs[static_cast<size_t>(c)];
                          spec.key = bench::contention_key(many_keys, c, contenders, sequence);
                          return pair(adapter, spec, acquisition, hold);
                        });
}

void BM_StdMutexMap(benchmark::State& state) {
  static std::mutex mutex;
  static std::map<std::string, std::string> table;
  const std::string value = "owner:" + std::to_string(state.thread_index());
  for (auto _ : state) {
    const std::lock_guard lock(mutex);
    table.emplace(bench::bench_keys()[0], value);
    table.erase(bench::bench_keys()[0]);
  }
  state.SetItemsProcessed(state.iterations());
}

[[maybe_unused]] const bool registered = [] {
  for (int n : bench::kContenders) {
    benchmark::RegisterBenchmark(
        ("BM_Baseline_StdMutexMap/contenders:" + std::to_string(n)).c_str(), BM_StdMutexMap)
        ->Threads(n)
        ->UseRealTime();
  }
  bench::register_contention("BM_Lock_AcquireRelease/memory", bench::kContenders, true, BM_Memory);
  return true;
}();

}  // namespace

// BM_Sweep/memory (bench/sweep_bench.h): about half a second of work per iteration.
[[maybe_unused]] const bool kSweepRegistered =
    lockstep::bench::register_sweep_benchmark({.adapter = "memory", .seeds = 2'000});
