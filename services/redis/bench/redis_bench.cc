// Redis on loopback: the physical baseline (PING, and the lock's own scripts sent raw with hiredis)
// beside the Locker over RedisAdapter, alone and with N contending clients
// (BM_Lock_AcquireRelease/redis/contenders:N[/keys:many][/hold:1ms]; counters: contention.h's, and
// calls_per_success, the server calls, failed creates included, per acquire+release).
//
// One redis-server serves the whole run (servers.h: shared with ext_bench.cc). Without one,
// every case here skips with the reason; none reports zeros. Rates are wall-clock (UseRealTime):
// a round trip blocks, so CPU time would overstate them. Separately measured rows drift run to run
// (9-13 us for a PING on loopback), so BM_Lock_VsPing times PING, the adapter's pair and the raw script pair
// interleaved in one loop and reports their ratios: compare those, not rows.
#include <hiredis/hiredis.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "adapters/core/locker.h"
#include "bench/contention.h"
#include "bench/sweep_bench.h"
#include "lockstep/clock.h"
#include "lockstep/random.h"
#include "services/redis/adapter/hiredis_connection.h"
#include "services/redis/adapter/redis_adapter.h"
#include "services/redis/adapter/scripts.h"
#include "services/redis/bench/servers.h"

namespace {

constexpr int64_t kTtlMs = 10'000;  // far longer than any pair: no lock expires mid-benchmark

// ---- The server of the whole run: servers.h's shared one ----

// The server's port, or 0 once the case is skipped.
int port_or_skip(benchmark::State& state) {
  const lockstep::bench::RedisServers& shared = lockstep::bench::shared_redis();
  if (!lockstep::bench::servers_or_skip(state, shared)) return 0;
  return shared.servers.front()->port();
}

// ---- Raw hiredis: the physical cost, without our connection, adapter or Locker ----

using ReplyPtr = std::unique_ptr<redisReply, decltype(&freeReplyObject)>;

// One command with its arguments laid out once, so the loop sends it without building anything.
class RawCommand {
 public:
  explicit RawCommand(std::vector<std::string> argv) : argv_(std::move(argv)) {
    for (const std::string& arg : argv_) {
      pointers_.push_back(arg.data());
      lengths_.push_back(arg.size());
    }
  }
  ReplyPtr send(redisContext* context) const {
    void* reply = redisCommandArgv(context, static_cast<int>(argv_.size()), pointers_.data(),
                                   lengths_.data());
    return {static_cast<redisReply*>(reply), &freeReplyObject};
  }

 private:
  std::vector<std::string> argv_;
  mutable std::vector<const char*> pointers_;  // hiredis 0.14 takes const char**; it never writes
  std::vector<size_t> lengths_;
};

bool is_integer(const ReplyPtr& reply, bool positive) {
  return reply && reply->type == REDIS_REPLY_INTEGER &&
         (positive ? reply->integer > 0 : reply->integer == 1);
}

// A blocking hiredis context on loopback. Throws std::runtime_error when it cannot connect.
class RawRedis {
 public:
  explicit RawRedis(int port) : context_(redisConnect("127.0.0.1", port)) {
    if (context_ == nullptr || context_->err != 0) {
      const std::string why = context_ ? context_->errstr : "out of memory";
      if (context_) redisFree(context_);
      throw std::runtime_error("hiredis connect to 127.0.0.1:" + std::to_string(port) + ": " + why);
    }
  }
  ~RawRedis() { redisFree(context_); }
  RawRedis(const RawRedis&) = delete;
  RawRedis& operator=(const RawRedis&) = delete;

  bool ping() const {
    const ReplyPtr reply = ping_.send(context_);
    return reply && reply->type == REDIS_REPLY_STATUS &&
           std::string_view(reply->str, reply->len) == "PONG";
  }
  redisContext* context() const { return context_; }

