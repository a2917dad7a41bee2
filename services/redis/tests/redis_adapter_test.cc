// The Redis adapter against a real redis-server that the test starts on loopback (and stops):
// every operation and its error paths, through the public Lock API.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "adapters/core/background.h"
#include "adapters/core/errors.h"
#include "adapters/core/locker.h"
#include "real/server_errors.h"
#include "services/redis/adapter/hiredis_connection.h"
#include "services/redis/adapter/redis_adapter.h"
#include "services/redis/real/redis_server.h"
#include "tests/real_support.h"

namespace lockstep {
namespace {

// One client: a connection, the adapter over it, and a Locker with the real clock.
struct RedisClient {
  explicit RedisClient(const real::RedisServerProcess& server, RedisAdapterOptions options = {})
      : connection({.port = server.port(), .command_timeout_ms = 300}),
        adapter([&] {
          options.connection = &connection;
          return options;
        }()),
        locker({.adapter = &adapter, .clock = &clock, .random = &random}) {}

  HiredisConnection connection;
  RedisAdapter adapter;
  SystemClock clock;
  SystemRandom random;
  Locker locker;
};

RedisReply raw(const real::RedisServerProcess& server, std::vector<std::string> argv) {
  HiredisConnection connection({.port = server.port()});
  RedisResult result = connection.command(argv);
  REQUIRE(result.ok());
  return result.reply;
}

// Polls until the key is gone (expired), within a bound: no sleep stands in for the expiry.
void wait_until_gone(const real::RedisServerProcess& server, const std::string& key) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (raw(server, {"EXISTS", key}).integer == 1) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
  }
}

// Redis Cluster's key slot (cluster spec, "Keys distribution model"): CRC16-XMODEM of the hash tag
// (between the first '{' and the next '}', when that is non-empty) or else of the whole key, mod
// 16384. Written from the spec, not from the adapter.
uint16_t crc16_xmodem(std::string_view data) {
  uint16_t crc = 0;
  for (const char c : data) {
    crc = static_cast<uint16_t>(crc ^ (static_cast<uint8_t>(c) << 8));
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) != 0 ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                                : static_cast<uint16_t>(crc << 1);
    }
  }
  return crc;
}

int cluster_slot(std::string_view key) {
  const size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return crc16_xmodem(key) % 16384;
}

// Records every command's keys (EVALSHA/EVAL name them after the key count; GET its one key) and
// answers as a free lock would: a token for the grant, 1 for release and extend.
class KeyRecorder final : public RedisConnection {
 public:
  RedisResult command(const std::vector<std::string>& argv) override {
    if (argv.at(0) == "EVALSHA" || argv.at(0) == "EVAL") {
      const size_t count = std::stoul(argv.at(2));
      keys.emplace_back(argv.begin() + 3, argv.begin() + 3 + static_cast<std::ptrdiff_t>(count));
      return {.reply = RedisReply::integer_of(1)};
    }
    keys.push_back({argv.at(1)});
    return {.reply = RedisReply{}};
  }
  std::string endpoint() const override { return "recorder"; }
  std::vector<std::vector<std::string>> keys;
};

// Answers every command with one transport failure.
class FailingConnection final : public RedisConnection {
 public:
  explicit FailingConnection(IoStatus status) : status_(status) {}
  RedisResult command(const std::vector<std::string>&) override {
    return {.status = status_, .message = "scripted"};
  }
  std::string endpoint() const override { return "failing"; }

 private:
  IoStatus status_;
};

}  // namespace

TEST_CASE("redis: a write that timed out is outcome_unknown but not a read or a refused connect",
          "[redis]") {
  const LockSpec spec{.key = "k", .value = "v", .ttl_ms = 1000};
  FailingConnection timing_out(IoStatus::timeout);
  RedisAdapter adapter({.connection = &timing_out});
  CHECK(adapter.create_lock(spec).status == AdapterStatus::outcome_unknown);
  CHECK(adapter.extend_lock(spec, 1000).status == AdapterStatus::outcome_unknown);
  CHECK(adapter.release_lock(spec).status == AdapterStatus::outcome_unknown);
  CHECK(adapter.is_valid_lock(spec).status == AdapterStatus::backend_error);  // changes nothing
  FailingConnection refusing(IoStatus::connection_error);
  RedisAdapter refused({.connection = &refusing});
  const AdapterResult result = refused.create_lock(spec);
  CHECK(result.status == AdapterStatus::backend_error);
  CHECK_THAT(result.message, Catch::Contains("acquire on failing: connection_error"));
}

