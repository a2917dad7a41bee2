// The Mongo adapter's parts that need no server: MongoDocument <-> BSON, the command builders, the
// reading of replies, and the adapter's decisions over a scripted in-process MongoConnection.
#include <catch2/catch.hpp>

#include <bson/bson.h>
#include <mongoc/mongoc.h>

#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

#include "services/mongo/adapter/bson_convert.h"
#include "services/mongo/adapter/mongo_adapter.h"
#include "services/mongo/adapter/mongo_commands.h"
#include "services/mongo/adapter/mongoc_connection.h"

namespace lockstep {
namespace {

using Json = MongoDocument;
namespace cmd = mongo_commands;

bson_type_t type_of(const bson_t& document, const char* dotted) {
  bson_iter_t iter;
  bson_iter_t found;
  REQUIRE(bson_iter_init(&iter, &document));
  REQUIRE(bson_iter_find_descendant(&iter, dotted, &found));
  return bson_iter_type(&found);
}

// A connection that answers from a script and records what it was sent.
class ScriptedConnection final : public MongoConnection {
 public:
  explicit ScriptedConnection(std::deque<MongoResult> replies) : replies_(std::move(replies)) {}
  MongoResult run_command(const std::string& database, MongoDocument command) override {
    databases.push_back(database);
    sent.push_back(std::move(command));
    if (replies_.empty())
      return {.status = IoStatus::connection_error, .message = "script exhausted"};
    MongoResult next = replies_.front();
    replies_.pop_front();
    return next;
  }
  std::string endpoint() const override { return "scripted:0"; }

  std::vector<std::string> databases;
  std::vector<Json> sent;

 private:
  std::deque<MongoResult> replies_;
};

MongoResult ok_reply(Json reply) { return {.reply = std::move(reply)}; }

class FixedClock final : public Clock {
 public:
  int64_t now_us() override { return 42'000'000; }
  int64_t monotonic_us() override { return 42'000'000; }
  void sleep_for_us(int64_t) override {}
};

const LockSpec kSpec{.key = "k", .value = "v", .ttl_ms = 1000};

}  // namespace

TEST_CASE("bson: every seam type converts to the BSON type the conventions name", "[mongo][bson]") {
  const Json document = Json::parse(R"({"i32": 2147483647, "i32min": -2147483648, "i64": 2147483648,
      "i64neg": -2147483649, "u": 5, "d": 1.5, "s": "text", "t": true, "n": null,
      "date": {"$date": 1700000000123}, "oid": {"$oid": "65a0c0ffee0000000000beef"},
      "not_date": {"$date": 1, "x": 2}, "not_oid": {"$oid": "xyz"}, "op": {"$set": {"a": [1, {"b": 2}]}}})");
  bson_t* converted = to_bson(document);
  CHECK(type_of(*converted, "i32") == BSON_TYPE_INT32);
  CHECK(type_of(*converted, "i32min") == BSON_TYPE_INT32);
  CHECK(type_of(*converted, "i64") == BSON_TYPE_INT64);
  CHECK(type_of(*converted, "i64neg") == BSON_TYPE_INT64);
  CHECK(type_of(*converted, "u") == BSON_TYPE_INT32);
  CHECK(type_of(*converted, "d") == BSON_TYPE_DOUBLE);
  CHECK(type_of(*converted, "s") == BSON_TYPE_UTF8);
  CHECK(type_of(*converted, "t") == BSON_TYPE_BOOL);
  CHECK(type_of(*converted, "n") == BSON_TYPE_NULL);
  CHECK(type_of(*converted, "date") == BSON_TYPE_DATE_TIME);
  CHECK(type_of(*converted, "oid") == BSON_TYPE_OID);
  CHECK(type_of(*converted, "not_date") == BSON_TYPE_DOCUMENT);
  CHECK(type_of(*converted, "not_oid") == BSON_TYPE_DOCUMENT);
  CHECK(type_of(*converted, "op.$set.a") == BSON_TYPE_ARRAY);
  CHECK(type_of(*converted, "op.$set.a.1.b") == BSON_TYPE_INT32);

  const Json back = from_bson(*converted);
  bson_destroy(converted);
  CHECK(back == document);  // key order kept too
  CHECK(back.begin().key() == "i32");
  CHECK(back["d"].is_number_float());
}

