// The contention harness of the BM_Lock_AcquireRelease cases: N contenders on threads of their own
// share one budget of successful acquisitions, so a faster (or luckier) contender takes more of
// them, and the run reports how evenly they were spread, and how long each acquisition waited.
//
// Names: BM_Lock_AcquireRelease/ADAPTER/contenders:N[/keys:many][/hold:1ms] (register_contention).
// Counters, beside items_per_second (successes per second of wall time):
//   wait_p50_us, wait_p99_us  nearest-rank percentiles of the wait of every acquisition of the run,
//                             from the start of an acquire to its success (steady_clock), in us;
//                             at most kWaitSamplesMax are kept (a reservoir sample per contender)
//   fairness                  min / max of the contenders' successes (1.0: perfectly even)
//   acq_cv                    their coefficient of variation (stddev / mean; 0: perfectly even)
// Google Benchmark's own Threads() would not do: it gives every thread the same iteration count,
// so fairness would be 1.0 by construction.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace lockstep::bench {

using SteadyClock = std::chrono::steady_clock;

constexpr size_t kWaitSamplesMax = 1'000'000;
constexpr int kContenders[] = {1, 2, 8, 32, 64};
constexpr std::chrono::milliseconds kHold{1};  // the /hold:1ms cases' time inside the lock

// Per-contender successes and wait samples. Contender i writes slot i only; read once all joined.
class ContentionStats {
 public:
  explicit ContentionStats(int contenders)
      : slots_(static_cast<size_t>(contenders)),
        cap_(std::max<size_t>(1, kWaitSamplesMax / static_cast<size_t>(contenders))) {
    for (size_t i = 0; i < slots_.size(); ++i) slots_[i].rng = 0x9e3779b97f4a7c15ULL * (i + 1);
  }

  void record(int contender, SteadyClock::duration wait) {
    Slot& slot = slots_[static_cast<size_t>(contender)];
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
    ++slot.successes;
    if (slot.wait_ns.size() < cap_) {
      slot.wait_ns.push_back(ns);
      return;
    }
    // Reservoir sampling: each of the slot's successes so far is kept with equal probability.
    slot.rng ^= slot.rng << 13;
    slot.rng ^= slot.rng >> 7;
    slot.rng ^= slot.rng << 17;
    const uint64_t j = slot.rng % static_cast<uint64_t>(slot.successes);
    if (j < cap_) slot.wait_ns[j] = ns;
  }

  void set_counters(benchmark::State& state) const {
    std::vector<int64_t> all;
    double sum = 0, min = 0, max = 0;
    for (const Slot& slot : slots_) {
      all.insert(all.end(), slot.wait_ns.begin(), slot.wait_ns.end());
      const auto n = static_cast<double>(slot.successes);
      sum += n;
      min = &slot == &slots_.front() ? n : std::min(min, n);
      max = std::max(max, n);
    }
    if (all.empty() || max == 0) return;
    state.counters["wait_p50_us"] = nearest_rank(all, 50);
    state.counters["wait_p99_us"] = nearest_rank(all, 99);
    const double mean = sum / static_cast<double>(slots_.size());
    double var = 0;
    for (const Slot& slot : slots_) var += std::pow(static_cast<double>(slot.successes) - mean, 2);
    state.counters["fairness"] = min / max;
    state.counters["acq_cv"] = std::sqrt(var / static_cast<double>(slots_.size())) / mean;
  }

 private:
  struct alignas(64) Slot {
    int64_t successes = 0;
    std::vector<int64_t> wait_ns;
    uint64_t rng = 0;
  };

  // The p-th percentile by nearest rank (the ceil(p/100 * n)-th smallest), in us. Reorders samples.
  static double nearest_rank(std::vector<int64_t>& samples, int p) {
    const size_t rank = std::max<size_t>(1, (samples.size() * static_cast<size_t>(p) + 99) / 100);
    const auto nth = samples.begin() + static_cast<std::ptrdiff_t>(rank - 1);
    std::nth_element(samples.begin(), nth, samples.end());
    return static_cast<double>(*nth) / 1000.0;
  }

  std::vector<Slot> slots_;
  size_t cap_;
};

// One acquisition as the harness times it: started before the callback runs; the callback calls
// granted() the moment it holds the lock.
struct Acquisition {
  SteadyClock::time_point start = SteadyClock::now();
  SteadyClock::time_point acquired{};
  void granted() { acquired = SteadyClock::now(); }
};

