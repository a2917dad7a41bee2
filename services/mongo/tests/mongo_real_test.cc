// The Mongo adapter against a real MongoDB: a mongod the test starts on loopback (a one-member
// replica set, when mongod is on PATH) or the deployment at LOCKSTEP_MONGO_URI (each test then
// works in a database of its own and drops it). Without either the executable exits 77 ("skipped:
// no mongod"), also in CI: MongoDB is not in Debian.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>

#include "adapters/core/errors.h"
#include "adapters/core/locker.h"
#include "lockstep/clock.h"
#include "lockstep/random.h"
#include "services/mongo/adapter/mongo_adapter.h"
#include "services/mongo/adapter/mongoc_connection.h"
#include "services/mongo/real/mongod_server.h"
#include "tests/real_support.h"

namespace lockstep {
namespace {

using Json = MongoDocument;

// A deployment to test against, and a database of this test's own in it.
class MongoDeployment {
 public:
  MongoDeployment() {
    testing::require_mongo();
    const char* from_env = std::getenv("LOCKSTEP_MONGO_URI");
    if (from_env != nullptr && *from_env != '\0') {
      uri_ = from_env;
    } else {
      server_ = std::make_unique<real::MongodProcess>();
      uri_ = server_->uri();
    }
    static int counter = 0;
    database_ = "lockstep_test_" + std::to_string(getpid()) + "_" + std::to_string(++counter);
  }
  ~MongoDeployment() {
    MongocConnection connection({.uri = uri_});
    connection.run_command(database_,
                           Json{{"dropDatabase", 1}, {"writeConcern", {{"w", "majority"}}}});
  }
  MongoDeployment(const MongoDeployment&) = delete;
  MongoDeployment& operator=(const MongoDeployment&) = delete;

  const std::string& uri() const { return uri_; }
  const std::string& database() const { return database_; }

  Json run(const Json& command) const {
    MongocConnection connection({.uri = uri_});
    const MongoResult result = connection.run_command(database_, command);
    INFO(command.dump() << ": " << result.message);
    REQUIRE(result.ok());
    INFO(result.reply.dump());
    REQUIRE(result.reply["ok"] == 1);
    return result.reply;
  }
  // The lock document of `key` (null when there is none), read at majority.
  Json lock_document(const std::string& key) const {
    const Json reply = run(Json{
        {"find", "locks"}, {"filter", {{"key", key}}}, {"readConcern", {{"level", "majority"}}}});
    const Json& batch = reply["cursor"]["firstBatch"];
    return batch.empty() ? Json(nullptr) : batch.front();
  }

 private:
  std::unique_ptr<real::MongodProcess> server_;
  std::string uri_;
  std::string database_;
};

struct MongoClient {
  MongoClient(const MongoDeployment& deployment, MongoAdapterOptions options = {},
              int64_t clock_skew_us = 0)
      : connection({.uri = deployment.uri()}),
        clock(clock_skew_us),
        adapter([&] {
          options.connection = &connection;
          options.clock = &clock;
          options.database = deployment.database();
          return options;
        }()),
        locker({.adapter = &adapter, .clock = &clock, .random = &random}) {}

  MongocConnection connection;
  SystemClock clock;
  SystemRandom random;
  MongoAdapter adapter;
  Locker locker;
};

// Polls until the lock is no longer valid for its holder (expired), within a bound.
void wait_until_expired(Lock& lock) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (lock.is_locked()) REQUIRE(std::chrono::steady_clock::now() < deadline);
}

}  // namespace

TEST_CASE("mongo real: acquire, contend, release, and release again", "[mongo][real]") {
  MongoDeployment deployment;
  MongoClient a(deployment), b(deployment);

  Lock lock = a.locker.lock("orders", 5000);
  lock.acquire();
  CHECK(lock.fencing_token() == 1);
  const Json document = deployment.lock_document("orders");
  CHECK(document["value"] == lock.unique_value());
  CHECK(document["token"] == 1);
  CHECK(is_mongo_date(document["expire_at"]));
  CHECK(lock.is_locked());

  Lock other = b.locker.lock("orders", 5000);
  CHECK_THROWS_AS(other.acquire(), RetryError);  // contention (11000), not an error
  CHECK_FALSE(other.is_locked());

  CHECK(lock.release());
  CHECK(deployment.lock_document("orders").is_null());
  CHECK_FALSE(lock.release());
  CHECK_THROWS_AS(lock.release({.throw_on_fail = true}), LockReleaseError);
  CHECK_FALSE(lock.is_locked());
}

TEST_CASE("mongo real: the indexes are created once, unique on key and TTL on expire_at",
          "[mongo][real]") {
  MongoDeployment deployment;
  MongoClient a(deployment), b(deployment);
  a.locker.lock("k", 5000).acquire();
  b.locker.lock("other", 5000).acquire();  // a second adapter creates them again: idempotent
  CHECK(b.adapter.indexes_ready());
  const Json reply = deployment.run(Json{{"listIndexes", "locks"}});
  bool unique_key = false;
  bool ttl = false;
  for (const Json& index : reply["cursor"]["firstBatch"]) {
    if (index["name"] == "key_1") unique_key = index.value("unique", false);
    if (index["name"] == "expire_at_1") ttl = index["expireAfterSeconds"] == 0;
  }
  CHECK(unique_key);
  CHECK(ttl);
}