TEST_CASE("bson: other BSON types come back as $unsupported, doubles as floating point",
          "[mongo][bson]") {
  bson_t document;
  bson_init(&document);
  BSON_APPEND_TIMESTAMP(&document, "ts", 1, 2);
  const uint8_t bytes[] = {1, 2, 3};
  BSON_APPEND_BINARY(&document, "bin", BSON_SUBTYPE_BINARY, bytes, 3);
  bson_decimal128_t decimal;
  bson_decimal128_from_string("1.5", &decimal);
  BSON_APPEND_DECIMAL128(&document, "dec", &decimal);
  BSON_APPEND_REGEX(&document, "re", "a.*", "i");
  BSON_APPEND_MINKEY(&document, "min");
  BSON_APPEND_DOUBLE(&document, "ok", 1.0);
  BSON_APPEND_UTF8(&document, "nul", "a");
  const Json converted = from_bson(document);
  bson_destroy(&document);
  CHECK(converted["ts"] == Json{{"$unsupported", "timestamp"}});
  CHECK(converted["bin"] == Json{{"$unsupported", "binary"}});
  CHECK(converted["dec"] == Json{{"$unsupported", "decimal128"}});
  CHECK(converted["re"] == Json{{"$unsupported", "regex"}});
  CHECK(converted["min"] == Json{{"$unsupported", "minkey"}});
  CHECK(converted["ok"].is_number_float());
  CHECK(converted["ok"] == 1);
}

TEST_CASE("bson: raw bytes round trip, invalid bytes are discarded, bad input is a checked error",
          "[mongo][bson]") {
  const Json document{{"a", 1}, {"b", Json::array({"x", std::string("\0y", 2)})}};
  const std::vector<uint8_t> bytes = to_bson_bytes(document);
  CHECK(from_bson_bytes(bytes.data(), bytes.size()) == document);
  std::vector<uint8_t> broken = bytes;
  broken[0] = static_cast<uint8_t>(broken[0] + 1);
  CHECK(from_bson_bytes(broken.data(), broken.size()).is_discarded());
  CHECK_THROWS_AS(to_bson(Json::array({1})), std::logic_error);
  CHECK_THROWS_AS(to_bson(Json{{std::string("a\0b", 3), 1}}), std::logic_error);
  CHECK_THROWS_AS(to_bson(Json{{"u", std::numeric_limits<uint64_t>::max()}}), std::logic_error);
}

TEST_CASE("commands: server time uses $$NOW, client time date literals", "[mongo][commands]") {
  const Json wc = cmd::majority_write_concern(250);
  CHECK(wc == Json::parse(R"({"w": "majority", "wtimeout": 250})"));
  CHECK(cmd::w1_write_concern() == Json::parse(R"({"w": 1})"));
  CHECK(cmd::acquire("locks", "k", "v", 1000, MongoNow::server(), wc).begin().key() == "update");
  // mongod refuses $expr in an upsert's query (224): the $$NOW condition is in the statement that
  // does not upsert, in either time mode.
  for (const MongoNow& now : {MongoNow::server(), MongoNow::client(10)}) {
    const Json acquire = cmd::acquire("locks", "k", "v", 1000, now, wc);
    REQUIRE(acquire["updates"].size() == 2);
    CHECK(acquire["updates"][0]["upsert"] == false);
    CHECK(acquire["updates"][0]["q"] == cmd::expired_filter("k", now));
    CHECK(acquire["updates"][1]["upsert"] == true);
    CHECK(acquire["updates"][1]["q"] == Json::parse(R"({"key": "k", "value": "v"})"));
  }
  CHECK(cmd::expired_filter("k", MongoNow::server()) ==
        Json::parse(R"({"key": "k", "$expr": {"$lt": ["$expire_at", "$$NOW"]}})"));
  CHECK(cmd::owner_filter("k", "v", MongoNow::client(10)) ==
        Json::parse(R"({"key": "k", "value": "v", "expire_at": {"$gt": {"$date": 10}}})"));
  CHECK(cmd::extend("locks", "k", "v", 500, MongoNow::client(10), wc)["updates"][0]["u"] ==
        Json::parse(R"({"$set": {"expire_at": {"$date": 510}}})"));
  CHECK(cmd::extend("locks", "k", "v", 500, MongoNow::server(), wc)["updates"][0]["u"] ==
        Json::parse(R"([{"$set": {"expire_at": {"$add": ["$$NOW", 500]}}}])"));
  CHECK(cmd::find_owned("locks", "k", "v", MongoNow::server(), false) ==
        Json::parse(R"({"find": "locks", "filter": {"key": "k", "value": "v",
            "$expr": {"$gt": ["$expire_at", "$$NOW"]}}, "limit": 1, "singleBatch": true})"));
  CHECK(
      cmd::next_token("fence", "k", cmd::w1_write_concern()) ==
      Json::parse(R"({"findAndModify": "fence", "query": {"_id": "k"}, "update": {"$inc": {"n": 1}},
            "new": true, "upsert": true, "writeConcern": {"w": 1}})"));
}