TEST_CASE("cluster slot: the CRC16 matches the cluster spec's examples", "[redis]") {
  CHECK(crc16_xmodem("123456789") == 0x31C3);
  CHECK(cluster_slot("{user1000}.following") == cluster_slot("{user1000}.followers"));
  CHECK(cluster_slot("foo{}{bar}") == crc16_xmodem("foo{}{bar}") % 16384);
  CHECK(cluster_slot("foo{{bar}}zap") == crc16_xmodem("{bar") % 16384);
}

TEST_CASE("redis: every script's keys share one cluster slot (no CROSSSLOT)", "[redis]") {
  for (const std::string key : {"orders", "k", "a:b", "with}brace", "{tagged}", "x{y"}) {
    INFO(key);
    KeyRecorder recorder;
    RedisAdapter adapter({.connection = &recorder});
    const LockSpec spec{.key = key, .value = "v", .ttl_ms = 1000};
    adapter.create_lock(spec);
    adapter.extend_lock(spec, 2000);
    adapter.is_valid_lock(spec);
    adapter.release_lock(spec);
    REQUIRE(recorder.keys.size() == 4);
    REQUIRE(recorder.keys[0].size() == 2);  // the grant touches the lock and its counter
    const int slot = cluster_slot(recorder.keys[0][0]);
    for (const auto& command : recorder.keys) {
      for (const std::string& k : command) {
        INFO(k);
        CHECK(cluster_slot(k) == slot);
      }
    }
  }
}

TEST_CASE("redis: acquire, contend, release, and release again", "[redis][real]") {
  testing::require_redis_server();
  real::RedisServerProcess server;
  RedisClient a(server), b(server);

  Lock lock = a.locker.lock("orders", 5000);
  lock.acquire();
  CHECK(lock.fencing_token() == 1);
  CHECK(raw(server, {"GET", "lock:{orders}"}).str == lock.unique_value());
  const int64_t pttl_ms = raw(server, {"PTTL", "lock:{orders}"}).integer;
  CHECK(pttl_ms > 4000);
  CHECK(pttl_ms <= 5000);
  CHECK(lock.is_locked());

  Lock other = b.locker.lock("orders", 5000);
  CHECK_THROWS_AS(other.acquire(), RetryError);  // contention, not an error
  CHECK_FALSE(other.is_locked());

  CHECK(lock.release());
  CHECK(raw(server, {"EXISTS", "lock:{orders}"}).integer == 0);
  CHECK_FALSE(lock.release());  // already gone: silent
  CHECK_THROWS_AS(lock.release({.throw_on_fail = true}), LockReleaseError);
  CHECK_FALSE(lock.is_locked());
}

TEST_CASE("redis: fencing tokens strictly increase across releases and expiries", "[redis][real]") {
  testing::require_redis_server();
  real::RedisServerProcess server;
  RedisClient a(server);
  uint64_t previous = 0;
  for (int i = 0; i < 5; ++i) {
    Lock lock = a.locker.lock("k", i % 2 == 0 ? 5000 : 50);
    lock.acquire();
    REQUIRE(lock.fencing_token());
    CHECK(*lock.fencing_token() > previous);
    previous = *lock.fencing_token();
    if (i % 2 == 0) {
      lock.release();
    } else {
      wait_until_gone(server, "lock:{k}");
    }
  }
  CHECK(raw(server, {"GET", "lock-fencing:{k}"}).str == "5");
}

