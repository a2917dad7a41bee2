// The npm lock libraries (services/ext/node) under the same contention workload as lockstep's own
// adapters, on the same redis-servers (servers.h) in the same run:
//
//   BM_Lock_AcquireRelease/ext:LIB/contenders:N[/hold:1ms]   N in 1, 8 (and 32 without a hold)
//   BM_Ext_ProtocolRoundTrip/LIB                              the protocol's own cost per operation
//   BM_Ext_SimExchange/LIB                                    one co-simulated exchange, library idle
//
// The workload runs inside the driver (services/ext/PROTOCOL.md's `bench` op): each contender is one driver
// process (an application process with its own ioredis client), looping acquire (one attempt),
// hold, release, with services/redis/bench/redis_bench.cc's backoff (1 + U[0, min(2 << n, 16)) ms) on contention,
// and counting its own successes; no protocol line is written per operation, so the protocol's cost
// does not count against the library. locco-memory keeps its locks in the driver's memory, so its
// N contenders are N concurrent loops in one shared driver. The drivers start their loops together
// at a CLOCK_MONOTONIC instant the harness picks, for a fixed window (kWindowMs, each benchmark
// iteration one window; manual time = first start to last end, as the drivers measured it).
//
// Counters of BM_Lock_AcquireRelease/ext:*, beside items_per_second (= successes_per_s):
//   successes_per_s       successful acquire+release pairs per second, counted in the drivers
//   attempts_per_success  acquire calls (one attempt each, contended ones included) per success
//   calls_per_success     server calls per success: the commands the library's ioredis clients
//                         sent (counted in the driver: round trips, as lockstep's redis case
//                         counts them, not the commands a script runs inside the server), summed
//                         over the nodes for the Redlock libraries (so >= 10 per success on 5
//                         nodes); not for locco-memory (no server)
//   fairness              min / max successes per contender (1.0: even; N > 1 only)
// BM_Ext_ProtocolRoundTrip/LIB times `ping` (answered by the driver without touching the library):
//   round_trip_us  harness send to reply, mean;  in_driver_us  the driver's t1 - t0, mean;
//   overhead_us    their difference: what one protocol operation adds to a library call.
//
// BM_Ext_SimExchange/LIB times one co-simulated exchange (services/ext/PROTOCOL.md, version 2) in which the
// library has nothing to do: a `tick` to an initialised `--sim` driver, a microsecond of virtual
// time later each, answered by `idle`. What every exchange of a co-simulated run costs at least
// (the line out, Node's event loop and settle, the line back, two process switches):
//   exchange_us    harness send to idle, mean.
//
// Skips (never zeros): node (>= 20) or services/ext/node/node_modules missing, redis-server missing, or a
// driver that does not know the bench ops (it answers bad_request).
#include <benchmark/benchmark.h>

#include <time.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/contention.h"
#include "bench/sweep_bench.h"
#include "services/ext/driver/driver_process.h"
#include "services/ext/driver/node_drivers.h"
#include "services/ext/driver/protocol.h"
#include "services/ext/driver/sim_driver.h"
#include "services/redis/bench/servers.h"