 private:
  redisContext* context_;
  RawCommand ping_{{"PING"}};
};

// The adapter's grant and release scripts by EVALSHA, on one key with one value: a lock cycle as
// the server sees it. Loads the scripts first, so no NOSCRIPT round trip is ever timed.
class RawScriptPair {
 public:
  RawScriptPair(const RawRedis& redis, const std::string& key)
      : redis_(redis),
        grant_({"EVALSHA", lockstep::grant_script().sha1, "2", "lock:" + key, "lock-fencing:" + key,
                "raw-owner", std::to_string(kTtlMs)}),
        release_({"EVALSHA", lockstep::release_script().sha1, "1", "lock:" + key, "raw-owner"}) {
    for (const lockstep::RedisScript* script :
         {&lockstep::grant_script(), &lockstep::release_script()}) {
      const ReplyPtr reply = RawCommand({"SCRIPT", "LOAD", script->source}).send(redis_.context());
      if (!reply || reply->type != REDIS_REPLY_STRING || reply->str != script->sha1) {
        throw std::runtime_error("SCRIPT LOAD " + script->name + " failed");
      }
    }
  }
  // False when either script did not answer as a granted and then released lock would.
  bool run() const {
    return is_integer(grant_.send(redis_.context()), true) &&
           is_integer(release_.send(redis_.context()), false);
  }

 private:
  const RawRedis& redis_;
  RawCommand grant_;
  RawCommand release_;
};

// ---- The adapter ----

enum class Retry { none, backoff };

// Under contention: sleep 1-2 ms after the first failed attempt, then windows of up to 4, 8 and
// 16 ms (delays are whole ms, and 0 would spin on a lock a pair holds for tens of us). Jitter keeps
// contenders from retrying in step; backing off to 16 ms keeps 32 of them under 3 server calls
// per grant even on one busy core, where failed attempts also slow the holder's release.
lockstep::RetrySettings backoff_retry(lockstep::Prng& prng) {
  return {.retry_delay_fn = [&prng](const lockstep::RetryAttempt& attempt) {
    const int64_t window_ms =
        std::min<int64_t>(int64_t{2} << std::min(attempt.attempt_number, 3), 16);
    return 1 + static_cast<int64_t>(prng.below(static_cast<uint64_t>(window_ms)));
  }};
}

// One lock client as an application would hold it. Its own SystemRandom: a shared one takes a
// mutex per draw, a contention the lock itself does not have.
class LockClient {
 public:
  LockClient(int port, Retry retry)
      : connection_({.port = port}),
        adapter_({.connection = &connection_}),
        backoff_prng_(random_.next_u64()),
        locker_({.adapter = &adapter_,
                 .clock = &clock_,
                 .random = &random_,
                 .retry = retry == Retry::backoff ? backoff_retry(backoff_prng_)
                                                  : lockstep::RetrySettings::none()}) {}

  // One successful acquire+release; returns the server calls it took (create attempts + release).
  // Throws what acquire() throws, or std::runtime_error if the lock was gone before its release.
  int64_t pair(const std::string& key) {
    lockstep::bench::Acquisition untimed;
    return pair(key, untimed, std::chrono::microseconds{0});
  }
  // The same, calling acquisition.granted() once acquired and holding the lock for `hold`.
  int64_t pair(const std::string& key, lockstep::bench::Acquisition& acquisition,
               std::chrono::microseconds hold) {
    lockstep::Lock lock = locker_.lock(key, kTtlMs);
    lock.acquire();
    acquisition.granted();
    lockstep::bench::hold(hold);
    if (!lock.release()) throw std::runtime_error("lock " + key + " was gone before its release");
    return lock.attempts() + 1;
  }

