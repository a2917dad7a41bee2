// The simulated mongod's command layer on one member's data, without a World: unique and TTL
// indexes, upserts, operator and pipeline updates with $$NOW, filters with BSON comparison rules,
// findAndModify, delete, find, and mongod's errors for what it does not accept.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "services/mongo/sim/collection.h"
#include "services/mongo/sim/commands.h"
#include "services/mongo/sim/update.h"

using lockstep::mongo_date;
using lockstep::MongoDocument;
using namespace lockstep::sim::mongo;

namespace {

constexpr int64_t kNowMs = 1'767'225'600'000;  // the simulator's local epoch

// One mongod's data and the command runner, at an explicit $$NOW.
struct Server {
  Database db;
  int64_t now_ms = kNowMs;
  uint64_t ids = 0;
  std::vector<MongoOp> ops;  // of the last command

  Doc run(const Doc& command) {
    CommandContext ctx{.db = db,
                       .database = "lockstep",
                       .now_ms = now_ms,
                       .members = 3,
                       .next_id =
                           [this] {
                             const std::string n = std::to_string(++ids);
                             return Doc{{"$oid", std::string(24 - n.size(), '0') + n}};
                           },
                       .majority_view =
                           [this](const std::string& ns) {
                             const Collection* c = db.find(ns);
                             return c ? *c : Collection();
                           }};
    CommandResult result = run_data_command(command, ctx);
    ops = result.ops;
    return result.reply;
  }
  std::vector<Doc> docs(const std::string& ns = "lockstep.locks") const {
    std::vector<Doc> out;
    if (const Collection* c = db.find(ns)) {
      for (const auto& [rid, doc] : c->records()) out.push_back(doc);
    }
    return out;
  }
};

Doc lock_indexes() {
  return Doc{
      {"createIndexes", "locks"},
      {"indexes",
       Doc::array(
           {Doc{{"key", {{"key", 1}}}, {"name", "key_1"}, {"unique", true}},
            Doc{{"key", {{"expire_at", 1}}}, {"name", "expire_at_1"}, {"expireAfterSeconds", 0}}})},
      {"writeConcern", {{"w", "majority"}, {"wtimeout", 5000}}}};
}

Doc update(Doc q, Doc u, bool upsert, std::string coll = "locks") {
  return Doc{
      {"update", coll},
      {"updates",
       Doc::array(
           {Doc{{"q", std::move(q)}, {"u", std::move(u)}, {"upsert", upsert}, {"multi", false}}})},
      {"ordered", true},
      {"writeConcern", {{"w", 1}}}};
}

// The adapter's acquire, one ordered batch of two statements: take over the key's document if it
// expired by $$NOW (no upsert, so $expr is allowed), then upsert {key, value}: it matches the
// document just taken over (and changes nothing), or inserts ours, or collides with another
// owner's live document on the unique index (11000).
Doc acquire(const std::string& key, const std::string& value, int64_t ttl_ms) {
  const Doc expiry{{"$add", Doc::array({"$$NOW", ttl_ms})}};
  Doc command =
      update(Doc{{"key", key}, {"$expr", {{"$lt", Doc::array({"$expire_at", "$$NOW"})}}}},
             Doc::array({Doc{{"$set", {{"value", value}, {"expire_at", expiry}}}}}), false);
  command["updates"].push_back(Doc{
      {"q", {{"key", key}, {"value", value}}},
      {"u", Doc::array({Doc{
                {"$set", {{"expire_at", {{"$ifNull", Doc::array({"$expire_at", expiry})}}}}}}})},
      {"upsert", true},
      {"multi", false}});
  return command;
}

Doc find(Doc filter, std::string coll = "locks") {
  return Doc{{"find", coll}, {"filter", std::move(filter)}, {"limit", 1}, {"singleBatch", true}};
}

Doc first_batch(const Doc& reply) { return reply["cursor"]["firstBatch"]; }

}  // namespace