namespace {

namespace ext = lockstep::ext;
using lockstep::bench::RedisServers;

constexpr int64_t kTtlMs = 10'000;  // as the Redis cases: no lock expires mid-window
constexpr int64_t kWindowMs = 300;  // one benchmark iteration
constexpr int64_t kWindows = 3;     // iterations per case: ~1 s of loops per case
constexpr int64_t kLeadMs = 30;     // from sending the bench ops to the common start
constexpr int64_t kLeadPerDriverMs = 5;

enum class Servers { none, one, redlock };

struct Library {
  const char* name;  // driver.js --lib
  Servers servers;
  bool shared_driver;  // locks in the driver's memory: one driver, N loops
};

constexpr std::array<Library, 5> kLibraries = {{
    {"locco-redis", Servers::one, false},
    {"redis-semaphore", Servers::one, false},
    {"node-redlock", Servers::redlock, false},
    {"redis-semaphore-redlock", Servers::redlock, false},
    {"locco-memory", Servers::none, true},
}};

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

const RedisServers* servers_of(const Library& lib) {
  switch (lib.servers) {
    case Servers::none: return nullptr;
    case Servers::one: return &lockstep::bench::shared_redis();
    case Servers::redlock: return &lockstep::bench::shared_redlock_nodes();
  }
  return nullptr;
}

// A library's drivers, started on demand from the benchmark's main thread (a driver gets SIGKILL
// when the thread that started it ends) and kept for the run; stopped at exit (static destructor).
struct Pool {
  std::vector<std::unique_ptr<ext::DriverProcess>> drivers;
  std::string error;  // set once a start failed or the driver lacks the bench ops: every case skips
};

std::map<std::string, Pool>& pools() {
  static std::map<std::string, Pool> all;
  return all;
}

// Sends ping; an error message when the driver does not answer it ok (e.g. predates it).
std::string check_bench_ops(ext::DriverProcess& driver) {
  const ext::CallResult r = driver.call({.op = ext::Op::ping});
  if (!r.ok()) return r.message;
  if (r.response.status != ext::Status::ok) {
    return "the driver does not answer the bench ops (ping: " +
           std::string(to_string(r.response.status)) +
           (r.response.err ? ": " + r.response.err->message : "") + "); services/ext/PROTOCOL.md";
  }
  return {};
}

// At least `count` drivers of lib, or nullptr after skipping the case with the reason.
Pool* drivers_or_skip(benchmark::State& state, const Library& lib, size_t count) {
  std::string node;
  try {
    node = ext::require_node_drivers();
  } catch (const std::exception& e) {
    state.SkipWithError((std::string("skipped: ") + e.what()).c_str());
    return nullptr;
  }
  const RedisServers* servers = servers_of(lib);
  if (servers != nullptr && !lockstep::bench::servers_or_skip(state, *servers)) return nullptr;
  Pool& pool = pools()[lib.name];
  const std::vector<int> ports = servers != nullptr ? servers->ports() : std::vector<int>{};
  while (pool.error.empty() && pool.drivers.size() < count) {
    try {
      pool.drivers.push_back(std::make_unique<ext::DriverProcess>(ext::DriverOptions{
          .program = node,
          .args = ext::node_driver_args(lib.name, ports),
          .name = "bench ext:" + std::string(lib.name) + " " + std::to_string(pool.drivers.size()),
      }));
      pool.error = check_bench_ops(*pool.drivers.back());
    } catch (const std::exception& e) {
      pool.error = e.what();
    }
  }
  if (!pool.error.empty()) {
    state.SkipWithError(("skipped: ext:" + std::string(lib.name) + ": " + pool.error).c_str());
    return nullptr;
  }
  return &pool;
}

struct Window {
  std::vector<int64_t> successes;  // per contender
  int64_t attempts = 0;
  int64_t release_not_owner = 0;
  int64_t commands = 0;  // -1 once a driver did not report them
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::string error;
};

// One window: every driver runs its loops from a common start for kWindowMs.
Window run_window(std::vector<ext::DriverProcess*> drivers, int loops_per_driver,
                  const std::string& key, int64_t hold_ms) {
  const int64_t start_ns =
      monotonic_ns() +
      (kLeadMs + kLeadPerDriverMs * static_cast<int64_t>(drivers.size())) * 1'000'000;
  const ext::Request request{.op = ext::Op::bench,
                             .key = key,
                             .ttl_ms = kTtlMs,
                             .hold_ms = hold_ms,
                             .start_ns = start_ns,
                             .stop_ns = start_ns + kWindowMs * 1'000'000,
                             .loops = loops_per_driver};
  std::vector<ext::CallResult> results(drivers.size());
  {
    std::vector<std::jthread> senders;
    for (size_t i = 0; i < drivers.size(); ++i) {
      senders.emplace_back([&, i] { results[i] = drivers[i]->call(request); });
    }
  }
  Window window;
  for (const ext::CallResult& r : results) {
    if (!r.ok()) {
      window.error = r.message;
      return window;
    }
    if (r.response.status != ext::Status::ok || !r.response.bench) {
      window.error =
          "bench op: " + std::string(to_string(r.response.status)) +
          (r.response.err ? ": " + r.response.err->name + ": " + r.response.err->message : "");
      return window;
    }
    const ext::BenchCounts& b = *r.response.bench;
    // A shared driver's loops are counted together: its contenders' split is not reported.
    window.successes.push_back(b.successes);
    window.attempts += b.attempts;
    window.release_not_owner += b.release_not_owner;
    window.commands = window.commands < 0 || b.commands < 0 ? -1 : window.commands + b.commands;
    window.start_ns = window.start_ns == 0 ? b.start_ns : std::min(window.start_ns, b.start_ns);
    window.end_ns = std::max(window.end_ns, b.end_ns);
  }
  return window;
}

void BM_Lock_AcquireRelease_Ext(benchmark::State& state, const Library& lib, int contenders,
                                int64_t hold_ms) {
  const size_t driver_count = lib.shared_driver ? 1 : static_cast<size_t>(contenders);
  Pool* pool = drivers_or_skip(state, lib, driver_count);
  if (pool == nullptr) return;
  std::vector<ext::DriverProcess*> drivers;
  for (size_t i = 0; i < driver_count; ++i) drivers.push_back(pool->drivers[i].get());
  const int loops = lib.shared_driver ? contenders : 1;
  const std::string key = "bench:ext:" + std::string(lib.name);

  std::vector<int64_t> per_contender(driver_count, 0);
  int64_t successes = 0, attempts = 0, not_owner = 0, commands = 0;
  bool commands_known = lib.servers != Servers::none;
  for (auto _ : state) {
    const Window window = run_window(drivers, loops, key, hold_ms);
    if (!window.error.empty()) return state.SkipWithError(window.error.c_str());
    state.SetIterationTime(static_cast<double>(window.end_ns - window.start_ns) / 1e9);
    for (size_t i = 0; i < driver_count; ++i) {
      per_contender[i] += window.successes[i];
      successes += window.successes[i];
    }
    attempts += window.attempts;
    not_owner += window.release_not_owner;
    commands += window.commands;
    commands_known = commands_known && window.commands >= 0;
  }
  if (successes == 0) return state.SkipWithError("no successful acquire+release in any window");
  state.SetItemsProcessed(successes);
  // items_per_second is successes over the manual (driver-measured) time; the same figure by name:
  state.counters["successes_per_s"] =
      benchmark::Counter(static_cast<double>(successes), benchmark::Counter::kIsRate);
  const auto per_success = [&](int64_t n) {
    return static_cast<double>(n) / static_cast<double>(successes);
  };
  state.counters["attempts_per_success"] = per_success(attempts);
  if (commands_known) state.counters["calls_per_success"] = per_success(commands);
  if (not_owner > 0) state.counters["release_not_owner"] = static_cast<double>(not_owner);
  if (driver_count > 1) {
    const auto [min, max] = std::minmax_element(per_contender.begin(), per_contender.end());
    state.counters["fairness"] =
        static_cast<double>(*min) / static_cast<double>(std::max<int64_t>(1, *max));
  }
}

void BM_Ext_ProtocolRoundTrip(benchmark::State& state, const Library& lib) {
  Pool* pool = drivers_or_skip(state, lib, 1);
  if (pool == nullptr) return;
  ext::DriverProcess& driver = *pool->drivers.front();
  int64_t round_trip_ns = 0, in_driver_ns = 0;
  for (auto _ : state) {
    const ext::CallResult r = driver.call({.op = ext::Op::ping});
    if (!r.ok() || r.response.status != ext::Status::ok) {
      return state.SkipWithError(r.ok() ? "ping was not answered ok" : r.message.c_str());
    }
    round_trip_ns += r.received_ns - r.sent_ns;
    in_driver_ns += r.response.t1_ns - r.response.t0_ns;
  }
  const auto n = static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations());
  state.counters["round_trip_us"] = static_cast<double>(round_trip_ns) / n / 1000.0;
  state.counters["in_driver_us"] = static_cast<double>(in_driver_ns) / n / 1000.0;
  state.counters["overhead_us"] = static_cast<double>(round_trip_ns - in_driver_ns) / n / 1000.0;
}

