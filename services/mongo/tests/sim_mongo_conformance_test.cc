// A conformance table for the simulated mongod: every command shape the Mongo adapter sends
// (built by services/mongo/adapter/mongo_commands.h itself, so the table cannot drift from the adapter),
// and the refusals and edge cases around them, each row citing where mongod's behaviour is
// documented (a MongoDB docs page, a file of mongodb/mongo, or one of its jstests).
//
// No mongod can be installed where this runs, so the simulator is the Mongo adapter's only
// server; a row is what keeps it honest. A row is one command document and the reply it must get:
// a pattern (see match_pattern) with the fields that matter, nothing about fields mongod adds on
// top ($clusterTime, opTime, electionId). `given` commands set the data up first, `after` reads
// what the command left. Dates are far in the past (1970) or the future (2100), so the same rows
// hold at any $$NOW, the simulator's or a real server's.
//
// Targets: the simulated replica set (3 members, through MongoReplicaSet::handle_command, the
// simulated connection's entry point, so write concern is answered as a client sees it), and,
// in the executable built with LOCKSTEP_CONFORMANCE_REAL, a real mongod (a one-member replica set
// the test starts, or LOCKSTEP_MONGO_URI): there the rows that need faults or minutes of the TTL
// monitor are skipped, each saying why, and without a mongod the executable exits 77 (skipped).
//
// A row with `divergence` documents what the simulator is known to do otherwise: on the simulator
// it must NOT match (so a fix turns it into a failure that asks for the marker to go), on a real
// mongod it must match like any other row.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "services/mongo/adapter/mongo_commands.h"
#include "services/mongo/client/mongo_connection.h"

#ifdef LOCKSTEP_CONFORMANCE_REAL
#include <memory>

#include "services/mongo/adapter/mongoc_connection.h"
#include "services/mongo/real/mongod_server.h"
#include "tests/real_support.h"
#else
#include "services/mongo/sim/replica_set.h"
#include "sim/world.h"
#endif

