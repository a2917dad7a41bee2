// Contract tests of the Mongo adapter: the REAL adapter over the REAL MongocConnection (libmongoc)
// against a scripted MongoDB wire peer (services/mongo/tests/contract/mongo_peer.py, Debian's python3-mockupdb),
// one peer process per test. They assert the exact command documents the adapter sends (filters,
// the $$NOW pipeline updates, upsert flags, write concern, readConcern, index specs) and how the
// adapter maps the replies a mongod can give (11000, writeConcernError, ok: 0) and the transport
// failures (a peer that does not answer, closes the connection, or vanishes).
//
// These are not database tests: the peer answers only what each test scripts. The behaviour of a
// real mongod is services/mongo/tests/mongo_real_test.cc's.
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "adapters/core/errors.h"
#include "adapters/core/locker.h"
#include "base/check.h"
#include "lockstep/clock.h"
#include "lockstep/random.h"
#include "real/child_process.h"
#include "services/mongo/adapter/mongo_adapter.h"
#include "services/mongo/adapter/mongoc_connection.h"
#include "services/mongo/real/mongod_server.h"
#include "tests/real_support.h"

namespace lockstep {
namespace {

using Json = MongoDocument;
using Clock_ = std::chrono::steady_clock;

int64_t elapsed_ms(Clock_::time_point since) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock_::now() - since).count();
}

std::string python_for_peer() {
  // Debian's interpreter: python3-mockupdb lives in its dist-packages (a pyenv python3 on PATH
  // would not see it).
  if (std::filesystem::exists("/usr/bin/python3")) return "/usr/bin/python3";
  auto found = real::find_on_path("python3");
  if (!found) testing::skip_or_fail("python3 not found (apt-get install python3 python3-mockupdb)");
  return *found;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

// One scripted peer process: started with its script, stopped (SIGKILL by PID) and its files
// removed when the test ends.
class MongoPeer {
 public:
  explicit MongoPeer(Json script) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "lockstep-mongo-peer-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    dir_ = pattern;
    std::ofstream(dir_ + "/script.json") << script.dump();
    process_ = std::make_unique<real::ChildProcess>(
        real::SpawnOptions{.path = python_for_peer(),
                           .args = {LOCKSTEP_MONGO_PEER, "--script", dir_ + "/script.json",
                                    "--record", dir_ + "/record.jsonl"},
                           .output_path = dir_ + "/output.log"});
    wait_for_port();
  }
  ~MongoPeer() {
    process_.reset();  // SIGKILL and reap by PID
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  MongoPeer(const MongoPeer&) = delete;
  MongoPeer& operator=(const MongoPeer&) = delete;

  int port() const { return port_; }
  std::string uri() const { return "mongodb://127.0.0.1:" + std::to_string(port_); }
  std::string endpoint() const { return uri(); }
  bool alive() { return !process_->reaped() && !process_->exited_now(); }

  // Every command the peer received, in order, without what the driver adds ($db checked here,
  // $readPreference, lsid, $clusterTime).
  std::vector<Json> commands() const {
    std::vector<Json> result;
    std::istringstream lines(read_file(dir_ + "/record.jsonl"));
    for (std::string line; std::getline(lines, line);) {
      Json command = Json::parse(line)["command"];
      CHECK(command["$db"] == "lockstep");
      for (const char* driver_field : {"$db", "$readPreference", "lsid", "$clusterTime"})
        command.erase(driver_field);
      result.push_back(std::move(command));
    }
    return result;
  }

 private:
  // Polls the peer's output for its "PORT n" line (bounded): the peer is accepting from then on.
  void wait_for_port() {
    const auto deadline = Clock_::now() + std::chrono::seconds(10);
    while (Clock_::now() < deadline) {
      const std::string output = read_file(dir_ + "/output.log");
      if (output.rfind("UNAVAILABLE ", 0) == 0) testing::skip_or_fail(output.substr(12));
      const auto at = output.find("PORT ");
      if (at != std::string::npos && output.find('\n', at) != std::string::npos) {
        port_ = std::stoi(output.substr(at + 5));
        return;
      }
      if (process_->exited_now()) FAIL("mongo_peer.py exited at start:\n" << output);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling a bounded deadline
    }
    FAIL("mongo_peer.py printed no port within 10 s:\n" << read_file(dir_ + "/output.log"));
  }

  std::string dir_;
  int port_ = 0;
  std::unique_ptr<real::ChildProcess> process_;
};

Json reply(Json document) { return Json{{"reply", std::move(document)}}; }
Json script(std::vector<Json> actions) { return Json{{"actions", std::move(actions)}}; }

// The replies of a successful acquire after createIndexes: the upsert (statement 1) inserted,
// token `token`, confirmed.
std::vector<Json> granted(int64_t token, bool with_indexes = true) {
  std::vector<Json> actions;
  if (with_indexes) {
    actions.push_back(reply({{"createdCollectionAutomatically", true},
                             {"numIndexesBefore", 1},
                             {"numIndexesAfter", 3}}));
  }
  actions.push_back(
      reply({{"n", 1},
             {"nModified", 0},
             {"upserted",
              Json::array({{{"index", 1}, {"_id", {{"$oid", "65a0c0ffee0000000000beef"}}}}})}}));
  actions.push_back(reply({{"lastErrorObject", {{"n", 1}, {"updatedExisting", true}}},
                           {"value", {{"_id", "orders"}, {"n", token}}}}));
  actions.push_back(reply({{"n", 1}, {"nModified", 1}}));
  return actions;
}

const Json kMajority = {{"w", "majority"}, {"wtimeout", 5000}};

Json expected_create_indexes(const Json& write_concern = kMajority) {
  Json command = Json::parse(R"({"createIndexes": "locks", "indexes": [
      {"key": {"key": 1}, "name": "key_1", "unique": true},
      {"key": {"expire_at": 1}, "name": "expire_at_1", "expireAfterSeconds": 0}]})");
  command["writeConcern"] = write_concern;
  return command;
}