TEST_CASE("redis: extend lengthens our lock and never brings back an expired one",
          "[redis][real]") {
  testing::require_redis_server();
  real::RedisServerProcess server;
  RedisClient a(server), b(server);

  Lock lock = a.locker.lock("k", 1000);
  lock.acquire();
  lock.extend(60'000);
  CHECK(raw(server, {"PTTL", "lock:{k}"}).integer > 50'000);

  Lock short_lived = a.locker.lock("short", 50);
  short_lived.acquire();
  wait_until_gone(server, "lock:{short}");
  CHECK_THROWS_AS(short_lived.extend(5000), LockExtendError);
  CHECK(raw(server, {"EXISTS", "lock:{short}"}).integer == 0);  // not re-created

  // Stolen: B holds the key after A's expired; A's release and extend leave B's lock intact.
  Lock mine = a.locker.lock("stolen", 50);
  mine.acquire();
  wait_until_gone(server, "lock:{stolen}");
  Lock theirs = b.locker.lock("stolen", 10'000);
  theirs.acquire();
  CHECK_FALSE(mine.release());
  CHECK_THROWS_AS(mine.extend(60'000), LockExtendError);
  CHECK(raw(server, {"GET", "lock:{stolen}"}).str == theirs.unique_value());
  CHECK(raw(server, {"PTTL", "lock:{stolen}"}).integer <= 10'000);
  CHECK(theirs.release());
}

TEST_CASE("redis: scripts go by SHA and fall back to EVAL after SCRIPT FLUSH", "[redis][real]") {
  testing::require_redis_server();
  real::RedisServerProcess server;
  RedisClient a(server);
  Lock lock = a.locker.lock("k", 5000);
  lock.acquire();
  raw(server, {"SCRIPT", "FLUSH"});
  CHECK(lock.release());  // EVALSHA -> NOSCRIPT -> EVAL
  lock.acquire();
  CHECK(lock.release());
}

TEST_CASE("redis: key prefixes are honoured", "[redis][real]") {
  testing::require_redis_server();
  real::RedisServerProcess server;
  RedisClient a(server, {.key_prefix = "app:locks:", .fencing_prefix = "app:tokens:"});
  Lock lock = a.locker.lock("k", 5000);
  lock.acquire();
  CHECK(raw(server, {"GET", "app:locks:{k}"}).str == lock.unique_value());
  CHECK(raw(server, {"GET", "app:tokens:{k}"}).str == "1");
  CHECK(raw(server, {"EXISTS", "lock:{k}"}).integer == 0);
}

TEST_CASE("redis: a paused, crashed or confused server is a BackendError, never a held lock",
          "[redis][real]") {
  testing::require_redis_server();
  real::RedisServerProcess server;
  RedisClient a(server);

  server.pause();
  Lock during_pause = a.locker.lock("k", 5000);
  // The script was written to the socket: it may run when the server resumes.
  CHECK_THROWS_AS(during_pause.acquire(), LockOutcomeUnknownError);
  CHECK_FALSE(during_pause.fencing_token());
  server.resume();

  server.crash();
  Lock during_crash = a.locker.lock("k2", 5000);
  CHECK_THROWS_AS(during_crash.acquire(), BackendError);
  server.restart();
  Lock after_restart = a.locker.lock("k3", 5000);
  after_restart.acquire();  // the connection reconnects
  CHECK(after_restart.release());

  // A lock key holding another type: the scripts' GET fails with WRONGTYPE.
  raw(server, {"RPUSH", "lock:{listy}", "x"});
  Lock confused = a.locker.lock("listy", 5000);
  CHECK_THROWS_AS(confused.release(), BackendError);
  CHECK_THROWS_WITH(confused.is_locked(),
                    Catch::Contains("is_locked") && Catch::Contains("WRONGTYPE"));
}

// Issue 38, bug 1: an auto-extension thread and its owner's other locks shared one hiredis
// context unguarded; the extension read another acquire's reply ("unexpected reply (integer)
// 151"), or the process crashed. Every call of one Locker now goes through its gate. Run under
// ThreadSanitizer too (scripts/test.sh): a data race on the context is a failure there.
TEST_CASE(
    "redis: one auto-extending lock beside ten thousand operations of its Locker under real "
    "threads",
    "[redis][real]") {
  testing::require_redis_server();
  real::RedisServerProcess server;
  ThreadBackground background;
  HiredisConnection connection({.port = server.port(), .command_timeout_ms = 5000});
  RedisAdapter adapter({.connection = &connection});
  SystemClock clock;
  SystemRandom random;
  Locker locker(
      {.adapter = &adapter, .clock = &clock, .random = &random, .background = &background});

  // A TTL no loaded machine outlasts, extended every millisecond: thousands of extensions race
  // the operations below for the one connection.
  Lock held = locker.lock("held", 60'000);
  held.acquire();
  held.auto_extend({.every_ms = 1});

  constexpr int kOperations = 10'000;
  constexpr int kKeys = 10;
  std::map<std::string, uint64_t> last_token;
  int operations = 0;
  while (operations < kOperations) {
    const std::string key = "k" + std::to_string(operations / 2 % kKeys);
    Lock lock = locker.lock(key, 60'000);
    lock.acquire();  // nobody else holds these keys: contention would be a misread reply
    ++operations;
    REQUIRE(lock.fencing_token());
    // Each key's counter gives 1, 2, 3, ...: a token read from an extension's reply (1) or from
    // another key's counter would break the sequence.
    REQUIRE(*lock.fencing_token() == last_token[key] + 1);
    last_token[key] = *lock.fencing_token();
    REQUIRE_FALSE(lock.lost());
    REQUIRE(lock.release({.throw_on_fail = true}));
    ++operations;
  }
  INFO(held.lost_reason());
  CHECK_FALSE(held.lost());
  CHECK(raw(server, {"GET", "lock:{held}"}).str == held.unique_value());
  CHECK(raw(server, {"PTTL", "lock:{held}"}).integer > 50'000);  // the extensions landed
  CHECK(held.release({.throw_on_fail = true}));
  for (const auto& [key, token] : last_token) CHECK(token == kOperations / 2 / kKeys);
}

}  // namespace lockstep
