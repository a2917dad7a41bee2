// The keyed locks beside the standard mutexes, in one run (Google Benchmark).
//
//   BM_Lock_AcquireRelease/keyed-rw/contenders:N            N threads, lock+unlock one key
//   BM_Lock_AcquireRelease/keyed-rw/many-keys/contenders:N  N threads, each on its own keys (of 1024)
//   BM_Lock_AcquireRelease/fifo/contenders:N                with_lock on one key
//   BM_Lock_AcquireRelease/fifo/many-keys/contenders:N
//   BM_Baseline_StdMutex/contenders:N, BM_Baseline_StdSharedMutex/contenders:N (exclusive lock)
//   BM_Baseline_StdMutexPlusHashLookup/contenders:N   lock a mutex, find the key in a hash map
//
// items_per_second counts successful acquire+release pairs. The keyed cases report keys_after:
// the per-key states left once everything is released (must be 0: idle keys cost no memory).
// Google Benchmark appends /threads:N to each name; N=1 is the uncontended case, compared with
// std::mutex plus a hash lookup (target: within 3x).
#include <benchmark/benchmark.h>

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "adapters/keyed/fifo_lock.h"
#include "adapters/keyed/keyed_rw.h"

namespace {

constexpr int kManyKeys = 1024;
const int kContenders[] = {1, 2, 4};

const std::vector<std::string>& keys() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> out;
    for (int i = 0; i < kManyKeys; ++i) out.push_back("key:" + std::to_string(i));
    return out;
  }();
  return all;
}

// The key a thread uses at iteration i: one shared key, or its own stripe of many keys.
const std::string& key_for(const benchmark::State& state, bool many_keys, size_t i) {
  if (!many_keys) return keys()[0];
  const size_t stripe = kManyKeys / static_cast<size_t>(state.threads());
  return keys()[static_cast<size_t>(state.thread_index()) * stripe + i % stripe];
}

// One lock per benchmark run, shared by its threads: thread 0 makes it before the timed loop,
// whose start is a barrier for all threads (and whose end is one too, so keys_after is read when
// every thread has released).
void BM_KeyedRw(benchmark::State& state, bool many_keys) {
  static std::unique_ptr<lockstep::keyed::KeyedRwMutex> mtx;
  if (state.thread_index() == 0) mtx = std::make_unique<lockstep::keyed::KeyedRwMutex>();
  size_t i = 0;
  for (auto _ : state) {
    lockstep::keyed::RwHandle h = mtx->lock(key_for(state, many_keys, i++));
    benchmark::DoNotOptimize(h);
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    state.counters["keys_after"] = static_cast<double>(mtx->key_count());
  }
}

void BM_Fifo(benchmark::State& state, bool many_keys) {
  static std::unique_ptr<lockstep::keyed::FifoLock> lock;
  if (state.thread_index() == 0) lock = std::make_unique<lockstep::keyed::FifoLock>();
  size_t i = 0;
  int sink = 0;
  for (auto _ : state) {
    lock->with_lock(key_for(state, many_keys, i++), [&sink] { ++sink; });
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) state.counters["keys_after"] = static_cast<double>(lock->size());
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
    for (int i = 0; i < kManyKeys; ++i) t.emplace(keys()[static_cast<size_t>(i)], i);
    return t;
  }();
  size_t i = 0;
  for (auto _ : state) {
    std::lock_guard lock(mutex);
    auto it = table.find(key_for(state, false, i++));
    benchmark::DoNotOptimize(it);
  }
  state.SetItemsProcessed(state.iterations());
}

template <class Fn>
void register_case(const std::string& name, Fn fn) {
  for (int n : kContenders) {
    benchmark::RegisterBenchmark((name + "/contenders:" + std::to_string(n)).c_str(), fn)->Threads(n)->UseRealTime();
  }
}

const bool registered = [] {
  register_case("BM_Baseline_StdMutex", BM_StdMutex);
  register_case("BM_Baseline_StdSharedMutex", BM_StdSharedMutex);
  register_case("BM_Baseline_StdMutexPlusHashLookup", BM_StdMutexPlusHashLookup);
  register_case("BM_Lock_AcquireRelease/keyed-rw", [](benchmark::State& s) { BM_KeyedRw(s, false); });
  register_case("BM_Lock_AcquireRelease/keyed-rw/many-keys", [](benchmark::State& s) { BM_KeyedRw(s, true); });
  register_case("BM_Lock_AcquireRelease/fifo", [](benchmark::State& s) { BM_Fifo(s, false); });
  register_case("BM_Lock_AcquireRelease/fifo/many-keys", [](benchmark::State& s) { BM_Fifo(s, true); });
  return true;
}();

}  // namespace