// A fixed client clock for time_source client.
class FixedClock final : public Clock {
 public:
  explicit FixedClock(int64_t now_ms) : now_ms_(now_ms) {}
  int64_t now_us() override { return now_ms_ * 1000; }
  int64_t monotonic_us() override { return now_ms_ * 1000; }
  void sleep_for_us(int64_t) override {}

 private:
  int64_t now_ms_;
};

struct Client {
  explicit Client(const MongoPeer& peer, MongoAdapterOptions options = {},
                  int64_t socket_timeout_ms = 2000)
      : connection({.uri = peer.uri(), .socket_timeout_ms = socket_timeout_ms}), adapter([&] {
          options.connection = &connection;
          return options;
        }()) {}
  MongocConnection connection;
  MongoAdapter adapter;
};

const LockSpec kSpec{.key = "orders", .value = "v-1", .ttl_ms = 3000};

}  // namespace

TEST_CASE(
    "contract: acquire sends createIndexes, the $$NOW take-over and the upsert, findAndModify and "
    "the confirmation",
    "[mongo][contract]") {
  auto actions = granted(7);
  auto again = granted(8, false);
  actions.insert(actions.end(), again.begin(), again.end());
  MongoPeer peer(script(actions));
  Client client(peer);

  const AdapterResult first = client.adapter.create_lock(kSpec);
  INFO(first.message);
  REQUIRE(first.ok());
  CHECK(first.fencing_token == 7);
  CHECK(client.adapter.indexes_ready());
  const AdapterResult second = client.adapter.create_lock(kSpec);  // indexes only once
  REQUIRE(second.ok());
  CHECK(second.fencing_token == 8);

  const std::vector<Json> sent = peer.commands();
  REQUIRE(sent.size() == 7);
  CHECK(sent[0] == expected_create_indexes());
  // $expr only where nothing is upserted: mongod refuses it in an upsert's query (224).
  CHECK(sent[1] == Json::parse(R"({"update": "locks", "updates": [{
      "q": {"key": "orders", "$expr": {"$lt": ["$expire_at", "$$NOW"]}},
      "u": [{"$set": {"value": "v-1", "expire_at": {"$add": ["$$NOW", 3000]}}}],
      "upsert": false}, {
      "q": {"key": "orders", "value": "v-1"},
      "u": [{"$set": {"expire_at": {"$ifNull": ["$expire_at", {"$add": ["$$NOW", 3000]}]}}}],
      "upsert": true}], "ordered": true, "writeConcern": {"w": "majority", "wtimeout": 5000}})"));
  CHECK(sent[2] == Json::parse(R"({"findAndModify": "lock_fencing", "query": {"_id": "orders"},
      "update": {"$inc": {"n": 1}}, "new": true, "upsert": true,
      "writeConcern": {"w": "majority", "wtimeout": 5000}})"));
  CHECK(sent[3] == Json::parse(R"({"update": "locks", "updates": [{
      "q": {"key": "orders", "value": "v-1", "$expr": {"$gt": ["$expire_at", "$$NOW"]}},
      "u": {"$set": {"token": 7}}, "upsert": false}], "ordered": true,
      "writeConcern": {"w": "majority", "wtimeout": 5000}})"));
  CHECK(sent[4]["update"] == "locks");  // the second acquire starts with the upsert
}

