// Redlock on 5 real redis-servers: acquire+release pairs with 1 to 64 contenders, beside each
// node's PING rate and the same uncontended workload with the nodes asked one after another.
//
// The 5 servers are servers.h's (shared with ext_bench.cc's Redlock libraries): started once, from
// the main thread, on first use, and stopped at exit; without redis-server every case skips with
// the reason. BM_Lock_AcquireRelease/redlock/contenders:N/hold:1ms hold each lock 1 ms. Targets:
// uncontended pairs/s >= 70% of half the slowest node's PING rate (a pair is two rounds, each as
// slow as the slowest node), and >= 3x the sequential rate. The contended cases run on
// contention.h's harness (wait and fairness counters). 64 clients polling 5 servers on a 2-core
// machine are slow, so that case runs a fixed number of acquisitions.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "adapters/core/locker.h"
#include "bench/contention.h"
#include "bench/sweep_bench.h"
#include "lockstep/clock.h"
#include "lockstep/random.h"
#include "services/redis/adapter/hiredis_connection.h"
#include "services/redis/bench/servers.h"
#include "services/redlock/adapter/polling_fanout.h"
#include "services/redlock/adapter/redlock_adapter.h"

namespace {

constexpr int kNodes = lockstep::bench::kRedlockNodes;
constexpr int64_t kTtlMs = 10'000;

// servers.h's 5 nodes, shared with ext_bench.cc's Redlock libraries.
lockstep::bench::RedisServers& shared_nodes() { return lockstep::bench::shared_redlock_nodes(); }

bool nodes_or_skip(benchmark::State& state) {
  return lockstep::bench::servers_or_skip(state, shared_nodes());
}

// The nodes asked one after another: what the parallel fan-out is measured against.
class SequentialFanout final : public lockstep::RedisFanout {
 public:
  explicit SequentialFanout(const std::vector<int>& ports) {
    for (int port : ports)
      connections_.push_back(
          std::make_unique<lockstep::HiredisConnection>(lockstep::HiredisOptions{.port = port}));
  }
  size_t size() const override { return connections_.size(); }
  std::string endpoint(size_t i) const override { return connections_.at(i)->endpoint(); }
  std::vector<lockstep::RedisResult> command_all(const std::vector<std::vector<std::string>>& argvs,
                                                 int64_t) override {
    std::vector<lockstep::RedisResult> results;
    for (size_t i = 0; i < argvs.size(); ++i) {
      results.push_back(argvs[i].empty() ? lockstep::not_sent_result()
                                         : connections_[i]->command(argvs[i]));
    }
    return results;
  }

