// The keyed locks beside the standard mutexes, in one run (Google Benchmark).
//
//   BM_Lock_AcquireRelease/keyed-rw/contenders:N[/keys:many][/hold:1ms]   lock+unlock (exclusive)
//   BM_Lock_AcquireRelease/fifo/contenders:N[/keys:many][/hold:1ms]       with_lock
//       N contenders (contention.h) on one key, or each on its own keys (of 1024); /hold:1ms
//       sleeps 1 ms inside the lock
//   BM_Baseline_StdMutex/contenders:N, BM_Baseline_StdSharedMutex/contenders:N (exclusive lock)
//   BM_Baseline_StdMutexPlusHashLookup/contenders:N   lock a mutex, find the key in a hash map
//
// items_per_second counts successful acquire+release pairs. The keyed cases report keys_after:
// the per-key states left once everything is released (must be 0: idle keys cost no memory), and
// contention.h's wait and fairness counters. The baselines run on Google Benchmark's Threads(N),
// which appends /threads:N; contenders:1 is the uncontended case, compared with std::mutex plus a
// hash lookup (target: within 3x).
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "bench/contention.h"
#include "services/keyed/adapter/fifo_lock.h"
#include "services/keyed/adapter/keyed_rw.h"

namespace {

namespace bench = lockstep::bench;

// One lock per benchmark run, shared by its contenders; keys_after is read once all have joined.
void BM_KeyedRw(benchmark::State& state, int contenders, bool many_keys,
                std::chrono::microseconds hold) {
  lockstep::keyed::KeyedRwMutex mtx;
  const bool ran = bench::run_contention(
      state, contenders, "", [&](int c, int64_t sequence, bench::Acquisition& acquisition) {
        lockstep::keyed::RwHandle h =
            mtx.lock(bench::contention_key(many_keys, c, contenders, sequence));
        acquisition.granted();
        benchmark::DoNotOptimize(h);
        bench::hold(hold);
        return int64_t{0};
      });
  if (ran) state.counters["keys_after"] = static_cast<double>(mtx.key_count());
}

void BM_Fifo(benchmark::State& state, int contenders, bool many_keys,
             std::chrono::microseconds hold) {
  lockstep::keyed::FifoLock lock;
  std::atomic<int64_t> sink{0};
  const bool ran = bench::run_contention(
      state, contenders, "", [&](int c, int64_t sequence, bench::Acquisition& acquisition) {
        lock.with_lock(bench::contention_key(many_keys, c, contenders, sequence), [&] {
          acquisition.granted();
          sink.fetch_add(1, std::memory_order_relaxed);
          bench::hold(hold);
        });
        return int64_t{0};
      });
  if (ran) state.counters["keys_after"] = static_cast<double>(lock.size());
}

void BM_StdMutex(benchmark::State& state) {
  static std::mutex mutex;
  for (auto _ : state) {
    std::lock_guard lock(mutex);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_StdSharedMutex(benchmark::State& state) {
  static std::shared_mutex mutex;
  for (auto _ : state) {
    std::lock_guard lock(mutex);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_StdMutexPlusHashLookup(benchmark::State& state) {
  static std::mutex mutex;
  static const std::unordered_map<std::string, int> table = [] {
    std::unordered_map<std::string, int> t;
    for (int i = 0; i < bench::kManyKeys; ++i)
      t.emplace(bench::bench_keys()[static_cast<size_t>(i)], i);
    return t;
  }();
  for (auto _ : state) {
    std::lock_guard lock(mutex);
    auto it = table.find(bench::bench_keys()[0]);
    benchmark::DoNotOptimize(it);
  }
  state.SetItemsProcessed(state.iterations());
}

// The uncontended target without the contention harness's per-operation clock reads: the same
// loop shape as BM_StdMutexPlusHashLookup, one key, one thread.
void BM_KeyedRwUncontended(benchmark::State& state) {
  lockstep::keyed::KeyedRwMutex mtx;
  const std::string& key = bench::bench_keys()[0];
  for (auto _ : state) {
    lockstep::keyed::RwHandle h = mtx.lock(key);
    benchmark::DoNotOptimize(h);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["keys_after"] = static_cast<double>(mtx.key_count());
}

void BM_FifoUncontended(benchmark::State& state) {
  lockstep::keyed::FifoLock lock;
  const std::string& key = bench::bench_keys()[0];
  int64_t sink = 0;
  for (auto _ : state) {
    lock.with_lock(key, [&] { ++sink; });
    benchmark::DoNotOptimize(sink);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["keys_after"] = static_cast<double>(lock.size());
}

template <class Fn>
void register_baseline(const std::string& name, Fn fn) {
  for (int n : bench::kContenders) {
    benchmark::RegisterBenchmark((name + "/contenders:" + std::to_string(n)).c_str(), fn)
        ->Threads(n)
        ->UseRealTime();
  }
}

const bool registered = [] {
  register_baseline("BM_Baseline_StdMutex", BM_StdMutex);
  register_baseline("BM_Baseline_StdSharedMutex", BM_StdSharedMutex);
  register_baseline("BM_Baseline_StdMutexPlusHashLookup", BM_StdMutexPlusHashLookup);
  benchmark::RegisterBenchmark("BM_Lock_Uncontended/keyed-rw", BM_KeyedRwUncontended);
  benchmark::RegisterBenchmark("BM_Lock_Uncontended/fifo", BM_FifoUncontended);
  bench::register_contention("BM_Lock_AcquireRelease/keyed-rw", bench::kContenders, true,
                             BM_KeyedRw);
  bench::register_contention("BM_Lock_AcquireRelease/fifo", bench::kContenders, true, BM_Fifo);
  return true;
}();

}  // namespace