TEST_CASE("contract: duplicate key 11000 on the upsert is contention, and nothing more is sent",
          "[mongo][contract]") {
  MongoPeer peer(script(
      {reply({{"ok", 1}}),
       reply({{"n", 0},
              {"nModified", 0},
              {"writeErrors",
               Json::array({{{"index", 1},
                             {"code", 11000},
                             {"errmsg",
                              "E11000 duplicate key error collection: "
                              "lockstep.locks index: key_1 dup key: { key: \"orders\" }"}}})}})}));
  Client client(peer);
  const AdapterResult result = client.adapter.create_lock(kSpec);
  CHECK(result.status == AdapterStatus::contended);
  CHECK(peer.commands().size() == 2);
}

TEST_CASE(
    "contract: an expired lock taken over (n 2) is a grant, and our own live lock (n 1, nothing "
    "upserted) is contention",
    "[mongo][contract]") {
  auto actions = granted(6);
  actions[1] = reply({{"n", 2}, {"nModified", 1}});        // statement 0 took over, 1 matched it
  actions.push_back(reply({{"n", 1}, {"nModified", 0}}));  // only statement 1 matched: ours, live
  MongoPeer peer(script(actions));
  Client client(peer);
  const AdapterResult taken = client.adapter.create_lock(kSpec);
  INFO(taken.message);
  REQUIRE(taken.ok());
  CHECK(taken.fencing_token == 6);
  const AdapterResult again = client.adapter.create_lock(kSpec);
  CHECK(again.status == AdapterStatus::contended);
  CHECK_THAT(again.message, Catch::Contains("locked with this value already"));
  CHECK(peer.commands().size() == 5);  // no token for a lease that is not new
}

TEST_CASE(
    "contract: a writeConcernError on the grant is a backend error, and the document is deleted "
    "again",
    "[mongo][contract]") {
  MongoPeer peer(script({reply({{"ok", 1}}),
                         reply({{"n", 1},
                                {"nModified", 1},
                                {"writeConcernError",
                                 {{"code", 64},
                                  {"codeName", "WriteConcernFailed"},
                                  {"errmsg", "waiting for replication timed out"},
                                  {"errInfo", {{"wtimeout", true}}}}}}),
                         reply({{"n", 1}})}));
  Client client(peer);
  const AdapterResult result = client.adapter.create_lock(kSpec);
  CHECK(result.status == AdapterStatus::backend_error);
  CHECK_THAT(
      result.message,
      Catch::Contains("acquire on " + peer.endpoint()) &&
          Catch::Contains("code 64 (WriteConcernFailed): waiting for replication timed out") &&
          Catch::Contains("not reported as held") && Catch::Contains("deleted again"));
  const std::vector<Json> sent = peer.commands();
  REQUIRE(sent.size() == 3);
  // The best-effort release: owner-checked and unexpired, w:1 (the majority just failed).
  CHECK(sent[2] == Json::parse(R"({"delete": "locks", "deletes": [{
      "q": {"key": "orders", "value": "v-1", "$expr": {"$gt": ["$expire_at", "$$NOW"]}}, "limit": 1}],
      "ordered": true, "writeConcern": {"w": 1}})"));
}