TEST_CASE("mongo real: fencing tokens strictly increase across releases and expiries",
          "[mongo][real]") {
  MongoDeployment deployment;
  MongoClient a(deployment);
  uint64_t previous = 0;
  for (int i = 0; i < 4; ++i) {
    Lock lock = a.locker.lock("k", i % 2 == 0 ? 5000 : 100);
    lock.acquire();
    REQUIRE(lock.fencing_token());
    CHECK(*lock.fencing_token() > previous);
    previous = *lock.fencing_token();
    if (i % 2 == 0) {
      lock.release();
    } else {
      wait_until_expired(lock);  // the expired document is taken over by the next upsert
    }
  }
  const Json counter = deployment.run(Json{{"find", "lock_fencing"}, {"filter", {{"_id", "k"}}}});
  CHECK(counter["cursor"]["firstBatch"][0]["n"] == 4);
}

TEST_CASE("mongo real: extend lengthens our lock and never brings back an expired one",
          "[mongo][real]") {
  MongoDeployment deployment;
  MongoClient a(deployment), b(deployment);

  Lock lock = a.locker.lock("k", 1000);
  lock.acquire();
  const int64_t before = mongo_date_ms(deployment.lock_document("k")["expire_at"]);
  lock.extend(60'000);
  CHECK(mongo_date_ms(deployment.lock_document("k")["expire_at"]) > before + 50'000);

  Lock short_lived = a.locker.lock("short", 100);
  short_lived.acquire();
  wait_until_expired(short_lived);
  CHECK_THROWS_AS(short_lived.extend(5000), LockExtendError);

  // Stolen: B holds the key after A's expired; A's release and extend leave B's lock intact.
  Lock mine = a.locker.lock("stolen", 100);
  mine.acquire();
  wait_until_expired(mine);
  Lock theirs = b.locker.lock("stolen", 10'000);
  theirs.acquire();
  CHECK(*theirs.fencing_token() == 2);
  CHECK_FALSE(mine.release());
  CHECK_THROWS_AS(mine.extend(60'000), LockExtendError);
  CHECK(deployment.lock_document("stolen")["value"] == theirs.unique_value());
  CHECK(theirs.is_locked());
  CHECK(theirs.release());
}

TEST_CASE("mongo real: w:1, readConcern majority and client time all work", "[mongo][real]") {
  MongoDeployment deployment;
  MongoClient a(deployment, {.time_source = MongoTimeSource::client,
                             .write_concern = MongoWriteConcern::one,
                             .read_majority = true});
  Lock lock = a.locker.lock("k", 5000);
  lock.acquire();
  CHECK(lock.fencing_token() == 1);
  CHECK(lock.is_locked());
  lock.extend(10'000);
  CHECK(lock.release());
  CHECK_FALSE(lock.is_locked());
}

TEST_CASE(
    "mongo real: a client clock 15 s ahead takes a live lock in client time, not in server time",
    "[mongo][real]") {
  MongoDeployment deployment;
  SECTION("client time: the fast clock sees A's lock as expired (the violation)") {
    MongoClient a(deployment, {.time_source = MongoTimeSource::client});
    MongoClient b(deployment, {.time_source = MongoTimeSource::client}, 15'000'000);
    Lock held = a.locker.lock("k", 10'000);
    held.acquire();
    Lock thief = b.locker.lock("k", 10'000);
    thief.acquire();
    CHECK(thief.fencing_token() == 2);
    CHECK_FALSE(held.is_locked());
  }
  SECTION("server time ($$NOW): the client's clock does not matter") {
    MongoClient a(deployment);
    MongoClient b(deployment, {}, 15'000'000);
    Lock held = a.locker.lock("k", 10'000);
    held.acquire();
    Lock other = b.locker.lock("k", 10'000);
    CHECK_THROWS_AS(other.acquire(), RetryError);
    CHECK(held.is_locked());
  }
}

TEST_CASE("mongo real: a paused mongod is a backend error within the socket timeout, not a grant",
          "[mongo][real]") {
  if (const char* from_env = std::getenv("LOCKSTEP_MONGO_URI");
      from_env != nullptr && *from_env != '\0') {
    SUCCEED("needs a mongod the test starts itself");
    return;
  }
  testing::require_mongo();
  real::MongodProcess server;
  MongocConnection connection({.uri = server.uri(), .socket_timeout_ms = 500});
  MongoAdapter adapter({.connection = &connection, .database = "lockstep_pause"});
  REQUIRE(adapter.create_lock({.key = "warm", .value = "v", .ttl_ms = 5000}).ok());
  server.pause();
  const AdapterResult paused = adapter.create_lock({.key = "k", .value = "v", .ttl_ms = 5000});
  CHECK(paused.status == AdapterStatus::outcome_unknown);
  CHECK_THAT(paused.message, Catch::Contains("timeout"));
  server.resume();
}

}  // namespace lockstep
