// The in-process memory adapter under contention, beside a std::mutex-guarded map doing the same
// insert+erase (the adapter's irreducible work), in one run (Google Benchmark).
//
//   BM_Lock_AcquireRelease/memory/contenders:N            N threads, create+release one key
//   BM_Lock_AcquireRelease/memory/many-keys/contenders:N  N threads, each on its own keys (of 1024)
//   BM_Baseline_StdMutexMap/contenders:N                  lock, insert, erase, unlock one key
//
// items_per_second counts successful create+release pairs; calls_per_success counts adapter calls
// (contended creates included) per pair. A contended create retries at once after a yield.
// Google Benchmark appends /real_time/threads:N to each name.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "adapters/core/clock.h"
#include "adapters/memory/memory_adapter.h"

namespace {

constexpr int kManyKeys = 1024;
constexpr int64_t kTtlMs = 60'000;
const int kContenders[] = {1, 2, 8, 32, 64};

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

// Creates until granted, then releases; returns the adapter calls made, or -1 on a failure.
int64_t pair(lockstep::MemoryAdapter& adapter, lockstep::LockSpec& spec) {
  int64_t calls = 1;
  for (lockstep::AdapterResult r = adapter.create_lock(spec); !r.ok(); r = adapter.create_lock(spec)) {
    if (r.status != lockstep::AdapterStatus::contended) return -1;
    std::this_thread::yield();
    ++calls;
  }
  return adapter.release_lock(spec).ok() ? calls + 1 : -1;
}

// One adapter (and clock) per benchmark run, shared by its threads: thread 0 makes it before the
// timed loop, whose start is a barrier for all threads.
void BM_Memory(benchmark::State& state, bool many_keys) {
  static lockstep::SystemClock clock;
  static std::unique_ptr<lockstep::MemoryAdapter> adapter;
  if (state.thread_index() == 0) {
    adapter = std::make_unique<lockstep::MemoryAdapter>(lockstep::MemoryAdapterOptions{.clock = &clock});
  }
  lockstep::LockSpec spec{.value = "owner:" + std::to_string(state.thread_index()), .ttl_ms = kTtlMs};
  int64_t calls = 0;
  size_t i = 0;
  for (auto _ : state) {
    spec.key = key_for(state, many_keys, i++);
    const int64_t made = pair(*adapter, spec);
    if (made < 0) return state.SkipWithError("a create or release failed other than by contention");
    calls += made;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["calls_per_success"] =
      benchmark::Counter(static_cast<double>(calls), benchmark::Counter::kAvgIterations);
}

void BM_StdMutexMap(benchmark::State& state) {
  static std::mutex mutex;
  static std::map<std::string, std::string> table;
  const std::string value = "owner:" + std::to_string(state.thread_index());
  for (auto _ : state) {
    const std::lock_guard lock(mutex);
    table.emplace(keys()[0], value);
    table.erase(keys()[0]);
  }
  state.SetItemsProcessed(state.iterations());
}

template <class Fn>
void register_case(const std::string& name, Fn fn) {
  for (int n : kContenders) {
    benchmark::RegisterBenchmark((name + "/contenders:" + std::to_string(n)).c_str(), fn)->Threads(n)->UseRealTime();
  }
}

[[maybe_unused]] const bool registered = [] {
  register_case("BM_Baseline_StdMutexMap", BM_StdMutexMap);
  register_case("BM_Lock_AcquireRelease/memory", [](benchmark::State& s) { BM_Memory(s, false); });
  register_case("BM_Lock_AcquireRelease/memory/many-keys", [](benchmark::State& s) { BM_Memory(s, true); });
  return true;
}();

}  // namespace