TEST_CASE(
    "contract: through the Locker a grant without majority is BackendError, never a held lock",
    "[mongo][contract]") {
  MongoPeer peer(script({reply({{"ok", 1}}),
                         reply({{"n", 1},
                                {"writeConcernError",
                                 {{"code", 64}, {"errmsg", "waiting for replication timed out"}}}}),
                         reply({{"n", 1}})}));
  Client client(peer);
  SystemClock clock;
  SystemRandom random;
  Locker locker({.adapter = &client.adapter,
                 .clock = &clock,
                 .random = &random,
                 .retry = {.retry_delay_ms = 10, .retry_times = 3}});
  Lock lock = locker.lock("orders", 3000);
  CHECK_THROWS_AS(lock.acquire(), BackendError);  // not retried: one upsert only
  CHECK(peer.commands().size() == 3);
}

TEST_CASE("contract: a writeConcernError on the token or the confirmation is not a grant either",
          "[mongo][contract]") {
  const Json wce{
      {"writeConcernError", {{"code", 64}, {"errmsg", "waiting for replication timed out"}}}};
  SECTION("findAndModify") {
    auto actions = granted(3);
    actions[2]["reply"].update(wce);
    actions.resize(3);
    actions.push_back(reply({{"n", 1}}));
    MongoPeer peer(script(actions));
    Client client(peer);
    const AdapterResult result = client.adapter.create_lock(kSpec);
    CHECK(result.status == AdapterStatus::backend_error);
    CHECK_THAT(result.message, Catch::Contains("findAndModify write concern error: code 64"));
    const auto sent = peer.commands();
    REQUIRE(sent.size() == 4);
    CHECK(sent[3]["delete"] == "locks");
  }
  SECTION("confirmation") {
    auto actions = granted(3);
    actions[3]["reply"].update(wce);
    actions.push_back(reply({{"n", 1}}));
    MongoPeer peer(script(actions));
    Client client(peer);
    const AdapterResult result = client.adapter.create_lock(kSpec);
    CHECK(result.status == AdapterStatus::backend_error);
    CHECK(peer.commands().size() == 5);
  }
}

TEST_CASE("contract: a confirmation that matches nothing means the lease ended first: not granted",
          "[mongo][contract]") {
  auto actions = granted(9);
  actions[3] = reply({{"n", 0}, {"nModified", 0}});
  MongoPeer peer(script(actions));
  Client client(peer);
  const AdapterResult result = client.adapter.create_lock(kSpec);
  CHECK(result.status == AdapterStatus::contended);
  CHECK_THAT(result.message, Catch::Contains("token 9"));
  CHECK(peer.commands().size() == 4);
}

TEST_CASE("contract: ok: 0 is a backend error with the code and errmsg", "[mongo][contract]") {
  MongoPeer peer(script({reply({{"ok", 1}}), reply({{"ok", 0},
                                                    {"code", 10107},
                                                    {"codeName", "NotWritablePrimary"},
                                                    {"errmsg", "not primary"}})}));
  Client client(peer);
  const AdapterResult result = client.adapter.create_lock(kSpec);
  CHECK(result.status == AdapterStatus::backend_error);
  CHECK_THAT(
      result.message,
      Catch::Contains(peer.endpoint()) &&
          Catch::Contains("update command error: code 10107 (NotWritablePrimary): not primary"));
  CHECK(peer.commands().size() == 2);  // nothing written: no cleanup
}

TEST_CASE("contract: a failed createIndexes fails the operation and is retried by the next one",
          "[mongo][contract]") {
  auto actions = std::vector<Json>{reply({{"ok", 0},
                                          {"code", 85},
                                          {"codeName", "IndexOptionsConflict"},
                                          {"errmsg", "an index with different options"}})};
  auto rest = granted(1);
  actions.insert(actions.end(), rest.begin(), rest.end());
  MongoPeer peer(script(actions));
  Client client(peer);
  const AdapterResult failed = client.adapter.create_lock(kSpec);
  CHECK(failed.status == AdapterStatus::backend_error);
  CHECK_THAT(failed.message,
             Catch::Contains("createIndexes command error: code 85 (IndexOptionsConflict)"));
  CHECK_FALSE(client.adapter.indexes_ready());
  const AdapterResult retried = client.adapter.create_lock(kSpec);
  CHECK(retried.ok());
  const auto sent = peer.commands();
  REQUIRE(sent.size() == 5);
  CHECK(sent[0] == expected_create_indexes());
  CHECK(sent[1] == expected_create_indexes());
}

