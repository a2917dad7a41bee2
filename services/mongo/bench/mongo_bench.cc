// The Mongo lock (adapters/mongo) under contention, where a mongod is present:
// BM_Lock_AcquireRelease/mongo/contenders:N[/keys:many][/hold:1ms] on contention.h's harness, each
// contender a Locker over MongoAdapter (server time, w:majority: the defaults) on a libmongoc
// connection of its own, retrying with services/redis/bench/redis_bench.cc's jittered backoff.
//
// The deployment: LOCKSTEP_MONGO_URI when set (the cases then work in a database of their own,
// lockstep_bench_PID, dropped at exit), else a mongod the run starts (real::MongodProcess: a
// one-member replica set on loopback, in a temp dir; started on first use from the main thread,
// which it must not outlive, and stopped at exit). Neither: every case skips with "skipped: no
// mongod (put mongod on PATH or set LOCKSTEP_MONGO_URI)"; a mongod that does not start skips with
// its log tail. Never zeros. Counters: contention.h's, and calls_per_success: the commands the
// adapter sent (counted at the connection; a grant is an upsert, a findAndModify and a confirming
// update, a contended attempt one upsert, a release one delete), per acquire+release.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "adapters/core/locker.h"
#include "bench/contention.h"
#include "bench/sweep_bench.h"
#include "lockstep/clock.h"
#include "lockstep/random.h"
#include "real/server_errors.h"
#include "services/mongo/adapter/mongo_adapter.h"
#include "services/mongo/adapter/mongoc_connection.h"
#include "services/mongo/real/mongod_server.h"

namespace {

constexpr int64_t kTtlMs = 10'000;
constexpr const char* kNoMongod =
    "skipped: no mongod (put mongod on PATH or set LOCKSTEP_MONGO_URI)";

struct Deployment {
  std::unique_ptr<lockstep::real::MongodProcess> server;  // ours, when no URI was given
  std::string uri;                                        // empty: none (error says why)
  std::string database;
  std::string error;
  bool drop_at_exit = false;

  Deployment() = default;
  Deployment(const Deployment&) = delete;
  Deployment& operator=(const Deployment&) = delete;
  ~Deployment() {
    if (!drop_at_exit) return;  // our own mongod's data goes with its dir
    lockstep::MongocConnection connection({.uri = uri});
    connection.run_command(database, lockstep::MongoDocument{{"dropDatabase", 1}});
  }
};

// First use is from a benchmark's main thread, which lives as long as the run.
Deployment& deployment() {
  static Deployment shared;
  static const bool started = [] {
    Deployment& d = shared;
    d.database = "lockstep_bench_" + std::to_string(getpid());
    if (const char* uri = std::getenv("LOCKSTEP_MONGO_URI"); uri != nullptr && *uri != '\0') {
      d.uri = uri;
      d.drop_at_exit = true;
      return true;
    }
    try {
      d.server = std::make_unique<lockstep::real::MongodProcess>();
      d.uri = d.server->uri();
    } catch (const lockstep::real::ServerUnavailable&) {
      d.error = kNoMongod;
    } catch (const std::exception& e) {  // ServerStartError: with the log's tail
      d.error = std::string("skipped: mongod did not start: ") + e.what();
    }
    return true;
  }();
  (void)started;
  return shared;
}

// A MongoConnection that counts the commands sent through it.
class CountingConnection final : public lockstep::MongoConnection {
 public:
  explicit CountingConnection(const std::string& uri) : inner_({.uri = uri}) {}
  lockstep::MongoResult run_command(const std::string& database,
                                    lockstep::MongoDocument command) override {
    ++commands_;
    return inner_.run_command(database, std::move(command));
  }
  std::string endpoint() const override { return inner_.endpoint(); }
  int64_t commands() const { return commands_; }

 private:
  lockstep::MongocConnection inner_;
  int64_t commands_ = 0;
};

// services/redis/bench/redis_bench.cc's backoff: 1 ms plus jitter in windows of 2, 4, 8, then 16 ms.
lockstep::RetrySettings backoff_retry(lockstep::Prng& prng) {
  return {.retry_delay_fn = [&prng](const lockstep::RetryAttempt& attempt) {
    const int64_t window_ms =
        std::min<int64_t>(int64_t{2} << std::min(attempt.attempt_number, 3), 16);
    return 1 + static_cast<int64_t>(prng.below(static_cast<uint64_t>(window_ms)));
  }};
}

class MongoLockClient {
 public:
  MongoLockClient(const std::string& uri, const std::string& database)
      : connection_(uri),
        adapter_({.connection = &connection_, .clock = &clock_, .database = database}),
        backoff_prng_(random_.next_u64()),
        locker_({.adapter = &adapter_,
                 .clock = &clock_,
                 .random = &random_,
                 .retry = backoff_retry(backoff_prng_)}) {}

  // One acquire, `hold` inside the lock, one release; returns the commands it sent.
  int64_t pair(const std::string& key, lockstep::bench::Acquisition& acquisition,
               std::chrono::microseconds hold) {
    const int64_t before = connection_.commands();
    lockstep::Lock lock = locker_.lock(key, kTtlMs);
    lock.acquire();
    acquisition.granted();
    lockstep::bench::hold(hold);
    if (!lock.release()) throw std::runtime_error("lock " + key + " was gone before its release");
    return connection_.commands() - before;
  }

 private:
  CountingConnection connection_;
  lockstep::SystemClock clock_;
  lockstep::SystemRandom random_;
  lockstep::MongoAdapter adapter_;
  lockstep::Prng backoff_prng_;
  lockstep::Locker locker_;
};

void BM_Lock_AcquireRelease_Mongo(benchmark::State& state, int contenders, bool many_keys,
                                  std::chrono::microseconds hold) {
  const Deployment& d = deployment();
  if (d.uri.empty()) return state.SkipWithError(d.error.c_str());
  std::vector<std::unique_ptr<MongoLockClient>> clients;
  std::vector<std::string> keys;
  try {
    for (int i = 0; i < contenders; ++i) {
      clients.push_back(std::make_unique<MongoLockClient>(d.uri, d.database));
      lockstep::bench::Acquisition untimed;
      clients.back()->pair("bench:warm-up", untimed,
                           std::chrono::microseconds{0});  // connects, creates indexes
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

[[maybe_unused]] const bool registered = [] {
  constexpr int kMongoContenders[] = {1, 2, 8, 32};
  lockstep::bench::register_contention("BM_Lock_AcquireRelease/mongo", kMongoContenders, true,
                                       BM_Lock_AcquireRelease_Mongo);
  return true;
}();

}  // namespace

// BM_Sweep/mongo (bench/sweep_bench.h): about half a second of work per iteration.
[[maybe_unused]] const bool kSweepRegistered =
    lockstep::bench::register_sweep_benchmark({.adapter = "mongo", .seeds = 200});