TEST_CASE("replies: ok, write errors, write concern errors, command errors, malformed",
          "[mongo][replies]") {
  using Kind = MongoReplyOutcome::Kind;
  CHECK(read_reply(Json::parse(R"({"ok": 1.0, "n": 1})")).kind == Kind::ok);
  CHECK(read_reply(Json::parse(R"({"ok": 1.0, "n": 1})")).n == 1);
  CHECK_FALSE(read_reply(Json::parse(R"({"ok": 1.0, "n": 1})")).upserted);
  CHECK(read_reply(Json::parse(R"({"ok": 1, "n": 1, "upserted": [{"index": 1, "_id": 7}]})"))
            .upserted);
  const auto dup = read_reply(Json::parse(
      R"({"ok": 1, "n": 0, "writeErrors": [{"index": 0, "code": 11000, "errmsg": "E11000"}]})"));
  CHECK(dup.kind == Kind::duplicate_key);
  CHECK(dup.code == 11000);
  CHECK(dup.n == 0);
  // An ordered batch that failed at its second statement: n says the first one applied.
  CHECK(
      read_reply(Json::parse(R"({"ok": 1, "n": 1, "writeErrors": [{"index": 1, "code": 11602}]})"))
          .n == 1);
  CHECK(read_reply(Json::parse(R"({"ok": 1, "writeErrors": [{"code": 121, "errmsg": "invalid"}]})"))
            .kind == Kind::write_error);
  const auto wce = read_reply(Json::parse(
      R"({"ok": 1, "n": 1, "writeConcernError": {"code": 64, "codeName": "WriteConcernFailed", "errmsg": "timed out"}})"));
  CHECK(wce.kind == Kind::write_concern_error);
  CHECK(wce.message == "code 64 (WriteConcernFailed): timed out");
  const auto failed = read_reply(Json::parse(R"({"ok": 0, "code": 13, "errmsg": "unauthorized"})"));
  CHECK(failed.kind == Kind::command_error);
  CHECK(failed.message == "code 13: unauthorized");
  CHECK(read_reply(Json::parse(R"({"n": 1})")).kind == Kind::malformed);
  CHECK(read_reply(Json::parse(R"({"ok": "yes"})")).kind == Kind::malformed);
  CHECK(token_of(Json::parse(R"({"ok": 1, "value": {"_id": "k", "n": 3}})")) == 3);
  CHECK_FALSE(token_of(Json::parse(R"({"ok": 1, "value": null})")));
  CHECK_FALSE(token_of(Json::parse(R"({"ok": 1, "value": {"n": 0}})")));
  CHECK_FALSE(token_of(Json::parse(R"({"ok": 1, "value": {"n": 1.5}})")));
  CHECK(first_batch_size(
            Json::parse(R"({"ok": 1, "cursor": {"firstBatch": [{}, {}], "id": 0}})")) == 2u);
  CHECK_FALSE(first_batch_size(Json::parse(R"({"ok": 1})")));
}

TEST_CASE("adapter: preconditions are checked", "[mongo][adapter]") {
  ScriptedConnection connection({});
  CHECK_THROWS_AS(MongoAdapter({}), std::logic_error);
  CHECK_THROWS_AS(MongoAdapter({.connection = &connection, .time_source = MongoTimeSource::client}),
                  std::logic_error);
  CHECK_THROWS_AS(MongoAdapter({.connection = &connection, .fencing_collection = "locks"}),
                  std::logic_error);
  CHECK_THROWS_AS(MongoAdapter({.connection = &connection, .write_concern_timeout_ms = 0}),
                  std::logic_error);
  MongoAdapter adapter({.connection = &connection});
  CHECK_THROWS_AS(adapter.create_lock({.key = "k", .value = "v", .ttl_ms = 0}), std::logic_error);
  CHECK_THROWS_AS(adapter.extend_lock(kSpec, -1), std::logic_error);
  CHECK(connection.sent.empty());
  CHECK(to_string(MongoTimeSource::client) == "client");
  CHECK(to_string(MongoWriteConcern::majority) == "majority");
}