TEST_CASE("contract: release, extend and is_valid are owner-checked and unexpired by $$NOW",
          "[mongo][contract]") {
  MongoPeer peer(script(
      {reply({{"ok", 1}}), reply({{"n", 1}, {"nModified", 1}}), reply({{"n", 0}, {"nModified", 0}}),
       reply({{"cursor",
               {{"firstBatch", Json::array({{{"key", "orders"}}})},
                {"id", 0},
                {"ns", "lockstep.locks"}}}}),
       reply({{"cursor", {{"firstBatch", Json::array()}, {"id", 0}, {"ns", "lockstep.locks"}}}}),
       reply({{"n", 1}}), reply({{"n", 0}})}));
  Client client(peer, {.read_majority = true});
  CHECK(client.adapter.extend_lock(kSpec, 9000).ok());
  CHECK(client.adapter.extend_lock(kSpec, 9000).status == AdapterStatus::not_owner);
  CHECK(client.adapter.is_valid_lock(kSpec).ok());
  CHECK(client.adapter.is_valid_lock(kSpec).status == AdapterStatus::not_owner);
  CHECK(client.adapter.release_lock(kSpec).ok());
  CHECK(client.adapter.release_lock(kSpec).status == AdapterStatus::not_owner);

  const auto sent = peer.commands();
  REQUIRE(sent.size() == 7);
  CHECK(sent[0] == expected_create_indexes());
  CHECK(sent[1] == Json::parse(R"({"update": "locks", "updates": [{
      "q": {"key": "orders", "value": "v-1", "$expr": {"$gt": ["$expire_at", "$$NOW"]}},
      "u": [{"$set": {"expire_at": {"$add": ["$$NOW", 9000]}}}], "upsert": false}], "ordered": true,
      "writeConcern": {"w": "majority", "wtimeout": 5000}})"));
  CHECK(sent[3] == Json::parse(R"({"find": "locks",
      "filter": {"key": "orders", "value": "v-1", "$expr": {"$gt": ["$expire_at", "$$NOW"]}},
      "limit": 1, "singleBatch": true, "readConcern": {"level": "majority"}})"));
  CHECK(sent[5] == Json::parse(R"({"delete": "locks", "deletes": [{
      "q": {"key": "orders", "value": "v-1", "$expr": {"$gt": ["$expire_at", "$$NOW"]}}, "limit": 1}],
      "ordered": true, "writeConcern": {"w": "majority", "wtimeout": 5000}})"));
}

TEST_CASE("contract: by default is_valid reads at readConcern majority exactly when it writes so",
          "[mongo][contract]") {
  const Json empty_cursor{
      {"cursor", {{"firstBatch", Json::array()}, {"id", 0}, {"ns", "lockstep.locks"}}}};
  const std::string filter =
      R"("filter": {"key": "orders", "value": "v-1", "$expr": {"$gt": ["$expire_at", "$$NOW"]}},
      "limit": 1, "singleBatch": true)";
  SECTION("w:majority (the default) reads what a majority has") {
    MongoPeer peer(script({reply({{"ok", 1}}), reply(empty_cursor)}));
    Client client(peer);
    CHECK(client.adapter.is_valid_lock(kSpec).status == AdapterStatus::not_owner);
    const auto sent = peer.commands();
    REQUIRE(sent.size() == 2);
    CHECK(sent[1] == Json::parse(R"({"find": "locks", )" + filter +
                                 R"(, "readConcern": {"level": "majority"}})"));
  }
  SECTION("w:1 reads what the primary has (a majority read could miss its own w:1 write)") {
    MongoPeer peer(script({reply({{"ok", 1}}), reply(empty_cursor)}));
    Client client(peer, {.write_concern = MongoWriteConcern::one});
    CHECK(client.adapter.is_valid_lock(kSpec).status == AdapterStatus::not_owner);
    const auto sent = peer.commands();
    REQUIRE(sent.size() == 2);
    CHECK(sent[1] == Json::parse(R"({"find": "locks", )" + filter + "}"));
  }
}