TEST_CASE("commands: a unique index refuses a duplicate key with mongod's E11000 message",
          "[sim][mongo][commands]") {
  Server s;
  REQUIRE(s.run(lock_indexes())["ok"] == 1);
  const Doc first = s.run(acquire("k", "owner-a", 10'000));
  CHECK(first["n"] == 1);
  CHECK(first["nModified"] == 0);
  REQUIRE(first.contains("upserted"));
  CHECK(first["upserted"][0]["index"] == 1);
  CHECK(is_object_id(first["upserted"][0]["_id"]));

  // Live lock: nothing expired to take over, and {key, value} matches nothing, so the upsert
  // inserts a second "k".
  const Doc second = s.run(acquire("k", "owner-b", 10'000));
  CHECK(second["ok"] == 1);
  CHECK(second["n"] == 0);
  CHECK(second["nModified"] == 0);
  REQUIRE(second.contains("writeErrors"));
  const Doc& e = second["writeErrors"][0];
  CHECK(e["index"] == 1);
  CHECK(e["code"] == 11000);
  CHECK(
      e["errmsg"] ==
      "E11000 duplicate key error collection: lockstep.locks index: key_1 dup key: { key: \"k\" }");
  CHECK(e["keyPattern"] == Doc{{"key", 1}});
  CHECK(e["keyValue"] == Doc{{"key", "k"}});
  CHECK(s.ops.empty());
  REQUIRE(s.docs().size() == 1);
  CHECK(s.docs()[0]["value"] == "owner-a");
}

TEST_CASE(
    "commands: a duplicate key stops an ordered batch, an unordered one goes on, and a failed "
    "statement counts in neither n nor nModified",
    "[sim][mongo][commands]") {
  for (const bool ordered : {true, false}) {
    Server s;
    REQUIRE(s.run(lock_indexes())["ok"] == 1);
    REQUIRE(s.run(update(Doc{{"key", "held"}}, Doc{{"$set", {{"value", "a"}}}}, true))["n"] == 1);
    // Inserts "x", collides with "held" (the upsert's filter matches nothing, its key exists),
    // inserts "y", collides again, and moves "x" onto "held" (a replacement that collides).
    Doc batch = update(Doc{{"key", "x"}}, Doc{{"$set", {{"value", "b"}}}}, true);
    batch["ordered"] = ordered;
    batch["updates"].push_back(Doc{
        {"q", {{"key", "held"}, {"value", "b"}}}, {"u", {{"$set", {{"n", 1}}}}}, {"upsert", true}});
    batch["updates"].push_back(
        Doc{{"q", {{"key", "y"}}}, {"u", {{"$set", {{"value", "b"}}}}}, {"upsert", true}});
    batch["updates"].push_back(Doc{
        {"q", {{"key", "held"}, {"value", "c"}}}, {"u", {{"$set", {{"n", 2}}}}}, {"upsert", true}});
    batch["updates"].push_back(Doc{{"q", {{"key", "x"}}}, {"u", {{"$set", {{"key", "held"}}}}}});
    const Doc reply = s.run(batch);
    CHECK(reply["ok"] == 1);
    std::vector<int> failed;
    for (const Doc& e : reply["writeErrors"]) {
      CHECK(e["code"] == 11000);
      CHECK(e["keyValue"] == Doc{{"key", "held"}});
      failed.push_back(e["index"].get<int>());
    }
    std::vector<std::string> keys;
    for (const Doc& d : s.docs()) keys.push_back(d["key"].get<std::string>());
    if (ordered) {
      CHECK(failed == std::vector<int>{1});
      CHECK(reply["n"] == 1);
      CHECK(keys == std::vector<std::string>{"held", "x"});
    } else {
      CHECK(failed == std::vector<int>{1, 3, 4});
      CHECK(reply["n"] == 2);  // "x" and "y": a failed statement counts nothing, as in mongod
      CHECK(reply["nModified"] == 0);
      CHECK(keys == std::vector<std::string>{"held", "x", "y"});
    }
  }
}

TEST_CASE("commands: createIndexes is idempotent and an index build over duplicates fails",
          "[sim][mongo][commands]") {
  Server s;
  const Doc created = s.run(lock_indexes());
  CHECK(created["numIndexesBefore"] == 1);
  CHECK(created["numIndexesAfter"] == 3);
  CHECK(created["createdCollectionAutomatically"] == true);
  CHECK(s.ops.size() == 3);  // create collection + two indexes
  const Doc again = s.run(lock_indexes());
  CHECK(again["ok"] == 1);
  CHECK(again["note"] == "all indexes already exist");
  CHECK(again["numIndexesAfter"] == 3);
  CHECK(s.ops.empty());

  // Same name, other key: IndexKeySpecsConflict.
  Doc conflicting = lock_indexes();
  conflicting["indexes"][0]["key"] = Doc{{"other", 1}};
  CHECK(s.run(conflicting)["code"] == 86);

  // Two documents with the same key, then a unique index: the build fails and builds nothing.
  Server t;
  t.run(update(Doc{{"key", "k"}, {"n", 1}}, Doc{{"$set", {{"v", 1}}}}, true));
  t.run(update(Doc{{"key", "k"}, {"n", 2}}, Doc{{"$set", {{"v", 2}}}}, true));
  REQUIRE(t.docs().size() == 2);
  const Doc failed = t.run(lock_indexes());
  CHECK(failed["ok"] == 0);
  CHECK(failed["code"] == 11000);
  CHECK(failed["errmsg"].get<std::string>().find("dup key: { key: \"k\" }") != std::string::npos);
  CHECK(t.db.find("lockstep.locks")->indexes().size() == 1);  // _id_ only: all or nothing
  CHECK(t.ops.empty());
}

TEST_CASE(
    "commands: an upsert inserts the filter's equalities plus the update, with a generated _id "
    "first",
    "[sim][mongo][commands]") {
  Server s;
  s.run(lock_indexes());
  s.run(acquire("k", "a", 1500));
  REQUIRE(s.docs().size() == 1);
  const Doc doc = s.docs()[0];
  std::vector<std::string> keys;
  for (auto it = doc.begin(); it != doc.end(); ++it) keys.push_back(it.key());
  CHECK(keys == std::vector<std::string>{"_id", "key", "value", "expire_at"});
  CHECK(doc["key"] == "k");
  CHECK(doc["expire_at"] == mongo_date(kNowMs + 1500));  // $$NOW + ttl

  // Expired by $$NOW: the first statement takes it over (an update, no insert), the second then
  // matches it and changes nothing.
  s.now_ms += 1501;
  const Doc taken = s.run(acquire("k", "b", 1500));
  CHECK(taken["n"] == 2);
  CHECK(taken["nModified"] == 1);
  CHECK_FALSE(taken.contains("upserted"));
  REQUIRE(s.docs().size() == 1);
  CHECK(s.docs()[0]["value"] == "b");
  CHECK(s.docs()[0]["_id"] == doc["_id"]);
  CHECK(s.docs()[0]["expire_at"] == mongo_date(s.now_ms + 1500));
  REQUIRE(s.ops.size() == 1);
  CHECK(s.ops[0].kind == MongoOp::Kind::update);
  CHECK(s.ops[0].before["value"] == "a");

  // Live and already ours: nothing to take over, the upsert matches and changes nothing, inserts
  // nothing (n 1 without upserted: the caller can tell it from a grant).
  const Doc again = s.run(acquire("k", "b", 1500));
  CHECK(again["n"] == 1);
  CHECK(again["nModified"] == 0);
  CHECK_FALSE(again.contains("upserted"));
  CHECK_FALSE(again.contains("writeErrors"));
  CHECK(s.ops.empty());

  // $setOnInsert applies only when inserting; $inc of a missing field sets it.
  s.run(update(Doc{{"key", "c"}}, Doc{{"$setOnInsert", {{"created", 1}}}, {"$inc", {{"n", 5}}}},
               true));
  s.run(update(Doc{{"key", "c"}}, Doc{{"$setOnInsert", {{"created", 2}}}, {"$inc", {{"n", 5}}}},
               true));
  const Doc c = s.docs()[1];
  CHECK(c["created"] == 1);
  CHECK(c["n"] == 10);
}

TEST_CASE(
    "commands: an upsert whose query holds $expr is refused like mongod's 224 "
    "QueryFeatureNotAllowed",
    "[sim][mongo][commands]") {
  Server s;
  s.run(lock_indexes());
  const Doc expired{{"$expr", {{"$lt", Doc::array({"$expire_at", "$$NOW"})}}}};
  const std::string message = "$expr is not allowed in the query predicate for an upsert";
  // At top level, and inside $and / $or: mongod parses the whole predicate before it looks at any
  // document, so it refuses even on an empty collection.
  std::vector<Doc> queries;
  queries.push_back(Doc{{"key", "k"}, {"$expr", expired["$expr"]}});
  queries.push_back(Doc{{"$and", Doc::array({Doc{{"key", "k"}}, expired})}});
  queries.push_back(Doc{{"key", "k"}, {"$or", Doc::array({Doc{{"value", "v"}}, expired})}});
  for (const Doc& q : queries) {
    INFO(q.dump());
    // update: a writeErrors entry in an {"ok": 1} reply, nothing written.
    const Doc refused = s.run(update(q, Doc{{"$set", {{"value", "v"}}}}, true));
    CHECK(refused["ok"] == 1);
    CHECK(refused["n"] == 0);
    REQUIRE(refused.contains("writeErrors"));
    CHECK(refused["writeErrors"][0]["index"] == 0);
    CHECK(refused["writeErrors"][0]["code"] == 224);
    CHECK(refused["writeErrors"][0]["errmsg"] == message);
    CHECK(s.ops.empty());
    CHECK(s.docs().empty());

    // findAndModify: a command error.
    const Doc fam = s.run(Doc{{"findAndModify", "locks"},
                              {"query", q},
                              {"update", {{"$set", {{"value", "v"}}}}},
                              {"new", true},
                              {"upsert", true},
                              {"writeConcern", {{"w", 1}}}});
    CHECK(fam == Doc{{"ok", 0.0},
                     {"errmsg", message},
                     {"code", 224},
                     {"codeName", "QueryFeatureNotAllowed"}});
    CHECK(s.ops.empty());
    CHECK(s.docs().empty());
  }

  // An ordered batch stops at the refused statement; what came before it stays applied.
  Doc batch = update(Doc{{"key", "first"}}, Doc{{"$set", {{"value", "v"}}}}, true);
  batch["updates"].push_back(
      Doc{{"q", queries[0]}, {"u", {{"$set", {{"value", "v"}}}}}, {"upsert", true}});
  const Doc partial = s.run(batch);
  CHECK(partial["n"] == 1);
  CHECK(partial["writeErrors"][0]["index"] == 1);
  CHECK(partial["writeErrors"][0]["code"] == 224);
  CHECK(s.docs().size() == 1);

  // Without upsert $expr is fine, in update and in findAndModify.
  s.now_ms += 1;
  s.run(update(Doc{{"key", "first"}}, Doc{{"$set", {{"expire_at", mongo_date(kNowMs)}}}}, false));
  const Doc taken = s.run(update(Doc{{"key", "first"}, {"$expr", expired["$expr"]}},
                                 Doc{{"$set", {{"value", "w"}}}}, false));
  CHECK_FALSE(taken.contains("writeErrors"));
  CHECK(taken["nModified"] == 1);
  const Doc found = s.run(Doc{{"findAndModify", "locks"},
                              {"query", {{"key", "first"}, {"$expr", expired["$expr"]}}},
                              {"update", {{"$set", {{"value", "x"}}}}},
                              {"new", true}});
  CHECK(found["ok"] == 1);
  CHECK(found["value"]["value"] == "x");
}

TEST_CASE("commands: filters follow mongod's comparison rules", "[sim][mongo][commands]") {
  Server s;
  s.run(update(Doc{{"key", "dated"}},
               Doc{{"$set", {{"expire_at", mongo_date(kNowMs - 1)}, {"n", 1}}}}, true));
  s.run(update(Doc{{"key", "undated"}}, Doc{{"$set", {{"n", 2.0}}}}, true));
  auto keys = [&](const Doc& filter) {
    std::vector<std::string> out;
    Doc cmd = find(filter);
    cmd.erase("limit");
    for (const Doc& d : first_batch(s.run(cmd))) out.push_back(d["key"].get<std::string>());
    return out;
  };
  using V = std::vector<std::string>;
  // Query operators are type-bracketed: a missing field is not < a date.
  CHECK(keys(Doc{{"expire_at", {{"$lt", mongo_date(kNowMs)}}}}) == V{"dated"});
  CHECK(keys(Doc{{"expire_at", {{"$gt", mongo_date(kNowMs - 2)}}}}) == V{"dated"});
  CHECK(keys(Doc{{"expire_at", {{"$lt", 5}}}}).empty());  // numbers do not compare with dates
  // $expr compares across types in BSON order: missing sorts first.
  CHECK(keys(Doc{{"$expr", {{"$lt", Doc::array({"$expire_at", "$$NOW"})}}}}) ==
        V{"dated", "undated"});
  CHECK(keys(Doc{{"$expr", {{"$gt", Doc::array({"$expire_at", "$$NOW"})}}}}).empty());
  CHECK(keys(Doc{{"$expr",
                  {{"$gt", Doc::array({{{"$add", Doc::array({"$expire_at", 2})}}, "$$NOW"})}}}}) ==
        V{"dated"});
  // Numbers compare by value across int and double; null matches missing.
  CHECK(keys(Doc{{"n", 2}}) == V{"undated"});
  CHECK(keys(Doc{{"expire_at", nullptr}}) == V{"undated"});
  CHECK(keys(Doc{{"$or", Doc::array({Doc{{"n", 1}}, Doc{{"n", {{"$gte", 2}}}}})}}) ==
        V{"dated", "undated"});
  CHECK(keys(Doc{{"$and", Doc::array({Doc{{"n", {{"$ne", 1}}}}, Doc{{"key", "undated"}}})}}) ==
        V{"undated"});

  // mongod refuses unknown operators: a command error for find, a writeError for update.
  const Doc bad_find = s.run(find(Doc{{"n", {{"$near", 1}}}}));
  CHECK(bad_find["ok"] == 0);
  CHECK(bad_find["code"] == 2);
  const Doc bad_update = s.run(update(Doc{{"$where", "1"}}, Doc{{"$set", {{"x", 1}}}}, false));
  CHECK(bad_update["ok"] == 1);
  CHECK(bad_update["writeErrors"][0]["code"] == 2);
}

TEST_CASE("commands: findAndModify upserts and increments a counter", "[sim][mongo][commands]") {
  Server s;
  const Doc cmd{{"findAndModify", "lock_fencing"},
                {"query", {{"_id", "k"}}},
                {"update", {{"$inc", {{"n", 1}}}}},
                {"new", true},
                {"upsert", true},
                {"writeConcern", {{"w", "majority"}, {"wtimeout", 5000}}}};
  const Doc first = s.run(cmd);
  CHECK(first == Doc{{"lastErrorObject", {{"n", 1}, {"updatedExisting", false}, {"upserted", "k"}}},
                     {"value", {{"_id", "k"}, {"n", 1}}},
                     {"ok", 1.0}});
  const Doc second = s.run(cmd);
  CHECK(second["lastErrorObject"] == Doc{{"n", 1}, {"updatedExisting", true}});
  CHECK(second["value"] == Doc{{"_id", "k"}, {"n", 2}});
  Doc old_value = cmd;
  old_value["new"] = false;
  CHECK(s.run(old_value)["value"]["n"] == 2);
  CHECK(s.docs("lockstep.lock_fencing").at(0)["n"] == 3);
}

TEST_CASE("commands: delete, find limits, no-op updates and refused commands",
          "[sim][mongo][commands]") {
  Server s;
  s.run(update(Doc{{"key", "a"}}, Doc{{"$set", {{"value", "x"}}}}, true));
  s.run(update(Doc{{"key", "b"}}, Doc{{"$set", {{"value", "x"}}}}, true));
  CHECK(first_batch(s.run(find(Doc{{"value", "x"}}))).size() == 1);
  const Doc reply = s.run(find(Doc{{"value", "x"}}));
  CHECK(reply["cursor"]["id"] == 0);
  CHECK(reply["cursor"]["ns"] == "lockstep.locks");

  // Setting a value to what it is changes nothing: nModified 0 and no op.
  const Doc same = s.run(update(Doc{{"key", "a"}}, Doc{{"$set", {{"value", "x"}}}}, false));
  CHECK(same["n"] == 1);
  CHECK(same["nModified"] == 0);
  CHECK(s.ops.empty());

  CHECK(s.run(update(Doc{{"key", "a"}}, Doc{{"$set", {{"_id", 5}}}},
                     false))["writeErrors"][0]["code"] == 66);

  const Doc del{{"delete", "locks"},
                {"deletes", Doc::array({Doc{{"q", {{"value", "x"}}}, {"limit", 1}}})},
                {"writeConcern", {{"w", 1}}}};
  CHECK(s.run(del) == Doc{{"n", 1}, {"ok", 1.0}});
  CHECK(s.docs().size() == 1);
  CHECK(s.run(del)["n"] == 1);
  CHECK(s.run(del)["n"] == 0);

  const Doc unknown = s.run(Doc{{"aggregate", "locks"}});
  CHECK(unknown["ok"] == 0);
  CHECK(unknown["code"] == 59);
  CHECK(unknown["codeName"] == "CommandNotFound");
  Doc with_sort = find(Doc::object());
  with_sort["sort"] = Doc{{"key", 1}};
  CHECK(s.run(with_sort)["code"] == 9);
  CHECK(s.run(update(Doc::object(), Doc{{"$push", {{"a", 1}}}}, false))["writeErrors"][0]["code"] ==
        9);
  Doc bad_wc = update(Doc::object(), Doc{{"$set", {{"a", 1}}}}, false);
  // A write concern that cannot be met still writes (the replica set then adds the
  // writeConcernError: see the conformance table); only a malformed one refuses the command.
  bad_wc["writeConcern"] = Doc{{"w", "all"}};
  CHECK(s.run(bad_wc)["ok"] == 1);
  bad_wc["writeConcern"] = Doc{{"w", 4}};
  CHECK(s.run(bad_wc)["ok"] == 1);
  bad_wc["writeConcern"] = Doc{{"w", -1}};
  CHECK(s.run(bad_wc)["code"] == 9);
}

TEST_CASE("index keys: two values share a key exactly when BSON comparison finds them equal",
          "[sim][mongo]") {
  // Unique indexes file documents under canonical_key: a key shared by unequal values would refuse
  // an insert mongod takes, one missed by equal values would take a duplicate.
  const std::vector<Doc> values = {
      Doc(),  // null
      Doc(1),
      Doc(1.0),
      Doc(1.5),
      Doc(-2),
      Doc(uint64_t{7}),
      Doc(7.0),
      Doc("a"),
      Doc("b"),
      Doc("a\"b"),
      Doc(true),
      Doc(false),
      mongo_date(1000),
      mongo_date(1001),
      Doc::array({1, "a"}),
      Doc::array({1.0, "a"}),
      Doc::array({"a", 1}),
      Doc::array(),
      Doc{{"k", 1}, {"v", "x"}},
      Doc{{"k", 1.0}, {"v", "x"}},
      Doc{{"v", "x"}, {"k", 1}},
      Doc::object(),
      Doc{{"$oid", "0123456789abcdef01234567"}},
      Doc{{"$oid", "0123456789abcdef01234568"}},
      Doc{{"_id", {{"$oid", "0123456789abcdef01234567"}}}, {"at", mongo_date(7)}},
      mongo_date(7),
      Doc(7),
      Doc(uint64_t{1} << 63),
      Doc::array({true, mongo_date(7)}),
  };
  for (const Doc& a : values) {
    for (const Doc& b : values) {
      INFO(a.dump() << " vs " << b.dump());
      CHECK((canonical_key(&a) == canonical_key(&b)) == (compare_values(&a, &b) == 0));
    }
  }
  CHECK(canonical_key(nullptr) == canonical_key(&values[0]));  // missing indexes as null
  // The spelling: the type's rank, then the value as the shell renders it.
  const Doc id{{"_id", {{"$oid", "0123456789abcdef01234567"}}},
               {"at", mongo_date(7)},
               {"n", Doc::array({1, true, "a\"b"})}};
  CHECK(canonical_key(&id) ==
        "20:\"_id\"=35:ObjectId('0123456789abcdef01234567'),\"at\"=45:new Date(7),"
        "\"n\"=25:10:1,40:true,15:\"a\\\"b\",,");
}

TEST_CASE("collection: a replaced document's unique keys move with it, and only when they change",
          "[sim][mongo][commands]") {
  Collection c;
  REQUIRE_FALSE(c.add_index(IndexSpec{.name = "key_1", .key = Doc{{"key", 1}}, .unique = true}));
  const int64_t a = c.insert(Doc{{"_id", 1}, {"key", "a"}});
  const int64_t b = c.insert(Doc{{"_id", 2}, {"key", "b"}});
  const auto taken = [&c](const char* key) {
    return c.duplicate(Doc{{"_id", 99}, {"key", key}}).has_value();
  };

  c.replace(a, Doc{{"_id", 1}, {"key", "c"}, {"v", 1}});  // the key moves: "a" is free
  CHECK_FALSE(taken("a"));
  CHECK(taken("c"));
  CHECK(c.duplicate(Doc{{"_id", 1}, {"key", "c"}}, a) == std::nullopt);  // its own key
  CHECK(c.find_id(Doc(1)) == a);

  c.replace(a, Doc{{"_id", 1}, {"key", "c"}, {"v", 2}});  // the key stays
  CHECK(taken("c"));
  CHECK(c.records().at(a)["v"] == 2);

  // Onto another document's key: refused as a broken precondition, and nothing changes.
  CHECK_THROWS_AS(c.replace(b, Doc{{"_id", 2}, {"key", "c"}}), std::logic_error);
  CHECK(taken("b"));
  CHECK(c.records().at(b)["key"] == "b");

  c.remove(a);
  CHECK_FALSE(taken("c"));
  CHECK(taken("b"));
}

TEST_CASE("values: a date and an ObjectId are one-field documents of the right type",
          "[sim][mongo][commands]") {
  CHECK(lockstep::is_mongo_date(Doc{{"$date", 5}}));
  CHECK(lockstep::mongo_date_ms(Doc{{"$date", kNowMs}}) == kNowMs);
  CHECK_FALSE(lockstep::is_mongo_date(Doc{{"$date", "5"}}));
  CHECK_FALSE(lockstep::is_mongo_date(Doc{{"$date", 5.5}}));
  CHECK_FALSE(lockstep::is_mongo_date(Doc{{"$date", 5}, {"x", 1}}));
  CHECK_FALSE(lockstep::is_mongo_date(Doc{{"x", 5}}));
  CHECK_FALSE(lockstep::is_mongo_date(Doc::object()));
  CHECK_FALSE(lockstep::is_mongo_date(Doc(5)));
  CHECK_FALSE(lockstep::is_mongo_date(Doc::array({5})));
  CHECK_THROWS_AS(lockstep::mongo_date_ms(Doc{{"$date", "5"}}), std::logic_error);

  CHECK(is_object_id(Doc{{"$oid", "0123456789abcdef01234567"}}));
  CHECK_FALSE(is_object_id(Doc{{"$oid", 1}}));
  CHECK_FALSE(is_object_id(Doc{{"$oid", "a"}, {"x", 1}}));
  CHECK_FALSE(is_object_id(Doc{{"x", "a"}}));
  CHECK_FALSE(is_object_id(Doc::object()));
  CHECK_FALSE(is_object_id(Doc("a")));
}

TEST_CASE("values: _id goes first, the other fields keep their order, an _id present stays",
          "[sim][mongo][commands]") {
  Doc moved{{"a", 1}, {"b", {{"c", 2}}}, {"_id", 5}, {"d", 3}};
  put_id_first(moved, Doc(7));
  CHECK(moved.dump() == R"({"_id":5,"a":1,"b":{"c":2},"d":3})");
  Doc added{{"a", 1}, {"b", 2}};
  put_id_first(added, Doc{{"$oid", "0123456789abcdef01234567"}});
  CHECK(added.dump() == R"({"_id":{"$oid":"0123456789abcdef01234567"},"a":1,"b":2})");
  Doc first{{"_id", 5}, {"a", 1}};
  put_id_first(first, Doc(7));
  CHECK(first.dump() == R"({"_id":5,"a":1})");
  Doc empty;
  put_id_first(empty, Doc(7));
  CHECK(empty.dump() == R"({"_id":7})");
}