TEST_CASE("adapter: decisions over a scripted connection", "[mongo][adapter]") {
  const MongoResult indexes = ok_reply({{"ok", 1}});
  const MongoResult inserted =
      ok_reply({{"ok", 1}, {"n", 1}, {"upserted", Json::array({{{"index", 1}, {"_id", "id"}}})}});
  SECTION("a grant runs on the configured database and maps value.n to the token") {
    ScriptedConnection connection(
        {indexes, inserted,
         ok_reply({{"ok", 1}, {"value", {{"_id", "k"}, {"n", 5'000'000'000LL}}}}),
         ok_reply({{"ok", 1}, {"n", 1}})});
    MongoAdapter adapter({.connection = &connection, .database = "app"});
    const AdapterResult result = adapter.create_lock(kSpec);
    REQUIRE(result.ok());
    CHECK(result.fencing_token == 5'000'000'000ULL);
    CHECK(connection.databases == std::vector<std::string>(4, "app"));
    CHECK(connection.sent[3]["updates"][0]["u"] ==
          Json::parse(R"({"$set": {"token": 5000000000}})"));
  }
  SECTION("a findAndModify without a usable token is not a grant") {
    ScriptedConnection connection({indexes, inserted, ok_reply({{"ok", 1}, {"value", nullptr}}),
                                   ok_reply({{"ok", 1}, {"n", 1}})});
    MongoAdapter adapter({.connection = &connection});
    const AdapterResult result = adapter.create_lock(kSpec);
    CHECK(result.status == AdapterStatus::backend_error);
    CHECK_THAT(result.message, Catch::Contains("findAndModify unexpected reply"));
    CHECK(connection.sent.back()["delete"] == "locks");
  }
  SECTION("a timed-out upsert may have been applied: outcome unknown, nothing more sent") {
    ScriptedConnection connection(
        {indexes, {.status = IoStatus::timeout, .message = "socket timeout"}});
    MongoAdapter adapter({.connection = &connection});
    const AdapterResult result = adapter.create_lock(kSpec);
    CHECK(result.status == AdapterStatus::outcome_unknown);
    CHECK(result.message == "acquire on scripted:0: update timeout (socket timeout)");
    CHECK(connection.sent.size() == 2);
  }
  SECTION("a refused connection is a plain backend error") {
    ScriptedConnection connection(
        {indexes, {.status = IoStatus::connection_error, .message = "refused"}});
    MongoAdapter adapter({.connection = &connection});
    CHECK(adapter.create_lock(kSpec).status == AdapterStatus::backend_error);
  }
  SECTION("a transport failure after the lock document was written leaves it ours: unknown") {
    ScriptedConnection connection(
        {indexes, inserted, {.status = IoStatus::connection_error, .message = "reset"}});
    MongoAdapter adapter({.connection = &connection});
    const AdapterResult result = adapter.create_lock(kSpec);
    CHECK(result.status == AdapterStatus::outcome_unknown);
    CHECK(connection.sent.size() == 3);  // no cleanup over a broken transport
  }
  SECTION("a batch whose take-over applied before its upsert failed is cleaned up, not refused") {
    // Statement 0 (the take-over) applied, statement 1 failed: n counts what applied.
    const MongoResult partly =
        ok_reply({{"ok", 1},
                  {"n", 1},
                  {"writeErrors",
                   Json::array({{{"index", 1}, {"code", 11602}, {"errmsg", "interrupted"}}})}});
    SECTION("the best-effort delete confirmed it gone: a plain backend error") {
      ScriptedConnection connection({indexes, partly, ok_reply({{"ok", 1}, {"n", 1}})});
      MongoAdapter adapter({.connection = &connection});
      const AdapterResult result = adapter.create_lock(kSpec);
      CHECK(result.status == AdapterStatus::backend_error);
      CHECK_THAT(result.message, Catch::Contains("lock document deleted again"));
      CHECK(connection.sent.back()["delete"] == "locks");
    }
    SECTION("the delete was lost: the key may be ours until its TTL, outcome unknown") {
      ScriptedConnection connection(
          {indexes, partly, {.status = IoStatus::connection_lost, .message = "reset"}});
      MongoAdapter adapter({.connection = &connection});
      const AdapterResult result = adapter.create_lock(kSpec);
      CHECK(result.status == AdapterStatus::outcome_unknown);
      CHECK_THAT(result.message, Catch::Contains("best-effort release failed"));
    }
  }
  SECTION("a duplicate key with nothing applied is contention, with no clean-up") {
    ScriptedConnection connection(
        {indexes,
         ok_reply({{"ok", 1},
                   {"n", 0},
                   {"writeErrors",
                    Json::array({{{"index", 1}, {"code", 11000}, {"errmsg", "E11000"}}})}})});
    MongoAdapter adapter({.connection = &connection});
    CHECK(adapter.create_lock(kSpec).status == AdapterStatus::contended);
    CHECK(connection.sent.size() == 2);
  }
  SECTION("an extend sent whole whose connection was lost may have applied: outcome unknown") {
    ScriptedConnection connection(
        {indexes, {.status = IoStatus::connection_lost, .message = "EOF"}});
    MongoAdapter adapter({.connection = &connection});
    CHECK(adapter.extend_lock(kSpec, 10).status == AdapterStatus::outcome_unknown);
  }
  SECTION("an extend that never left (connection_error) was not applied: backend error") {
    ScriptedConnection connection(
        {indexes, {.status = IoStatus::connection_error, .message = "refused"}});
    MongoAdapter adapter({.connection = &connection});
    CHECK(adapter.extend_lock(kSpec, 10).status == AdapterStatus::backend_error);
  }
  SECTION("client time reads the clock once per operation") {
    FixedClock clock;
    ScriptedConnection connection({indexes, ok_reply({{"ok", 1}, {"n", 0}})});
    MongoAdapter adapter(
        {.connection = &connection, .clock = &clock, .time_source = MongoTimeSource::client});
    CHECK(adapter.release_lock(kSpec).status == AdapterStatus::not_owner);
    CHECK(connection.sent[1]["deletes"][0]["q"]["expire_at"] ==
          Json::parse(R"({"$gt": {"$date": 42000}})"));
  }
  SECTION("an owner-checked write with n > 1 is a backend error") {
    ScriptedConnection connection({indexes, ok_reply({{"ok", 1}, {"n", 2}})});
    MongoAdapter adapter({.connection = &connection});
    CHECK(adapter.extend_lock(kSpec, 10).status == AdapterStatus::backend_error);
  }
}

}  // namespace lockstep

namespace lockstep {
namespace {

TEST_CASE("libmongoc failures read by whether the command was sent whole", "[mongo][outcome]") {
  // The messages are libmongoc 1.23's: both stages start "Failed to send"; the reading stage's
  // own words follow.
  const std::string read_failed =
      R"(Failed to send "update" command with database "lockstep": socket error or timeout)";
  const std::string write_failed =
      R"(Failed to send "update" command with database "lockstep": Failure during socket )"
      R"(delivery: Broken pipe (32))";
  CHECK(classify_mongoc_failure(MONGOC_ERROR_STREAM, MONGOC_ERROR_STREAM_SOCKET, read_failed,
                                false) == IoStatus::connection_lost);
  CHECK(classify_mongoc_failure(MONGOC_ERROR_STREAM, MONGOC_ERROR_STREAM_SOCKET, read_failed,
                                true) == IoStatus::timeout);
  CHECK(classify_mongoc_failure(MONGOC_ERROR_STREAM, MONGOC_ERROR_STREAM_SOCKET, write_failed,
                                false) == IoStatus::connection_error);
  CHECK(classify_mongoc_failure(MONGOC_ERROR_STREAM, MONGOC_ERROR_STREAM_CONNECT,
                                "Failed to connect to target host: 127.0.0.1:1",
                                true) == IoStatus::connection_error);
  // A server selection that timed out sent nothing: not a timeout of the command.
  CHECK(classify_mongoc_failure(MONGOC_ERROR_SERVER_SELECTION,
                                MONGOC_ERROR_SERVER_SELECTION_FAILURE,
                                "No suitable servers found: serverSelectionTimeoutMS expired",
                                true) == IoStatus::connection_error);
  CHECK(classify_mongoc_failure(MONGOC_ERROR_PROTOCOL, MONGOC_ERROR_PROTOCOL_INVALID_REPLY,
                                "invalid reply from server", false) == IoStatus::connection_lost);
}

}  // namespace
}  // namespace lockstep