TEST_CASE(
    "mongo defaults: the socket timeout outlasts the wtimeout, so a write concern error "
    "can arrive",
    "[mongo]") {
  CHECK(MongocOptions{}.socket_timeout_ms > MongoAdapterOptions{}.write_concern_timeout_ms);
}

TEST_CASE(
    "contract: a writeConcernError on release or extend is outcome unknown (applied on the "
    "primary, maybe rolled back), not success",
    "[mongo][contract]") {
  const Json wce{{"code", 64},
                 {"codeName", "WriteConcernFailed"},
                 {"errmsg", "waiting for replication timed out"}};
  MongoPeer peer(script({reply({{"ok", 1}}), reply({{"n", 1}, {"writeConcernError", wce}}),
                         reply({{"n", 1}, {"nModified", 1}, {"writeConcernError", wce}})}));
  Client client(peer);
  const AdapterResult released = client.adapter.release_lock(kSpec);
  CHECK(released.status == AdapterStatus::outcome_unknown);
  CHECK_THAT(released.message,
             Catch::Contains("release on " + peer.endpoint() + ": delete write concern error"));
  const AdapterResult extended = client.adapter.extend_lock(kSpec, 1000);
  CHECK(extended.status == AdapterStatus::outcome_unknown);
  CHECK_THAT(extended.message,
             Catch::Contains("extend on") && Catch::Contains("WriteConcernFailed"));
}

TEST_CASE("contract: time_source client sends date literals read once per operation, and w:1",
          "[mongo][contract]") {
  MongoPeer peer(script(granted(4)));
  FixedClock clock(1'700'000'000'000);
  Client client(peer, {.clock = &clock,
                       .database = "lockstep",
                       .time_source = MongoTimeSource::client,
                       .write_concern = MongoWriteConcern::one});
  const AdapterResult result = client.adapter.create_lock(kSpec);
  REQUIRE(result.ok());
  CHECK(result.fencing_token == 4);
  const auto sent = peer.commands();
  REQUIRE(sent.size() == 4);
  CHECK(sent[0] == expected_create_indexes({{"w", 1}}));
  CHECK(sent[1] == Json::parse(R"({"update": "locks", "updates": [{
      "q": {"key": "orders", "expire_at": {"$lt": {"$date": 1700000000000}}},
      "u": {"$set": {"value": "v-1", "expire_at": {"$date": 1700000003000}}},
      "upsert": false}, {
      "q": {"key": "orders", "value": "v-1"},
      "u": {"$setOnInsert": {"expire_at": {"$date": 1700000003000}}},
      "upsert": true}], "ordered": true, "writeConcern": {"w": 1}})"));
  CHECK(sent[3] == Json::parse(R"({"update": "locks", "updates": [{
      "q": {"key": "orders", "value": "v-1", "expire_at": {"$gt": {"$date": 1700000000000}}},
      "u": {"$set": {"token": 4}}, "upsert": false}], "ordered": true, "writeConcern": {"w": 1}})"));
}

TEST_CASE("contract: the driver adds no write or read concern of its own, whatever the URI says",
          "[mongo][contract]") {
  MongoPeer peer(script(
      {reply({{"ok", 1}}), reply({{"cursor", {{"firstBatch", Json::array()}, {"id", 0}}}})}));
  MongocConnection connection(
      {.uri = peer.uri() +
              "/?w=majority&journal=true&readConcernLevel=linearizable&retryWrites=true"});
  MongoAdapter adapter({.connection = &connection, .write_concern = MongoWriteConcern::one});
  CHECK(adapter.is_valid_lock(kSpec).status == AdapterStatus::not_owner);
  const auto sent = peer.commands();
  REQUIRE(sent.size() == 2);
  CHECK(sent[0]["writeConcern"] == Json{{"w", 1}});
  CHECK_FALSE(sent[1].contains("readConcern"));
  CHECK_FALSE(sent[1].contains("writeConcern"));
}