namespace {

using lockstep::mongo_date;
using lockstep::MongoNow;
using Doc = lockstep::MongoDocument;
namespace cmd = lockstep::mongo_commands;

// --- patterns ---

// A pattern is a document whose fields the reply must have, recursively; an array must have the
// same length and match element by element; a scalar must be equal (numbers across int and
// double). Four operator objects match what a literal cannot:
//   {"$absent": true}     the field must not be there
//   {"$type": "objectId"|"date"|"string"|"number"}
//   {"$contains": "text"} a string holding `text`
//   {"$size": n}          an array of n elements
Doc absent() { return Doc{{"$absent", true}}; }
Doc of_type(const char* type) { return Doc{{"$type", type}}; }
Doc contains(const char* text) { return Doc{{"$contains", text}}; }
Doc size(int n) { return Doc{{"$size", n}}; }

bool is_operator(const Doc& pattern) {
  if (!pattern.is_object() || pattern.size() != 1) return false;
  const std::string& key = pattern.begin().key();
  return key == "$absent" || key == "$type" || key == "$contains" || key == "$size";
}

// "" when `actual` matches; else where and how it does not.
std::string match_pattern(const Doc& pattern, const Doc* actual, const std::string& path) {
  const std::string at = path.empty() ? "reply" : path;
  if (is_operator(pattern)) {
    const std::string& op = pattern.begin().key();
    const Doc& arg = pattern.begin().value();
    if (op == "$absent") return actual == nullptr ? "" : at + " is present: " + actual->dump();
    if (actual == nullptr) return at + " is missing";
    if (op == "$type") {
      const std::string type = arg.get<std::string>();
      const bool ok = (type == "objectId" && actual->is_object() && actual->contains("$oid")) ||
                      (type == "date" && actual->is_object() && actual->contains("$date")) ||
                      (type == "string" && actual->is_string()) ||
                      (type == "number" && actual->is_number());
      return ok ? "" : at + " is not a " + type + ": " + actual->dump();
    }
    if (op == "$contains") {
      return actual->is_string() &&
                     actual->get<std::string>().find(arg.get<std::string>()) != std::string::npos
                 ? ""
                 : at + " does not contain " + arg.dump() + ": " + actual->dump();
    }
    return actual->is_array() && actual->size() == arg.get<size_t>()
               ? ""
               : at + " is not an array of " + arg.dump() + ": " + actual->dump();
  }
  if (actual == nullptr) return at + " is missing (want " + pattern.dump() + ")";
  if (pattern.is_object()) {
    if (!actual->is_object()) return at + " is not a document: " + actual->dump();
    for (auto it = pattern.begin(); it != pattern.end(); ++it) {
      const auto found = actual->find(it.key());
      const std::string sub = path.empty() ? it.key() : path + "." + it.key();
      std::string why = match_pattern(it.value(), found == actual->end() ? nullptr : &*found, sub);
      if (!why.empty()) return why;
    }
    return "";
  }
  if (pattern.is_array()) {
    if (!actual->is_array() || actual->size() != pattern.size())
      return at + " is not an array of " + std::to_string(pattern.size()) + ": " + actual->dump();
    for (size_t i = 0; i < pattern.size(); ++i) {
      std::string why =
          match_pattern(pattern[i], &(*actual)[i], path + "[" + std::to_string(i) + "]");
      if (!why.empty()) return why;
    }
    return "";
  }
  return pattern == *actual ? "" : at + " is " + actual->dump() + ", want " + pattern.dump();
}

// --- the rows ---

enum class Fault {
  none,
  secondaries_down,  // both secondaries crash after `given`, before `command`
};

struct Row {
  std::string name;
  std::string source;  // where mongod's behaviour is documented, or "unverified: ..."
  std::vector<Doc> given;
  Doc command;
  Doc expect;
  Doc after = Doc();         // run after `command` when not null (reads what it left)
  Doc after_expect = Doc();  //
  int64_t after_wait_ms = 0;
  Fault fault = Fault::none;
  std::string sim_only = "";    // why a one-member real mongod cannot run the row
  std::string divergence = "";  // what the simulator is known to answer instead
};

const Doc kPast = mongo_date(1000);                 // 1970: expired at any $$NOW
const Doc kFuture = mongo_date(4'102'444'800'000);  // 2100: live at any $$NOW
const Doc kMajority = cmd::majority_write_concern(5000);
const std::string kLocks = "locks";
const std::string kFencing = "lock_fencing";

Doc update(const Doc& q, const Doc& u, bool upsert, const Doc& wc = kMajority,
           const std::string& coll = kLocks) {
  return Doc{{"update", coll},
             {"updates", Doc::array({Doc{{"q", q}, {"u", u}, {"upsert", upsert}}})},
             {"ordered", true},
             {"writeConcern", wc}};
}

// A lock document as a given: {key, value, expire_at}.
Doc lock_doc(const std::string& key, const std::string& value, const Doc& expire_at) {
  return update(Doc{{"key", key}}, Doc{{"$set", {{"value", value}, {"expire_at", expire_at}}}},
                true);
}

Doc find(const Doc& filter, const std::string& coll = kLocks) {
  return Doc{{"find", coll}, {"filter", filter}};
}

Doc batch(const Doc& docs) { return Doc{{"cursor", {{"firstBatch", docs}}}, {"ok", 1}}; }

Doc index(const Doc& key, const char* name, const Doc& expire_after_seconds) {
  Doc spec{{"key", key}, {"name", name}};
  if (!expire_after_seconds.is_null()) spec["expireAfterSeconds"] = expire_after_seconds;
  return Doc{{"createIndexes", kLocks}, {"indexes", Doc::array({spec})}};
}

Doc live(const std::string& key, const std::string& value) {
  return find(cmd::owner_filter(key, value, MongoNow::server()));
}

std::vector<Row> rows() {
  const Doc indexes = cmd::create_indexes(kLocks, kMajority);
  const MongoNow server = MongoNow::server();
  const std::string update_docs = "https://www.mongodb.com/docs/manual/reference/command/update/";
  const std::string fam_docs =
      "https://www.mongodb.com/docs/manual/reference/command/findAndModify/";
  const std::string ttl_source =
      "mongodb/mongo src/mongo/db/catalog/index_key_validate.cpp (validateIndexSpecTTL, "
      "validateExpireAfterSeconds: 67 CannotCreateIndex)";
  const std::string dup_retry =
      "mongodb/mongo jstests/noPassthrough/upsert_duplicate_key_retry.js; "
      "src/mongo/db/ops/write_ops_exec.cpp (shouldRetryDuplicateKeyException: an upsert whose "
      "query is equalities on exactly the unique index's fields is retried as an update, "
      "SERVER-37124 for update, SERVER-47212 for findAndModify)";
  const std::string wc_jstest = "mongodb/mongo jstests/replsets/batch_write_command_wc.js";
  std::vector<Row> out;

  // -- what the adapter sends --
  out.push_back({.name = "createIndexes: unique key and TTL expire_at on a new collection",
                 .source = "https://www.mongodb.com/docs/manual/reference/command/createIndexes/",
                 .command = indexes,
                 .expect = {{"ok", 1},
                            {"numIndexesBefore", 1},
                            {"numIndexesAfter", 3},
                            {"createdCollectionAutomatically", true}}});
  out.push_back({.name = "createIndexes again: nothing to build, ok",
                 .source = "https://www.mongodb.com/docs/manual/reference/command/createIndexes/",
                 .given = {indexes},
                 .command = indexes,
                 .expect = {{"ok", 1}, {"numIndexesBefore", 3}, {"numIndexesAfter", 3}}});
  out.push_back(
      {.name = "acquire (server time) on a free key: the second statement upserts",
       .source = update_docs + " (output: n, nModified, upserted[{index, _id}])",
       .given = {indexes},
       .command = cmd::acquire(kLocks, "k", "a", 10'000, server, kMajority),
       .expect = {{"ok", 1},
                  {"n", 1},
                  {"nModified", 0},
                  {"upserted", Doc::array({Doc{{"index", 1}, {"_id", of_type("objectId")}}})},
                  {"writeErrors", absent()},
                  {"writeConcernError", absent()}},
       .after = live("k", "a"),
       .after_expect = batch(Doc::array({Doc{{"key", "k"}, {"value", "a"}}}))});
  out.push_back(
      {.name = "acquire on a key another owner holds live: 11000 on statement 1, not retried",
       .source = dup_retry + "; the query {key, value} has two equalities, the index one field",
       .given = {indexes, lock_doc("k", "a", kFuture)},
       .command = cmd::acquire(kLocks, "k", "b", 10'000, server, kMajority),
       .expect = {{"ok", 1},
                  {"n", 0},
                  {"nModified", 0},
                  {"writeErrors", Doc::array({Doc{{"index", 1},
                                                  {"code", 11000},
                                                  {"keyPattern", {{"key", 1}}},
                                                  {"keyValue", {{"key", "k"}}},
                                                  {"errmsg", contains("E11000 duplicate key")}}})}},
       .after = find(Doc{{"key", "k"}}),
       .after_expect = batch(Doc::array({Doc{{"value", "a"}}}))});
  // The adapter reads n of a failed batch as "something applied before the error" and cleans up
  // (mongo_adapter.cc, partly_applied): the statements before the failing one stay applied.
  out.push_back(
      {.name = "an ordered batch that fails at statement 1: statement 0 stays applied, n counts it",
       .source = update_docs + " (ordered: true stops at the first error; writeErrors[].index; "
                               "\"n\": the documents selected before it)",
       .given = {indexes, lock_doc("k", "a", kFuture), lock_doc("j", "x", kFuture)},
       .command = Doc{{"update", kLocks},
                      {"updates", Doc::array({Doc{{"q", Doc{{"key", "k"}}},
                                                  {"u", Doc{{"$set", Doc{{"value", "b"}}}}},
                                                  {"upsert", false}},
                                              Doc{{"q", Doc{{"key", "j"}, {"value", "y"}}},
                                                  {"u", Doc{{"$set", Doc{{"expire_at", kFuture}}}}},
                                                  {"upsert", true}},
                                              Doc{{"q", Doc{{"key", "k"}}},
                                                  {"u", Doc{{"$set", Doc{{"value", "c"}}}}},
                                                  {"upsert", false}}})},
                      {"ordered", true},
                      {"writeConcern", kMajority}},
       .expect = {{"ok", 1},
                  {"n", 1},
                  {"nModified", 1},
                  {"writeErrors", Doc::array({Doc{{"index", 1}, {"code", 11000}}})}},
       .after = find(Doc{{"key", "k"}}),
       .after_expect = batch(Doc::array({Doc{{"value", "b"}}}))});
  out.push_back(
      {.name = "acquire on an expired key: statement 0 takes it over, statement 1 matches it",
       .source = update_docs + "; $expr in a query without upsert: "
                               "https://www.mongodb.com/docs/manual/reference/operator/query/expr/",
       .given = {indexes, lock_doc("k", "a", kPast)},
       .command = cmd::acquire(kLocks, "k", "b", 10'000, server, kMajority),
       .expect = {{"ok", 1}, {"n", 2}, {"nModified", 1}, {"upserted", absent()}},
       .after = live("k", "b"),
       .after_expect = batch(Doc::array({Doc{{"key", "k"}, {"value", "b"}}}))});
  out.push_back({.name = "acquire with the value that already holds the key: n 1, nothing modified",
                 .source = update_docs + " (nModified counts only documents that changed)",
                 .given = {indexes, lock_doc("k", "a", kFuture)},
                 .command = cmd::acquire(kLocks, "k", "a", 10'000, server, kMajority),
                 .expect = {{"ok", 1}, {"n", 1}, {"nModified", 0}, {"upserted", absent()}}});
  out.push_back(
      {.name = "acquire (client time): $set and $setOnInsert with date literals",
       .source = "https://www.mongodb.com/docs/manual/reference/operator/update/setOnInsert/",
       .given = {indexes},
       .command =
           cmd::acquire(kLocks, "k", "a", 10'000, MongoNow::client(4'000'000'000'000), kMajority),
       .expect = {{"ok", 1}, {"n", 1}, {"upserted", size(1)}},
       .after = find(Doc{{"key", "k"}}),
       .after_expect = batch(Doc::array(
           {Doc{{"key", "k"}, {"value", "a"}, {"expire_at", mongo_date(4'000'000'010'000)}}}))});
  out.push_back(
      {.name = "next_token on a new key: findAndModify upserts {_id, n: 1} ($inc of a missing "
               "field sets it)",
       .source = fam_docs + " (output: lastErrorObject, value); $inc: "
                            "https://www.mongodb.com/docs/manual/reference/operator/update/inc/",
       .command = cmd::next_token(kFencing, "k", kMajority),
       .expect = {{"ok", 1},
                  {"lastErrorObject", {{"n", 1}, {"updatedExisting", false}, {"upserted", "k"}}},
                  {"value", {{"_id", "k"}, {"n", 1}}}}});
  out.push_back(
      {.name = "next_token on an existing counter: the new value",
       .source = fam_docs,
       .given = {update(Doc{{"_id", "k"}}, Doc{{"$set", {{"n", 41}}}}, true, kMajority, kFencing)},
       .command = cmd::next_token(kFencing, "k", kMajority),
       .expect = {{"ok", 1},
                  {"lastErrorObject", {{"n", 1}, {"updatedExisting", true}}},
                  {"value", {{"_id", "k"}, {"n", 42}}}}});
  out.push_back(
      {.name = "next_token racing another client's upsert of the same _id: an update, never 11000",
       .source = dup_retry + "; the simulator runs each command atomically, so this row is the "
                             "state the retried findAndModify sees",
       .given = {cmd::next_token(kFencing, "k", kMajority)},
       .command = cmd::next_token(kFencing, "k", kMajority),
       .expect = {{"ok", 1},
                  {"lastErrorObject", {{"n", 1}, {"updatedExisting", true}}},
                  {"value", {{"_id", "k"}, {"n", 2}}}}});
  out.push_back({.name = "confirm_token on a live lock ($expr filter, no upsert)",
                 .source = "https://www.mongodb.com/docs/manual/reference/operator/query/expr/",
                 .given = {indexes, lock_doc("k", "a", kFuture)},
                 .command = cmd::confirm_token(kLocks, "k", "a", 7, server, kMajority),
                 .expect = {{"ok", 1}, {"n", 1}, {"nModified", 1}},
                 .after = find(Doc{{"key", "k"}}),
                 .after_expect = batch(Doc::array({Doc{{"token", 7}}}))});
  out.push_back({.name = "confirm_token on an expired lock: n 0",
                 .source = "https://www.mongodb.com/docs/manual/reference/operator/query/expr/",
                 .given = {indexes, lock_doc("k", "a", kPast)},
                 .command = cmd::confirm_token(kLocks, "k", "a", 7, server, kMajority),
                 .expect = {{"ok", 1}, {"n", 0}, {"nModified", 0}}});
  out.push_back({.name = "release of a live lock: delete n 1",
                 .source = "https://www.mongodb.com/docs/manual/reference/command/delete/",
                 .given = {indexes, lock_doc("k", "a", kFuture)},
                 .command = cmd::release(kLocks, "k", "a", server, kMajority),
                 .expect = {{"ok", 1}, {"n", 1}, {"writeErrors", absent()}},
                 .after = find(Doc{{"key", "k"}}),
                 .after_expect = batch(Doc::array())});
  out.push_back({.name = "release by another value: n 0, the lock stays",
                 .source = "https://www.mongodb.com/docs/manual/reference/command/delete/",
                 .given = {indexes, lock_doc("k", "a", kFuture)},
                 .command = cmd::release(kLocks, "k", "b", server, kMajority),
                 .expect = {{"ok", 1}, {"n", 0}},
                 .after = find(Doc{{"key", "k"}}),
                 .after_expect = batch(Doc::array({Doc{{"value", "a"}}}))});
  out.push_back(
      {.name = "extend of a live lock: pipeline $set expire_at = $$NOW + ttl",
       .source = "https://www.mongodb.com/docs/manual/tutorial/update-documents-with-aggregation-"
                 "pipeline/",
       .given = {indexes, lock_doc("k", "a", kFuture)},
       .command = cmd::extend(kLocks, "k", "a", 10'000, server, kMajority),
       .expect = {{"ok", 1}, {"n", 1}, {"nModified", 1}},
       .after = live("k", "a"),
       .after_expect = batch(Doc::array({Doc{{"expire_at", of_type("date")}}}))});
  out.push_back({.name = "extend of an expired lock: n 0",
                 .source = "https://www.mongodb.com/docs/manual/reference/operator/query/expr/",
                 .given = {indexes, lock_doc("k", "a", kPast)},
                 .command = cmd::extend(kLocks, "k", "a", 10'000, server, kMajority),
                 .expect = {{"ok", 1}, {"n", 0}, {"nModified", 0}}});
  // Client time (time_source=client, locco's `new Date()`): the same commands with date literals
  // where server time has $$NOW; a client at 4e12 ms (2096) sees kPast expired, kFuture live.
  const MongoNow client = MongoNow::client(4'000'000'000'000);
  const std::string date_query =
      "https://www.mongodb.com/docs/manual/reference/operator/query/gt/ (dates compare by time)";
  out.push_back(
      {.name = "acquire (client time) on an expired key: statement 0 takes it over by the client's "
               "date",
       .source = update_docs + "; " + date_query,
       .given = {indexes, lock_doc("k", "a", kPast)},
       .command = cmd::acquire(kLocks, "k", "b", 10'000, client, kMajority),
       .expect = {{"ok", 1}, {"n", 2}, {"nModified", 1}, {"upserted", absent()}},
       .after = find(Doc{{"key", "k"}}),
       .after_expect =
           batch(Doc::array({Doc{{"value", "b"}, {"expire_at", mongo_date(4'000'000'010'000)}}}))});
  out.push_back({.name = "confirm_token (client time) on a live lock: n 1",
                 .source = date_query,
                 .given = {indexes, lock_doc("k", "a", kFuture)},
                 .command = cmd::confirm_token(kLocks, "k", "a", 7, client, kMajority),
                 .expect = {{"ok", 1}, {"n", 1}, {"nModified", 1}},
                 .after = find(Doc{{"key", "k"}}),
                 .after_expect = batch(Doc::array({Doc{{"token", 7}}}))});
  out.push_back(
      {.name = "extend (client time): expire_at = the client's date + ttl",
       .source = update_docs + "; " + date_query,
       .given = {indexes, lock_doc("k", "a", kFuture)},
       .command = cmd::extend(kLocks, "k", "a", 5'000, client, kMajority),
       .expect = {{"ok", 1}, {"n", 1}, {"nModified", 1}},
       .after = find(Doc{{"key", "k"}}),
       .after_expect = batch(Doc::array({Doc{{"expire_at", mongo_date(4'000'000'005'000)}}}))});
  out.push_back(
      {.name = "release (client time) of a lock the client's date says expired: n 0",
       .source = "https://www.mongodb.com/docs/manual/reference/command/delete/; " + date_query,
       .given = {indexes, lock_doc("k", "a", kPast)},
       .command = cmd::release(kLocks, "k", "a", client, kMajority),
       .expect = {{"ok", 1}, {"n", 0}},
       .after = find(Doc{{"key", "k"}}),
       .after_expect = batch(Doc::array({Doc{{"value", "a"}}}))});
  out.push_back({.name = "is_valid: find, limit 1, single batch, readConcern majority",
                 .source = "https://www.mongodb.com/docs/manual/reference/command/find/; "
                           "https://www.mongodb.com/docs/manual/reference/read-concern-majority/",
                 .given = {indexes, lock_doc("k", "a", kFuture)},
                 .command = cmd::find_owned(kLocks, "k", "a", server, true),
                 .expect = {{"ok", 1},
                            {"cursor",
                             {{"firstBatch", Doc::array({Doc{{"key", "k"}}})},
                              {"id", 0},
                              {"ns", contains(".locks")}}}}});

  // -- refusals and edge cases around them --
  const Doc expired_expr{{"$lt", Doc::array({"$expire_at", "$$NOW"})}};
  out.push_back({.name = "update upsert whose query holds $expr: 224 as a write error",
                 .source = "mongodb/mongo src/mongo/db/ops/parsed_update.cpp (the message is "
                           "rewritten there); DOCS-14158",
                 .command = update(Doc{{"key", "k"}, {"$expr", expired_expr}},
                                   Doc{{"$set", {{"value", "a"}}}}, true),
                 .expect = {{"ok", 1},
                            {"n", 0},
                            {"writeErrors",
                             Doc::array({Doc{{"index", 0},
                                             {"code", 224},
                                             {"errmsg",
                                              "$expr is not allowed in the query predicate for an "
                                              "upsert"}}})}},
                 .after = find(Doc::object()),
                 .after_expect = batch(Doc::array())});
  out.push_back({.name = "findAndModify upsert whose query holds $expr: 224 as a command error",
                 .source = "mongodb/mongo src/mongo/db/ops/parsed_update.cpp",
                 .command = Doc{{"findAndModify", kLocks},
                                {"query", {{"key", "k"}, {"$expr", expired_expr}}},
                                {"update", {{"$set", {{"value", "a"}}}}},
                                {"new", true},
                                {"upsert", true}},
                 .expect = {{"ok", 0}, {"code", 224}, {"codeName", "QueryFeatureNotAllowed"}}});
  out.push_back(
      {.name = "$$NOW is one value for every statement of an update command",
       .source = "mongodb/mongo src/mongo/db/ops/write_ops_exec.cpp (performUpdates: runtime "
                 "constants are applied to each update in the batch); "
                 "https://www.mongodb.com/docs/manual/reference/aggregation-variables/",
       .command =
           Doc{{"update", kLocks},
               {"updates",
                Doc::array(
                    {Doc{{"q", {{"key", "now"}}},
                         {"u", Doc::array({Doc{{"$set", {{"t", "$$NOW"}}}}})},
                         {"upsert", true}},
                     Doc{{"q", {{"key", "now"}, {"$expr", {{"$eq", Doc::array({"$t", "$$NOW"})}}}}},
                         {"u", {{"$set", {{"same", true}}}}},
                         {"upsert", false}}})},
               {"writeConcern", kMajority}},
       .expect = {{"ok", 1}, {"n", 2}, {"nModified", 1}, {"upserted", size(1)}}});
  out.push_back(
      {.name = "an update pipeline refuses $match: 72 InvalidOptions",
       .source = "mongodb/mongo src/mongo/db/update/pipeline_executor.cpp "
                 "(isAllowedWithinUpdatePipeline)",
       .given = {lock_doc("k", "a", kFuture)},
       .command = update(Doc{{"key", "k"}}, Doc::array({Doc{{"$match", {{"key", "k"}}}}}), false),
       .expect = {{"ok", 1},
                  {"n", 0},
                  {"writeErrors",
                   Doc::array({Doc{{"index", 0},
                                   {"code", 72},
                                   {"errmsg", contains("$match is not allowed to be used within an "
                                                       "update")}}})}}});
  out.push_back(
      {.name = "an update pipeline accepts $replaceWith (and keeps _id)",
       .source = "https://www.mongodb.com/docs/manual/tutorial/update-documents-with-aggregation-"
                 "pipeline/ ($addFields, $set, $project, $unset, $replaceRoot, $replaceWith)",
       .given = {lock_doc("k", "a", kFuture)},
       .command =
           update(Doc{{"key", "k"}},
                  Doc::array({Doc{{"$replaceWith", {{"key", "k"}, {"value", "r"}}}}}), false),
       .expect = {{"ok", 1}, {"n", 1}, {"nModified", 1}, {"writeErrors", absent()}},
       .after = find(Doc{{"key", "k"}}),
       .after_expect = batch(Doc::array({Doc{{"_id", of_type("objectId")}, {"value", "r"}}}))});
  out.push_back(
      {.name = "an update pipeline accepts $project",
       .source = "https://www.mongodb.com/docs/manual/tutorial/update-documents-with-aggregation-"
                 "pipeline/",
       .given = {lock_doc("k", "a", kFuture)},
       .command = update(Doc{{"key", "k"}},
                         Doc::array({Doc{{"$project", {{"key", 1}, {"value", 1}}}}}), false),
       .expect = {{"ok", 1}, {"n", 1}, {"nModified", 1}, {"writeErrors", absent()}},
       .divergence = "the simulator refuses $project in an update pipeline (72); the adapter "
                     "never sends one"});
  out.push_back(
      {.name = "$setOnInsert applies only when the upsert inserts",
       .source = "https://www.mongodb.com/docs/manual/reference/operator/update/setOnInsert/",
       .given = {update(Doc{{"key", "c"}}, Doc{{"$set", {{"created", 1}}}}, true)},
       .command = update(Doc{{"key", "c"}},
                         Doc{{"$setOnInsert", {{"created", 2}}}, {"$inc", {{"n", 5}}}}, true),
       .expect = {{"ok", 1}, {"n", 1}, {"nModified", 1}, {"upserted", absent()}},
       .after = find(Doc{{"key", "c"}}),
       .after_expect = batch(Doc::array({Doc{{"created", 1}, {"n", 5}}}))});
  out.push_back({.name = "$inc of a field that is not a number: 14 TypeMismatch",
                 .source = "mongodb/mongo src/mongo/db/update/arithmetic_node.cpp; "
                           "https://www.mongodb.com/docs/manual/reference/operator/update/inc/",
                 .given = {update(Doc{{"key", "s"}}, Doc{{"$set", {{"n", "x"}}}}, true)},
                 .command = update(Doc{{"key", "s"}}, Doc{{"$inc", {{"n", 1}}}}, false),
                 .expect = {{"ok", 1},
                            {"writeErrors",
                             Doc::array({Doc{{"index", 0},
                                             {"code", 14},
                                             {"errmsg", contains("Cannot apply $inc to a value of "
                                                                 "non-numeric type")}}})}}});
  out.push_back(
      {.name = "$inc by something that is not a number: 14 TypeMismatch",
       .source = "mongodb/mongo src/mongo/db/update/arithmetic_node.cpp",
       .command = update(Doc{{"key", "s"}}, Doc{{"$inc", {{"n", "1"}}}}, true),
       .expect = {{"ok", 1},
                  {"writeErrors",
                   Doc::array({Doc{
                       {"index", 0},
                       {"code", 14},
                       {"errmsg", contains("Cannot increment with non-numeric argument")}}})}}});
  out.push_back(
      {.name = "two upserts of {x: 3} with a unique index on x: the second one updates",
       .source = dup_retry,
       .given = {Doc{{"createIndexes", kLocks},
                     {"indexes",
                      Doc::array({Doc{{"key", {{"x", 1}}}, {"name", "x_1"}, {"unique", true}}})}},
                 update(Doc{{"x", 3}}, Doc{{"$inc", {{"y", 1}}}}, true)},
       .command = update(Doc{{"x", 3}}, Doc{{"$inc", {{"y", 1}}}}, true),
       .expect = {{"ok", 1}, {"n", 1}, {"nModified", 1}, {"upserted", absent()}},
       .after = find(Doc::object()),
       .after_expect = batch(Doc::array({Doc{{"x", 3}, {"y", 2}}}))});
  const Doc unique_x{
      {"createIndexes", kLocks},
      {"indexes", Doc::array({Doc{{"key", {{"x", 1}}}, {"name", "x_1"}, {"unique", true}}})}};
  out.push_back(
      {.name = "a replacement upsert whose key differs from its query: 11000 (missing x is null)",
       .source = dup_retry,
       .given = {unique_x, update(Doc{{"_id", 1}}, Doc{{"$set", {{"a", 12345}}}}, true)},
       .command = update(Doc{{"x", 3}}, Doc::object(), true),
       .expect = {{"ok", 1},
                  {"n", 0},
                  {"writeErrors", Doc::array({Doc{{"index", 0}, {"code", 11000}}})}}});
  out.push_back({.name = "an update that moves a unique key onto another document's: 11000, and "
                         "the statement that matched but failed counts in neither n nor nModified",
                 .source = dup_retry +
                           "; mongodb/mongo src/mongo/db/commands/write_commands.cpp (the reply "
                           "sums n and nModified over the statements that succeeded)",
                 .given = {unique_x, update(Doc{{"x", 3}}, Doc{{"$set", {{"v", 1}}}}, true),
                           update(Doc{{"x", 4}}, Doc{{"$set", {{"v", 1}}}}, true)},
                 .command = update(Doc{{"x", 3}}, Doc{{"$inc", {{"x", 1}}}}, true),
                 .expect = {{"ok", 1},
                            {"n", 0},
                            {"nModified", 0},
                            {"writeErrors", Doc::array({Doc{{"index", 0},
                                                            {"code", 11000},
                                                            {"keyPattern", {{"x", 1}}},
                                                            {"keyValue", {{"x", 4}}}}})}}});
  out.push_back(
      {.name = "findAndModify upsert that collides on a unique index: 11000 as a command error",
       .source = "mongodb/mongo src/mongo/db/commands/find_and_modify.cpp (a DuplicateKey that "
                 "shouldRetryDuplicateKeyException declines is rethrown); " +
                 fam_docs,
       .given = {indexes, lock_doc("k", "a", kFuture)},
       .command = Doc{{"findAndModify", kLocks},
                      {"query", {{"key", "k"}, {"value", "b"}}},
                      {"update", {{"$set", {{"expire_at", kFuture}}}}},
                      {"new", true},
                      {"upsert", true}},
       .expect = {{"ok", 0},
                  {"code", 11000},
                  {"codeName", "DuplicateKey"},
                  {"keyPattern", {{"key", 1}}},
                  {"keyValue", {{"key", "k"}}}}});

  // -- write concern --
  out.push_back(
      {.name = "w: majority with both secondaries down: writeConcernError 64 after wtimeout, the "
               "write stays applied",
       .source = "https://www.mongodb.com/docs/manual/reference/write-concern/ (wtimeout: "
                 "writeConcernError with errInfo.wtimeout, the write is not undone); mongodb/mongo "
                 "src/mongo/db/repl/replication_coordinator_impl.cpp (WriteConcernFailed, "
                 "\"waiting for replication timed out\")",
       .command = update(Doc{{"key", "w"}}, Doc{{"$set", {{"v", 1}}}}, true,
                         cmd::majority_write_concern(1000)),
       .expect = {{"ok", 1},
                  {"n", 1},
                  {"upserted", size(1)},
                  {"writeConcernError",
                   {{"code", 64},
                    {"codeName", "WriteConcernFailed"},
                    {"errmsg", "waiting for replication timed out"},
                    {"errInfo", {{"wtimeout", true}}}}}},
       .after = find(Doc{{"key", "w"}}),
       .after_expect = batch(Doc::array({Doc{{"v", 1}}})),
       .fault = Fault::secondaries_down,
       .sim_only = "needs a replica set whose secondaries can be stopped"});
  out.push_back(
      {.name = "w: n above the data-bearing members: applied, writeConcernError 100",
       .source = wc_jstest + " (w: 3 on two nodes: ok, n 1, writeConcernError.code 100)",
       .command = update(Doc{{"key", "w"}}, Doc{{"$set", {{"v", 1}}}}, true, Doc{{"w", 10}}),
       .expect = {{"ok", 1},
                  {"n", 1},
                  {"writeConcernError",
                   {{"code", 100},
                    {"codeName", "UnsatisfiableWriteConcern"},
                    {"errmsg", contains("Not enough data-bearing nodes")}}}},
       .after = find(Doc{{"key", "w"}}),
       .after_expect = batch(Doc::array({Doc{{"v", 1}}}))});
  out.push_back(
      {.name = "w: an unknown mode: applied, writeConcernError 79",
       .source = wc_jstest + " (w: 'invalid': ok, n 1, a writeConcernError, the write applied)",
       .command = update(Doc{{"key", "w"}}, Doc{{"$set", {{"v", 1}}}}, true, Doc{{"w", "invalid"}}),
       .expect = {{"ok", 1},
                  {"n", 1},
                  {"writeConcernError", {{"code", 79}, {"codeName", "UnknownReplWriteConcern"}}}},
       .after = find(Doc{{"key", "w"}}),
       .after_expect = batch(Doc::array({Doc{{"v", 1}}}))});

  // -- TTL index options --
  const Doc ttl_key{{"expire_at", 1}};
  out.push_back({.name = "TTL expireAfterSeconds must be a number",
                 .source = ttl_source,
                 .command = index(ttl_key, "expire_at_1", "0"),
                 .expect = {{"ok", 0}, {"code", 67}, {"codeName", "CannotCreateIndex"}}});
  out.push_back({.name = "TTL expireAfterSeconds must not be negative",
                 .source = ttl_source,
                 .command = index(ttl_key, "expire_at_1", int64_t{-1}),
                 .expect = {{"ok", 0}, {"code", 67}}});
  out.push_back({.name = "TTL expireAfterSeconds must fit a 32-bit integer",
                 .source = ttl_source,
                 .command = index(ttl_key, "expire_at_1", int64_t{2'147'483'648}),
                 .expect = {{"ok", 0}, {"code", 67}, {"errmsg", contains("32-bit integer")}}});
  out.push_back(
      {.name = "TTL indexes are single-field",
       .source = ttl_source,
       .command = index(Doc{{"expire_at", 1}, {"key", 1}}, "expire_at_1_key_1", int64_t{0}),
       .expect = {{"ok", 0}, {"code", 67}}});
  out.push_back({.name = "the TTL monitor deletes expired dates only, never a number in the field",
                 .source =
                     "https://www.mongodb.com/docs/manual/core/index-ttl/ (a field that is not a "
                     "date or an array of dates never expires; the monitor runs every 60 s)",
                 .given = {indexes, lock_doc("number", "a", 5), lock_doc("date", "a", kPast)},
                 .command = find(Doc::object()),
                 .expect = batch(size(2)),
                 .after = find(Doc::object()),
                 .after_expect = batch(Doc::array({Doc{{"key", "number"}}})),
                 .after_wait_ms = 61'000,
                 .sim_only = "waits for the TTL monitor's 60 s pass"});
  return out;
}

bool applied_cleanly(const Doc& reply) {
  return reply.is_object() && reply.value("ok", 0.0) == 1 && !reply.contains("writeErrors") &&
         !reply.contains("writeConcernError");
}

// The replies to a row's commands: given..., command, then after (when there is one).
using Replies = std::vector<Doc>;

std::vector<Doc> commands_of(const Row& row) {
  std::vector<Doc> out = row.given;
  out.push_back(row.command);
  if (!row.after.is_null()) out.push_back(row.after);
  return out;
}

// Checks a row's replies; `expect_match` false: the row is a known divergence on this target.
void check_row(const Row& row, const Replies& replies, bool expect_match) {
  INFO("row: " << row.name << "\nsource: " << row.source);
  REQUIRE(replies.size() == commands_of(row).size());
  for (size_t i = 0; i < row.given.size(); ++i) {
    INFO("given " << row.given[i].dump() << "\nreply " << replies[i].dump());
    REQUIRE(applied_cleanly(replies[i]));
  }
  const Doc& reply = replies[row.given.size()];
  INFO("command " << row.command.dump() << "\nreply " << reply.dump());
  std::string why = match_pattern(row.expect, &reply, "");
  if (why.empty() && !row.after.is_null()) {
    const Doc& after = replies.back();
    const std::string after_why = match_pattern(row.after_expect, &after, "");
    if (!after_why.empty()) why = "after " + row.after.dump() + ": " + after_why;
  }
  if (expect_match) {
    CHECK(why == "");
  } else {
    INFO("known divergence: " << row.divergence);
    CHECK_FALSE(why.empty());  // a fixed simulator: drop the row's divergence marker
  }
}

}  // namespace

TEST_CASE("conformance: every row cites a source and says what it checks",
          "[sim][mongo][conformance]") {
  for (const Row& row : rows()) {
    INFO(row.name);
    CHECK_FALSE(row.name.empty());
    CHECK_FALSE(row.source.empty());
    CHECK_FALSE(row.expect.is_null());
    CHECK(row.after.is_null() == row.after_expect.is_null());
  }
}

#ifndef LOCKSTEP_CONFORMANCE_REAL

namespace {

using namespace lockstep::sim;

// Runs a row's commands one after another on the primary of a fresh 3-member set, each 1 ms after
// the reply to the one before (`after` waits after_wait_ms more); a fault strikes right before
// `command`.
Replies run_on_sim(const Row& row) {
  World w({.seed = 1, .network = {.latency_us_min = 500, .latency_us_max = 500}});
  MongoReplicaSet rs(w, {});
  const std::vector<Doc> commands = commands_of(row);
  Replies replies(commands.size(), Doc(nullptr));
  std::function<void(size_t)> issue = [&](size_t i) {
    if (i == commands.size()) return;
    if (i == row.given.size() && row.fault == Fault::secondaries_down) {
      rs.crash(1);
      rs.crash(2);
    }
    const int64_t wait_ms = 1 + (i == row.given.size() + 1 ? row.after_wait_ms : 0);
    w.scheduler().at(w.now_us() + wait_ms * kUsPerMs, [&, i] {
      const int primary = rs.primary();
      if (primary < 0) {
        replies[i] = Doc{{"ok", 0}, {"errmsg", "the simulated set has no primary"}};
        return;
      }
      rs.handle_command(primary, 1, "lockstep", commands[i], [&, i](Doc reply) {
        replies[i] = std::move(reply);
        issue(i + 1);
      });
    });
  };
  issue(0);
  w.run();
  return replies;
}

}  // namespace

TEST_CASE("conformance: the simulated mongod answers every row as mongod documents it",
          "[sim][mongo][conformance]") {
  for (const Row& row : rows()) {
    const bool diverges = !row.divergence.empty();
    if (diverges) WARN("known divergence: " << row.name << ": " << row.divergence);
    check_row(row, run_on_sim(row), !diverges);
  }
}

#else  // LOCKSTEP_CONFORMANCE_REAL

TEST_CASE("conformance: a real mongod answers every row as documented", "[mongo][conformance]") {
  lockstep::testing::require_mongo();
  std::unique_ptr<lockstep::real::MongodProcess> server;
  std::string uri;
  if (const char* from_env = std::getenv("LOCKSTEP_MONGO_URI");
      from_env != nullptr && *from_env != '\0') {
    uri = from_env;
  } else {
    server = std::make_unique<lockstep::real::MongodProcess>();
    uri = server->uri();
  }
  lockstep::MongocConnection connection({.uri = uri});
  int counter = 0;
  for (const Row& row : rows()) {
    if (!row.sim_only.empty()) {
      WARN("skipped on a real mongod: " << row.name << ": " << row.sim_only);
      continue;
    }
    // A database of the row's own, dropped afterwards.
    const std::string database =
        "lockstep_conformance_" + std::to_string(getpid()) + "_" + std::to_string(++counter);
    Replies replies;
    for (const Doc& command : commands_of(row)) {
      const lockstep::MongoResult result = connection.run_command(database, command);
      replies.push_back(result.ok() ? result.reply : Doc{{"ok", 0}, {"errmsg", result.message}});
    }
    connection.run_command(database,
                           Doc{{"dropDatabase", 1}, {"writeConcern", {{"w", "majority"}}}});
    check_row(row, replies, true);
  }
}

#endif