 private:
  lockstep::HiredisConnection connection_;
  lockstep::RedisAdapter adapter_;
  lockstep::SystemClock clock_;
  lockstep::SystemRandom random_;
  lockstep::Prng backoff_prng_;  // the retry delays' jitter; used by this client's thread only
  lockstep::Locker locker_;
};

// ---- Cases ----

void BM_Baseline_RedisPing(benchmark::State& state) {
  const int port = port_or_skip(state);
  if (port == 0) return;
  try {
    const RawRedis redis(port);
    for (auto _ : state) {
      if (!redis.ping()) return state.SkipWithError("PING did not answer PONG");
    }
  } catch (const std::exception& e) {
    return state.SkipWithError(e.what());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Baseline_RedisPing)->UseRealTime();

void BM_Baseline_RedisScriptPair(benchmark::State& state) {
  const int port = port_or_skip(state);
  if (port == 0) return;
  try {
    const RawRedis redis(port);
    const RawScriptPair pair(redis, "bench:raw");
    for (auto _ : state) {
      if (!pair.run()) return state.SkipWithError("the raw script pair did not grant and release");
    }
  } catch (const std::exception& e) {
    return state.SkipWithError(e.what());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Baseline_RedisScriptPair)->UseRealTime();

// N clients, each on a thread (contention.h) and a connection of its own, share state.iterations()
// successful pairs on one key (or on a key each). Connections are made before the clock starts.
void BM_Lock_AcquireRelease(benchmark::State& state, int contenders, bool many_keys,
                            std::chrono::microseconds hold) {
  const int port = port_or_skip(state);
  if (port == 0) return;
  std::vector<std::unique_ptr<LockClient>> clients;
  std::vector<std::string> keys;
  try {
    for (int i = 0; i < contenders; ++i) {
      clients.push_back(std::make_unique<LockClient>(port, Retry::backoff));
      clients.back()->pair("bench:warm-up");  // connects (lazily) and loads the scripts, untimed
      keys.push_back(many_keys ? "bench:key:" + std::to_string(i) : "bench:one");
    }
  } catch (const std::exception& e) {
    return state.SkipWithError(e.what());
  }
  lockstep::bench::run_contention(state, contenders, "calls_per_success",
                                  [&](int c, int64_t, lockstep::bench::Acquisition& acquisition) {
                                    const auto i = static_cast<size_t>(c);
                                    return clients[i]->pair(keys[i], acquisition, hold);
                                  });
}

// The contract's names (docs/DESIGN.md), with /keys:many and /hold:1ms as contention.h spells them.
[[maybe_unused]] const bool registered_contenders = [] {
  lockstep::bench::register_contention("BM_Lock_AcquireRelease/redis", lockstep::bench::kContenders,
                                       true, BM_Lock_AcquireRelease);
  return true;
}();

// Wall time of fn() in seconds, added to total.
template <class Fn>
auto timed(double& total, Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  auto result = fn();
  total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

// Per iteration: a PING, an adapter pair and a raw script pair, each timed alone. The ratios are
// the targets: pairs_vs_half_ping >= 0.8 (a pair is two round trips), adapter_vs_raw >= 0.9.
void BM_Lock_VsPing(benchmark::State& state) {
  const int port = port_or_skip(state);
  if (port == 0) return;
  double ping_s = 0, adapter_s = 0, raw_s = 0;
  try {
    const RawRedis redis(port);
    const RawScriptPair raw(redis, "bench:vs-raw");
    LockClient client(port, Retry::none);
    client.pair("bench:warm-up");  // connects (lazily) outside the timed loop
    const auto adapter_pair = [&] {
      return timed(adapter_s, [&] { return client.pair("bench:vs-adapter"); }) == 2;
    };
    const auto raw_pair = [&] { return timed(raw_s, [&] { return raw.run(); }); };
    bool adapter_first = true;  // alternated, so neither pair always follows the PING
    for (auto _ : state) {
      const bool ok = timed(ping_s, [&] { return redis.ping(); }) &&
                      (adapter_first ? adapter_pair() && raw_pair() : raw_pair() && adapter_pair());
      if (!ok) return state.SkipWithError("an interleaved PING, adapter pair or raw pair failed");
      adapter_first = !adapter_first;
    }
  } catch (const std::exception& e) {
    return state.SkipWithError(e.what());
  }
  const auto n = static_cast<double>(state.iterations());
  const double ping_rate = n / ping_s, adapter_rate = n / adapter_s, raw_rate = n / raw_s;
  state.counters["ping_per_second"] = ping_rate;
  state.counters["pairs_per_second"] = adapter_rate;
  state.counters["raw_pairs_per_second"] = raw_rate;
  state.counters["pairs_vs_half_ping"] = adapter_rate / (ping_rate / 2);
  state.counters["raw_vs_half_ping"] = raw_rate / (ping_rate / 2);
  state.counters["adapter_vs_raw"] = adapter_rate / raw_rate;
}
BENCHMARK(BM_Lock_VsPing)->Name("BM_Lock_VsPing/redis")->UseRealTime();

}  // namespace

// BM_Sweep/redis (bench/sweep_bench.h): about half a second of work per iteration.
[[maybe_unused]] const bool kSweepRegistered =
    lockstep::bench::register_sweep_benchmark({.adapter = "redis", .seeds = 500});