TEST_CASE("contract: BSON types on the wire both ways", "[mongo][contract]") {
  MongoPeer peer(script({Json{{"echo_types", true}},
                         reply({{"date", {{"$date", -5}}},
                                {"oid", {{"$oid", "0123456789abcdef01234567"}}},
                                {"small", 7},
                                {"long", {{"$int64", 7}}},
                                {"big", 6'000'000'000},
                                {"real", 2.5},
                                {"text", "t\xc3\xa9"},
                                {"flag", false},
                                {"nothing", nullptr},
                                {"nested", {{"list", Json::array({1, "two", Json::object()})}}},
                                {"ts", {{"$timestamp", Json::array({1, 2})}}}})}));
  MongocConnection connection({.uri = peer.uri()});
  const MongoResult types =
      connection.run_command("lockstep", Json{{"lockstepEcho", 1},
                                              {"int32", 2'147'483'647},
                                              {"int64", 2'147'483'648LL},
                                              {"neg", -2'147'483'649LL},
                                              {"double", 1.0},
                                              {"date", {{"$date", 1'700'000'000'123}}},
                                              {"oid", {{"$oid", "65a0c0ffee0000000000beef"}}},
                                              {"doc", {{"$set", 1}}},
                                              {"list", Json::array({1})},
                                              {"null", nullptr},
                                              {"bool", true},
                                              {"text", "x"}});
  INFO(types.message);
  REQUIRE(types.ok());
  CHECK(types.reply["types"] ==
        Json::parse(R"({"lockstepEcho": "int32", "int32": "int32", "int64": "Int64",
      "neg": "Int64", "double": "float", "date": "datetime", "oid": "ObjectId", "doc": "OrderedDict",
      "list": "list", "null": "NoneType", "bool": "bool", "text": "str", "$db": "str"})"));
  CHECK(peer.commands().at(0)["date"] == Json{{"$date", 1'700'000'000'123}});

  const MongoResult values = connection.run_command("lockstep", Json{{"lockstepValues", 1}});
  REQUIRE(values.ok());
  const Json& got = values.reply;
  CHECK(got["date"] == Json{{"$date", -5}});
  CHECK(got["oid"] == Json{{"$oid", "0123456789abcdef01234567"}});
  CHECK(got["small"] == 7);
  CHECK(got["long"] == 7);
  CHECK(got["big"] == 6'000'000'000);
  CHECK(got["real"].is_number_float());
  CHECK(got["text"] == "t\xc3\xa9");
  CHECK(got["flag"] == false);
  CHECK(got["nothing"].is_null());
  CHECK(got["nested"] == Json{{"list", Json::array({1, "two", Json::object()})}});
  CHECK(got["ts"] == Json{{"$unsupported", "timestamp"}});
  CHECK(got["ok"] == 1);
}

TEST_CASE("contract: a peer that does not answer is a timeout within the socket timeout",
          "[mongo][contract]") {
  MongoPeer peer(script({reply({{"ok", 1}}), Json{{"hang", true}}, reply({{"n", 0}})}));
  Client client(peer, {}, 300);
  const auto started = Clock_::now();
  const AdapterResult result = client.adapter.create_lock(kSpec);
  const int64_t took_ms = elapsed_ms(started);
  CHECK(result.status == AdapterStatus::outcome_unknown);  // the upsert may have been applied
  CHECK_THAT(result.message, Catch::Contains("acquire on " + peer.endpoint() + ": update timeout"));
  CHECK(took_ms >= 250);  // a lower bound only: a busy machine can stretch a wait, not cut it
  CHECK(peer.commands().size() == 2);  // no cleanup after a transport failure

  SECTION("and the connection works again for the next command") {
    CHECK(client.adapter.release_lock(kSpec).status == AdapterStatus::not_owner);
  }
}

TEST_CASE(
    "contract: a peer that closes the connection after reading the command is connection_lost, and "
    "the next command reconnects",
    "[mongo][contract]") {
  MongoPeer peer(script({Json{{"close", true}}, reply({{"ok", 1}}), reply({{"n", 1}})}));
  MongocConnection connection({.uri = peer.uri(), .socket_timeout_ms = 1000});
  const MongoResult closed = connection.run_command("lockstep", Json{{"ping2", 1}});
  // The command was written whole: it may have run (io_status.h). Not a timeout either.
  CHECK(closed.status == IoStatus::connection_lost);
  CHECK_THAT(closed.message, Catch::Contains(peer.endpoint()));

  MongoAdapter adapter({.connection = &connection});
  CHECK(adapter.release_lock(kSpec).ok());
}

TEST_CASE("contract: a peer that vanishes mid-command, or was never there, is a clean failure",
          "[mongo][contract]") {
  SECTION("vanishes") {
    MongoPeer peer(script({reply({{"ok", 1}}), Json{{"exit", true}}}));
    Client client(peer, {}, 1000);
    // The peer read the update before it left: the update may have been applied.
    const AdapterResult result = client.adapter.create_lock(kSpec);
    CHECK(result.status == AdapterStatus::outcome_unknown);
    CHECK_THAT(result.message,
               Catch::Contains("acquire on " + peer.endpoint() + ": update connection_lost"));
    const AdapterResult after = client.adapter.release_lock(kSpec);  // nobody listens any more
    CHECK((after.status == AdapterStatus::backend_error ||
           after.status == AdapterStatus::outcome_unknown));
    CHECK_THAT(after.message, Catch::Contains("connection_error") || Catch::Contains("timeout"));
  }
  SECTION("never there") {
    int port = 0;
    {
      MongoPeer probe(script({}));
      port = probe.port();
    }  // a port that was just closed
    MongocConnection connection({.uri = "mongodb://127.0.0.1:" + std::to_string(port)});
    const MongoResult result = connection.run_command("lockstep", Json{{"ping2", 1}});
    CHECK(result.status == IoStatus::connection_error);  // not a timeout
    CHECK_THAT(result.message, Catch::Contains("127.0.0.1:" + std::to_string(port)));
  }
}

TEST_CASE("contract: a replica-set primary peer works the same", "[mongo][contract]") {
  Json with_topology = script(granted(5));
  with_topology["topology"] = "primary";
  MongoPeer peer(with_topology);
  MongocConnection connection({.uri = peer.uri() + "/?replicaSet=rs0"});
  MongoAdapter adapter({.connection = &connection});
  SystemClock clock;
  SystemRandom random;
  Locker locker({.adapter = &adapter, .clock = &clock, .random = &random});
  Lock lock = locker.lock("orders", 3000);
  lock.acquire();
  CHECK(lock.fencing_token() == 5);
}

}  // namespace lockstep

namespace lockstep {

// MongodProcess's start protocol (hello polled, replSetInitiate sent once, wait for a writable
// primary, stop by PID) against services/mongo/tests/contract/fake_mongod.py put on PATH as `mongod`: the part of
// the real-mongod support that runs even where MongoDB is not installed.
TEST_CASE("contract: MongodProcess initiates rs0 and waits for a primary (fake mongod on PATH)",
          "[mongo][contract]") {
  {
    MongoPeer probe(script({}));
  }  // the fake is a mockupdb script too: skip (or fail in CI) without it
  const std::string bin = (std::filesystem::temp_directory_path() /
                           ("lockstep-fake-mongod-" + std::to_string(getpid())))
                              .string();
  std::filesystem::create_directories(bin);
  std::filesystem::remove(bin + "/mongod");
  std::filesystem::create_symlink(LOCKSTEP_FAKE_MONGOD, bin + "/mongod");
  const std::string saved_path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  setenv("PATH", (bin + ":" + saved_path).c_str(), 1);
  struct Restore {
    std::string path, dir;
    ~Restore() {
      setenv("PATH", path.c_str(), 1);
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  } restore{saved_path, bin};

  CHECK(real::MongodProcess::binary_path() == bin + "/mongod");
  real::MongodProcess server({.start_timeout_ms = 10'000, .stop_timeout_ms = 2'000});
  CHECK(server.running());
  CHECK(server.uri() == "mongodb://127.0.0.1:" + std::to_string(server.port()));
  const std::string log = server.log_tail();
  CHECK_THAT(log, Catch::Contains("--bind_ip 127.0.0.1") && Catch::Contains("--replSet rs0") &&
                      Catch::Contains("--dbpath " + server.dir() + "/db"));
  CHECK_THAT(log, Catch::Contains("INITIATE") &&
                      Catch::Contains("127.0.0.1:" + std::to_string(server.port())));
  const std::string dir = server.dir();
  server.stop();
  CHECK_FALSE(server.running());
  CHECK_FALSE(std::filesystem::exists(dir));
}

}  // namespace lockstep