// Sleeps for the hold time inside the lock (the /hold:1ms cases); nothing when it is zero.
inline void hold(std::chrono::microseconds time) {
  if (time.count() > 0) std::this_thread::sleep_for(time);
}

// Runs `contenders` threads sharing state.max_iterations successes (one timed batch, started once
// all threads are up). pair(contender, sequence, acquisition) does one acquire (calling
// acquisition.granted() on success), hold and release, and returns the server calls it made;
// sequence counts that contender's pairs. A throw stops the run and skips the case with its
// message. Sets items_per_second, the ContentionStats counters and, unless calls_counter is
// empty, calls_counter (calls per success). Returns false when the case was skipped.
template <class Pair>
bool run_contention(benchmark::State& state, int contenders, const std::string& calls_counter,
                    Pair&& pair) {
  ContentionStats stats(contenders);
  std::atomic<int64_t> calls{0};
  std::mutex error_mutex;
  std::string error;
  while (state.KeepRunningBatch(state.max_iterations)) {
    state.PauseTiming();
    std::atomic<int64_t> left{state.max_iterations};
    std::latch ready(contenders);
    std::latch go(1);
    {
      std::vector<std::jthread> threads;
      for (int c = 0; c < contenders; ++c) {
        threads.emplace_back([&, c] {
          ready.count_down();
          go.wait();
          int64_t mine = 0;
          int64_t sequence = 0;
          try {
            while (left.fetch_sub(1, std::memory_order_relaxed) > 0) {
              Acquisition acquisition;
              mine += pair(c, sequence++, acquisition);
              stats.record(c, acquisition.acquired - acquisition.start);
            }
          } catch (const std::exception& e) {
            left.store(0);  // the others stop after their current pair
            const std::lock_guard guard(error_mutex);
            if (error.empty()) error = e.what();
          }
          calls.fetch_add(mine);
        });
      }
      ready.wait();
      state.ResumeTiming();
      go.count_down();
    }  // the jthreads join here, inside the timed batch
  }
  if (!error.empty()) {
    state.SkipWithError(error.c_str());
    return false;
  }
  state.SetItemsProcessed(state.iterations());
  if (!calls_counter.empty()) {
    state.counters[calls_counter] =
        benchmark::Counter(static_cast<double>(calls.load()), benchmark::Counter::kAvgIterations);
  }
  stats.set_counters(state);
  return true;
}

// The suffix of a case: /contenders:N, then /keys:many and /hold:1ms when they apply.
inline std::string case_name(const std::string& prefix, int contenders, bool many_keys, bool held) {
  return prefix + "/contenders:" + std::to_string(contenders) + (many_keys ? "/keys:many" : "") +
         (held ? "/hold:1ms" : "");
}

constexpr int kManyKeys = 1024;

// "key:0" .. "key:1023", built once.
inline const std::vector<std::string>& bench_keys() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> out;
    for (int i = 0; i < kManyKeys; ++i) out.push_back("key:" + std::to_string(i));
    return out;
  }();
  return all;
}

// The key a contender uses for its sequence-th pair: one shared key, or its own stripe of the
// kManyKeys keys (the in-process cases; the Redis ones name a key per contender).
inline const std::string& contention_key(bool many_keys, int contender, int contenders,
                                         int64_t sequence) {
  if (!many_keys) return bench_keys()[0];
  const size_t stripe = static_cast<size_t>(kManyKeys / contenders);
  return bench_keys()[static_cast<size_t>(contender) * stripe +
                      static_cast<size_t>(sequence) % stripe];
}

// Registers fn(state, contenders, many_keys, hold) for every contender count in `counts`, on one
// key and (N > 1 only: with one contender it is the same case) on a key per contender, without a
// hold and, if with_hold, with kHold inside the lock.
template <class Fn, class Counts>
void register_contention(const std::string& prefix, const Counts& counts, bool with_hold, Fn fn) {
  for (const bool held : {false, true}) {
    if (held && !with_hold) continue;
    for (const int n : counts) {
      for (const bool many : {false, true}) {
        if (many && n == 1) continue;
        const std::chrono::microseconds time = held ? kHold : std::chrono::microseconds{0};
        benchmark::RegisterBenchmark(
            case_name(prefix, n, many, held).c_str(),
            [fn, n, many, time](benchmark::State& s) { fn(s, n, many, time); })
            ->UseRealTime();
      }
    }
  }
}

}  // namespace lockstep::bench
