// Redlock on 5 real redis-servers: acquire+release pairs with 1 to 64 contenders, beside each
// node's PING rate and the same uncontended workload with the nodes asked one after another.
//
// The 5 servers are started once, from the main thread (a server dies with the thread that
// started it), on first use, and stopped at exit; without redis-server every case skips with the
// reason. Targets (issue 4): uncontended pairs/s >= 70% of half the slowest node's PING rate (a
// pair is two rounds, each as slow as the slowest node), and >= 3x the sequential rate. The
// contended cases run on contention.h's harness (wait and fairness counters). 64 clients polling 5
// servers on a 2-core machine are slow, so that case runs a fixed number of acquisitions.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "adapters/core/clock.h"
#include "adapters/core/locker.h"
#include "adapters/core/random.h"
#include "adapters/redis/hiredis_connection.h"
#include "adapters/redlock/polling_fanout.h"
#include "adapters/redlock/redlock_adapter.h"
#include "scenarios/real/redis_server.h"
#include "scenarios/real/server_errors.h"
#include "contention.h"

namespace {

using lockstep::real::RedisServerProcess;

constexpr int kNodes = 5;
constexpr int64_t kTtlMs = 10'000;

struct Nodes {
  std::vector<std::unique_ptr<RedisServerProcess>> servers;
  std::string error;
};

Nodes start_nodes() {
  Nodes nodes;
  try {
    for (int i = 0; i < kNodes; ++i) nodes.servers.push_back(std::make_unique<RedisServerProcess>());
  } catch (const std::exception& e) {
    nodes.servers.clear();
    nodes.error = e.what();
  }
  return nodes;
}

// First use is from a benchmark's main thread, which lives as long as the run.
Nodes& shared_nodes() {
  static Nodes nodes = start_nodes();
  return nodes;
}

bool nodes_or_skip(benchmark::State& state) {
  if (!shared_nodes().servers.empty()) return true;
  state.SkipWithError(("skipped: redis-server not available: " + shared_nodes().error).c_str());
  return false;
}

// The nodes asked one after another: what the parallel fan-out is measured against.
class SequentialFanout final : public lockstep::RedisFanout {
 public:
  explicit SequentialFanout(const std::vector<int>& ports) {
    for (int port : ports) connections_.push_back(std::make_unique<lockstep::HiredisConnection>(lockstep::HiredisOptions{.port = port}));
  }
  size_t size() const override { return connections_.size(); }
  std::string endpoint(size_t i) const override { return connections_.at(i)->endpoint(); }
  std::vector<lockstep::RedisResult> command_all(const std::vector<std::vector<std::string>>& argvs,
                                                 int64_t) override {
    std::vector<lockstep::RedisResult> results;
    for (size_t i = 0; i < argvs.size(); ++i) {
      results.push_back(argvs[i].empty() ? lockstep::not_sent_result() : connections_[i]->command(argvs[i]));
    }
    return results;
  }

 private:
  std::vector<std::unique_ptr<lockstep::HiredisConnection>> connections_;
};

std::vector<int> ports() {
  std::vector<int> out;
  for (auto& s : shared_nodes().servers) out.push_back(s->port());
  return out;
}

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
        locker_({.adapter = &adapter_, .clock = &clock_, .random = &random_,
                 .retry = {.retry_delay_ms = 1, .retry_times = 100'000, .retry_jitter_ms = 8}}) {}

  int64_t pair(const std::string& key) {
    lockstep::bench::Acquisition untimed;
    return pair(key, untimed);
  }
  int64_t pair(const std::string& key, lockstep::bench::Acquisition& acquisition) {
    lockstep::Lock lock = locker_.lock(key, kTtlMs);
    lock.acquire();
    acquisition.granted();
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
    if (connection.command({"PING"}).reply.str != "PONG") return state.SkipWithError("PING did not answer PONG");
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

void BM_Lock_AcquireRelease_Redlock(benchmark::State& state, int contenders, bool sequential) {
  if (!nodes_or_skip(state)) return;
  std::vector<std::unique_ptr<RedlockClient>> clients;
  try {
    for (int i = 0; i < contenders; ++i) {
      clients.push_back(std::make_unique<RedlockClient>(
          sequential ? std::unique_ptr<lockstep::RedisFanout>(std::make_unique<SequentialFanout>(ports()))
                     : parallel_fanout()));
      clients.back()->pair("bench:warm-up");  // connects and loads the scripts, untimed
    }
  } catch (const std::exception& e) {
    return state.SkipWithError(e.what());
  }
  lockstep::bench::run_contention(state, contenders, "attempts_per_success",
                                  [&](int c, int64_t, lockstep::bench::Acquisition& acquisition) {
                                    return clients[static_cast<size_t>(c)]->pair("bench:redlock", acquisition);
                                  });
}

[[maybe_unused]] const bool registered = [] {
  constexpr int kManyContenders = 64;
  constexpr int64_t kManyContendersIterations = 2000;
  for (const int contenders : {1, 2, 8, 32, kManyContenders}) {
    const std::string name = "BM_Lock_AcquireRelease/redlock/contenders:" + std::to_string(contenders);
    auto* bench = benchmark::RegisterBenchmark(name.c_str(), BM_Lock_AcquireRelease_Redlock, contenders, false);
    bench->UseRealTime();
    if (contenders == kManyContenders) bench->Iterations(kManyContendersIterations);
  }
  benchmark::RegisterBenchmark("BM_Lock_AcquireRelease/redlock-sequential/contenders:1",
                               BM_Lock_AcquireRelease_Redlock, 1, true)
      ->UseRealTime();
  return true;
}();

}  // namespace