void BM_Ext_SimExchange(benchmark::State& state, const Library& lib) {
  std::string node;
  try {
    node = ext::require_node_drivers();
  } catch (const std::exception& e) {
    return state.SkipWithError((std::string("skipped: ") + e.what()).c_str());
  }
  ext::SimDriverProcess driver(ext::SimDriverOptions{
      .program = node,
      .args = {ext::node_driver_dir() + "/driver.js", "--sim", "--lib", lib.name, "--redis",
               lib.servers == Servers::redlock ? "sim:0,sim:1,sim:2,sim:3,sim:4" : "sim:0"},
      .name = "bench sim ext:" + std::string(lib.name)});
  ext::SimNow now{.wall_ms = 1'000'000, .mono_ns = 1'000'000'000};
  int64_t exchange_ns = 0;
  try {
    // The library's connects and handshake commands stay unanswered: it waits, idle, as between
    // replies in a run.
    driver.exchange(R"({"op":"init","seed":"bench"})", now);
    for (auto _ : state) {
      now.mono_ns += 1'000;
      const int64_t sent_ns = monotonic_ns();
      driver.exchange(R"({"op":"tick"})", now);
      exchange_ns += monotonic_ns() - sent_ns;
    }
  } catch (const std::exception& e) {
    return state.SkipWithError(e.what());
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["exchange_us"] =
      static_cast<double>(exchange_ns) / static_cast<double>(state.iterations()) / 1000.0;
}

[[maybe_unused]] const bool registered = [] {
  for (const Library& lib : kLibraries) {
    const std::string prefix = "BM_Lock_AcquireRelease/ext:" + std::string(lib.name);
    constexpr std::array<std::pair<int, bool>, 5> kCases = {
        {{1, false}, {8, false}, {32, false}, {1, true}, {8, true}}};
    for (const auto& [contenders, held] : kCases) {
      // 32 driver processes (node, ~50 MB each) only where contenders are loops in one driver.
      if (contenders == 32 && !lib.shared_driver) continue;
      const std::string name = lockstep::bench::case_name(prefix, contenders, false, held);
      benchmark::RegisterBenchmark(name.c_str(), BM_Lock_AcquireRelease_Ext, lib, contenders,
                                   held ? int64_t{1} : int64_t{0})
          ->UseManualTime()
          ->Iterations(kWindows);
    }
    benchmark::RegisterBenchmark(("BM_Ext_ProtocolRoundTrip/" + std::string(lib.name)).c_str(),
                                 BM_Ext_ProtocolRoundTrip, lib)
        ->UseRealTime()
        ->MinTime(0.2);
    benchmark::RegisterBenchmark(("BM_Ext_SimExchange/" + std::string(lib.name)).c_str(),
                                 BM_Ext_SimExchange, lib)
        ->UseRealTime()
        ->MinTime(0.5);
  }
  return true;
}();

}  // namespace

// BM_Sweep/ext:LIB (bench/sweep_bench.h): the co-simulated libraries beside lockstep's redis (a
// co-simulated seed's cost against lockstep's own adapter's), with the exchanges per seed.
[[maybe_unused]] const bool kSweepRegistered = [] {
  const std::pair<const char*, int> cases[] = {{"ext:locco-redis", 20},
                                               {"ext:locco-memory", 50},
                                               {"ext:redis-semaphore", 20},
                                               {"ext:node-redlock", 10},
                                               {"ext:redis-semaphore-redlock", 10}};
  for (const auto& [adapter, seeds] : cases) {
    lockstep::bench::register_sweep_benchmark(
        {.adapter = adapter, .seeds = seeds, .own = false, .exchanges_total = [] {
           return lockstep::ext::SimDriverProcess::exchanges_total();
         }});
  }
  return true;
}();