 private:
  std::vector<std::unique_ptr<lockstep::HiredisConnection>> connections_;
};

std::vector<int> ports() { return shared_nodes().ports(); }

std::unique_ptr<lockstep::RedisFanout> parallel_fanout() {
  lockstep::PollingFanoutOptions options;
  for (int port : ports()) options.endpoints.push_back({.port = port});
  return std::make_unique<lockstep::PollingFanout>(std::move(options));
}

// One Redlock client: its own fan-out, adapter and Locker, retrying with a jittered backoff.
class RedlockClient {
 public:
  explicit RedlockClient(std::unique_ptr<lockstep::RedisFanout> fanout)
      : fanout_(std::move(fanout)),
        adapter_({.fanout = fanout_.get(), .clock = &clock_, .random = &random_}),
        locker_({.adapter = &adapter_,
                 .clock = &clock_,
                 .random = &random_,
                 .retry = {.retry_delay_ms = 1, .retry_times = 100'000, .retry_jitter_ms = 8}}) {}

  int64_t pair(const std::string& key) {
    lockstep::bench::Acquisition untimed;
    return pair(key, untimed, std::chrono::microseconds{0});
  }
  // One acquire, `hold` inside the lock, one release; returns the acquire attempts it took.
  int64_t pair(const std::string& key, lockstep::bench::Acquisition& acquisition,
               std::chrono::microseconds hold) {
    lockstep::Lock lock = locker_.lock(key, kTtlMs);
    lock.acquire();
    acquisition.granted();
    lockstep::bench::hold(hold);
    if (!lock.release()) throw std::runtime_error("lock " + key + " was gone before its release");
    return lock.attempts();
  }

 private:
  std::unique_ptr<lockstep::RedisFanout> fanout_;
  lockstep::SystemClock clock_;
  lockstep::SystemRandom random_;
  lockstep::RedlockAdapter adapter_;
  lockstep::Locker locker_;
};

void BM_Redlock_NodePing(benchmark::State& state) {
  if (!nodes_or_skip(state)) return;
  lockstep::HiredisConnection connection({.port = ports().at(static_cast<size_t>(state.range(0)))});
  for (auto _ : state) {
    if (connection.command({"PING"}).reply.str != "PONG")
      return state.SkipWithError("PING did not answer PONG");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Redlock_NodePing)->ArgName("node")->DenseRange(0, kNodes - 1)->UseRealTime();

// One PING to every node through the parallel fan-out: the physical cost of one Redlock round.
void BM_Redlock_FanoutPing(benchmark::State& state) {
  if (!nodes_or_skip(state)) return;
  const std::unique_ptr<lockstep::RedisFanout> fanout = parallel_fanout();
  const std::vector<std::vector<std::string>> argvs(kNodes, {"PING"});
  for (auto _ : state) {
    for (const lockstep::RedisResult& r : fanout->command_all(argvs, 1'000'000)) {
      if (!r.ok()) return state.SkipWithError(r.message.c_str());
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Redlock_FanoutPing)->UseRealTime();

void BM_Lock_AcquireRelease_Redlock(benchmark::State& state, int contenders, bool sequential,
                                    std::chrono::microseconds hold) {
  if (!nodes_or_skip(state)) return;
  std::vector<std::unique_ptr<RedlockClient>> clients;
  try {
    for (int i = 0; i < contenders; ++i) {
      clients.push_back(std::make_unique<RedlockClient>(
          sequential
              ? std::unique_ptr<lockstep::RedisFanout>(std::make_unique<SequentialFanout>(ports()))
              : parallel_fanout()));
      clients.back()->pair("bench:warm-up");  // connects and loads the scripts, untimed
    }
  } catch (const std::exception& e) {
    return state.SkipWithError(e.what());
  }
  lockstep::bench::run_contention(state, contenders, "attempts_per_success",
                                  [&](int c, int64_t, lockstep::bench::Acquisition& acquisition) {
                                    return clients[static_cast<size_t>(c)]->pair("bench:redlock",
                                                                                 acquisition, hold);
                                  });
}

[[maybe_unused]] const bool registered = [] {
  constexpr int kManyContenders = 64;
  constexpr int64_t kManyContendersIterations = 2000;
  for (const int contenders : {1, 2, 8, 32, kManyContenders}) {
    const std::string name =
        "BM_Lock_AcquireRelease/redlock/contenders:" + std::to_string(contenders);
    auto* bench = benchmark::RegisterBenchmark(name.c_str(), BM_Lock_AcquireRelease_Redlock,
                                               contenders, false, std::chrono::microseconds{0});
    bench->UseRealTime();
    if (contenders == kManyContenders) bench->Iterations(kManyContendersIterations);
  }
  // 1 ms inside the lock (contention.h's kHold), as the Redis cases: the lock's cost beside work
  // that holds it. Under contention these are bounded by the hold (at most ~1,000 grants/s).
  for (const int contenders : {1, 8, 32}) {
    const std::string name =
        lockstep::bench::case_name("BM_Lock_AcquireRelease/redlock", contenders, false, true);
    benchmark::RegisterBenchmark(name.c_str(), BM_Lock_AcquireRelease_Redlock, contenders, false,
                                 std::chrono::microseconds{lockstep::bench::kHold})
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark("BM_Lock_AcquireRelease/redlock-sequential/contenders:1",
                               BM_Lock_AcquireRelease_Redlock, 1, true,
                               std::chrono::microseconds{0})
      ->UseRealTime();
  return true;
}();

}  // namespace

// BM_Sweep/redlock (bench/sweep_bench.h): about half a second of work per iteration.
[[maybe_unused]] const bool kSweepRegistered =
    lockstep::bench::register_sweep_benchmark({.adapter = "redlock", .seeds = 200});
