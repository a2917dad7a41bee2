#include "services/mongo/sim/commands.h"

#include <algorithm>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "services/mongo/sim/matcher.h"
#include "services/mongo/sim/update.h"

namespace lockstep::sim::mongo {
namespace {

// Fields a driver adds to every command; accepted and ignored.
bool is_generic_field(const std::string& name) {
  return name == "$db" || name == "lsid" || name == "$clusterTime" || name == "comment" ||
         name == "$readPreference";
}

void check_fields(const Doc& object, std::string_view where,
                  std::initializer_list<std::string_view> allowed, bool generic) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool known = generic && is_generic_field(it.key());
    for (std::string_view a : allowed) known = known || it.key() == a;
    if (!known) {
      throw MongoError(
          9, fmt::format(
                 "BSON field '{}.{}' is an unknown field (lockstep's simulated mongod supports "
                 "only what the lock adapter sends)",
                 where, it.key()));
    }
  }
}

bool bool_field(const Doc& object, const char* name, std::string_view where, bool fallback) {
  const auto found = object.find(name);
  if (found == object.end()) return fallback;
  if (found->is_boolean()) return found->get<bool>();
  if (found->is_number()) return as_int64(*found) != 0;
  throw MongoError(
      14, fmt::format("BSON field '{}.{}' is the wrong type '{}', expected type 'bool'", where,
                      name, type_name(&*found)));
}

std::string collection_of(const Doc& command, CommandContext& ctx) {
  const Doc& value = command.begin().value();
  if (!value.is_string() || value.get_ref<const std::string&>().empty()) {
    throw MongoError(73, fmt::format("collection name has invalid type {}", type_name(&value)));
  }
  return ctx.database + "." + value.get<std::string>();
}

WriteConcern parse_write_concern(const Doc& command, int members) {
  WriteConcern wc;
  const auto found = command.find("writeConcern");
  if (found == command.end()) return wc;
  if (!found->is_object()) throw MongoError(14, "writeConcern must be an object");
  check_fields(*found, "writeConcern", {"w", "wtimeout", "j", "fsync"}, false);
  if (const auto w = found->find("w"); w != found->end()) {
    if (w->is_string()) {
      wc.majority = true;
      if (w->get<std::string>() != "majority") {
        wc.majority = false;
        wc.mode = w->get<std::string>();
        wc.unsatisfiable_code = 79;
        wc.unsatisfiable_message = fmt::format(
            "No write concern mode named '{}' found in replica set configuration", wc.mode);
      }
    } else if (w->is_number()) {
      const int64_t n = as_int64(*w);
      if (n < 0 || n > 50)
        throw MongoError(9, "w has to be a non-negative number and not greater than 50");
      wc.majority = false;
      wc.w = static_cast<int>(n);
      if (n > members) {
        wc.unsatisfiable_code = 100;
        wc.unsatisfiable_message = "Not enough data-bearing nodes";
      }
    } else {
      throw MongoError(14, "w has to be a number or a string");
    }
  }
  if (const auto t = found->find("wtimeout"); t != found->end()) {
    if (!t->is_number()) throw MongoError(14, "wtimeout must be a number");
    wc.wtimeout_ms = std::max<int64_t>(0, as_int64(*t));
  }
  return wc;
}

// mongod parses an upsert's query without $expr (its CanonicalUpdate allows every matcher feature
// but $expr when upsert is set) and rewrites the parser's error into this message.
void refuse_expr_in_upsert(const Doc& query, bool upsert) {
  if (upsert && has_expr(query))
    throw MongoError(224, "$expr is not allowed in the query predicate for an upsert");
}

Doc write_error(size_t index, const MongoError& e) {
  return make_document("index", index, "code", e.code(), "errmsg", e.what());
}

// A duplicate key as a command error ({"ok": 0, ...}), as findAndModify and index builds report it.
class DuplicateKeyError : public MongoError {
 public:
  DuplicateKeyError(const std::string& ns, DuplicateKey dup, const std::string& prefix = "")
      : MongoError(mongo_error::kDuplicateKey, prefix + duplicate_key_message(ns, dup)),
        dup_(std::move(dup)) {}
  Doc reply_doc() const {
    Doc r = reply();
    r["keyPattern"] = dup_.key_pattern;
    r["keyValue"] = dup_.key_value;
    return r;
  }
  // The entry of an update's writeErrors: index, code, keyPattern, keyValue, errmsg.
  Doc write_error(size_t index) const {
    return make_document("index", index, "code", code(), "keyPattern", dup_.key_pattern, "keyValue",
                         dup_.key_value, "errmsg", what());
  }

 private:
  DuplicateKey dup_;
};

// Inserts an upserted document: the collection is created first when needed (its own op, as mongod
// logs an implicit create).
void insert_document(CommandContext& ctx, const std::string& ns, Doc doc,
                     std::vector<MongoOp>& ops) {
  if (ctx.db.find(ns) == nullptr) {
    ctx.db.get_or_create(ns);
    ops.push_back(MongoOp{.kind = MongoOp::Kind::create_collection, .ns = ns});
  }
  ctx.db.get_or_create(ns).insert(doc);
  ops.push_back(MongoOp{.kind = MongoOp::Kind::insert, .ns = ns, .after = std::move(doc)});
}

// The document an upsert inserts: the filter's equality fields, the update applied, an _id first.
Doc upsert_document(const Doc& filter, const Doc& update, CommandContext& ctx) {
  Doc doc = equality_fields(filter);
  apply_update(update, doc, true, ExprContext{.now_ms = ctx.now_ms});
  put_id_first(doc, lookup(doc, "_id") ? *lookup(doc, "_id") : ctx.next_id());
  return doc;
}

std::vector<int64_t> matching(const Collection* coll, const Doc& filter, const ExprContext& ectx,
                              size_t limit) {
  std::vector<int64_t> out;
  if (coll == nullptr) return out;
  for (const auto& [rid, doc] : coll->records()) {
    if (limit != 0 && out.size() >= limit) break;
    if (matches(filter, doc, ectx)) out.push_back(rid);
  }
  return out;
}

// --- update ---

// One update statement: applies it, or returns the duplicate key it would make (a writeError).
// A duplicate is the common refusal (an upsert of a lock someone holds): a value, not a throw.
// Other errors throw MongoError (a writeError too).
std::optional<DuplicateKeyError> update_statement(const Doc& stmt, size_t index,
                                                  const std::string& ns, CommandContext& ctx,
                                                  CommandResult& result, int64_t& n,
                                                  int64_t& modified, Doc& upserted) {
  check_fields(stmt, "update.updates", {"q", "u", "upsert", "multi"}, false);
  if (!stmt.contains("q") || !stmt["q"].is_object())
    throw MongoError(9, "BSON field 'update.updates.q' is missing but a required field");
  if (!stmt.contains("u"))
    throw MongoError(9, "BSON field 'update.updates.u' is missing but a required field");
  const Doc& q = stmt["q"];
  const Doc& u = stmt["u"];
  const bool upsert = bool_field(stmt, "upsert", "update.updates", false);
  const bool multi = bool_field(stmt, "multi", "update.updates", false);
  validate_filter(q);
  refuse_expr_in_upsert(q, upsert);
  validate_update(u);
  if (multi && !u.is_array() &&
      !(u.is_object() && !u.empty() && u.begin().key().starts_with('$'))) {
    throw MongoError(9, "multi update is not supported for replacement-style update");
  }
  const ExprContext ectx{.now_ms = ctx.now_ms};
  Collection* coll = ctx.db.find(ns);
  const std::vector<int64_t> found = matching(coll, q, ectx, multi ? 0 : 1);
  if (found.empty()) {
    if (!upsert) return std::nullopt;
    Doc doc = upsert_document(q, u, ctx);
    const Collection* target = ctx.db.find(ns);
    if (target != nullptr) {
      if (std::optional<DuplicateKey> dup = target->duplicate(doc))
        return DuplicateKeyError(ns, std::move(*dup));
    }
    const Doc id = doc["_id"];
    insert_document(ctx, ns, std::move(doc), result.ops);
    ++n;
    upserted.push_back(make_document("index", index, "_id", id));
    return std::nullopt;
  }
  // A statement that fails counts nothing in n and nModified (mongod sums only the statements
  // that succeeded), though the documents it changed before failing stay changed.
  int64_t matched = 0;
  int64_t changed = 0;
  for (const int64_t rid : found) {
    Doc before = coll->records().at(rid);
    Doc after = before;
    apply_update(u, after, false, ectx);
    ++matched;
    if (after == before) {  // a no-op: no oplog entry, as in mongod
      result.unchanged.push_back(std::move(before));
      continue;
    }
    if (std::optional<DuplicateKey> dup = coll->duplicate(after, rid))
      return DuplicateKeyError(ns, std::move(*dup));
    coll->replace(rid, after);
    ++changed;
    result.ops.push_back(MongoOp{.kind = MongoOp::Kind::update,
                                 .ns = ns,
                                 .before = std::move(before),
                                 .after = std::move(after)});
  }
  n += matched;
  modified += changed;
  return std::nullopt;
}

void run_update(const Doc& command, CommandContext& ctx, CommandResult& result) {
  check_fields(command, "update",
               {"update", "updates", "ordered", "writeConcern", "bypassDocumentValidation"}, true);
  const std::string ns = collection_of(command, ctx);
  if (!command.contains("updates") || !command["updates"].is_array()) {
    throw MongoError(9, "BSON field 'update.updates' is missing but a required field");
  }
  if (command["updates"].empty())
    throw MongoError(9, "Write batch sizes must be between 1 and 100000. Got 0 operations.");
  const bool ordered = bool_field(command, "ordered", "update", true);
  result.write_concern = parse_write_concern(command, ctx.members);
  result.is_write = true;
  int64_t n = 0;
  int64_t modified = 0;
  Doc upserted = Doc::array();
  Doc errors = Doc::array();
  const Doc& updates = command["updates"];
  for (size_t i = 0; i < updates.size(); ++i) {
    try {
      if (!updates[i].is_object())
        throw MongoError(14, "BSON field 'update.updates' elements must be objects");
      if (const std::optional<DuplicateKeyError> dup =
              update_statement(updates[i], i, ns, ctx, result, n, modified, upserted)) {
        errors.push_back(dup->write_error(i));
        if (ordered) break;
      }
    } catch (const MongoError& e) {
      errors.push_back(write_error(i, e));
      if (ordered) break;
    }
  }
  // A document another statement of the batch changed is told of by that change (the upsert half
  // of a take-over matches the document its first half just took over): only one that no
  // statement changed stays in `unchanged`.
  std::erase_if(result.unchanged, [&result](const Doc& doc) {
    return std::any_of(result.ops.begin(), result.ops.end(), [&doc](const MongoOp& op) {
      return op.after.is_object() && op.after.contains("_id") && op.after["_id"] == doc["_id"];
    });
  });
  result.reply = make_document("n", n, "nModified", modified);
  if (!upserted.empty()) result.reply["upserted"] = std::move(upserted);
  if (!errors.empty()) result.reply["writeErrors"] = std::move(errors);
  result.reply["ok"] = 1.0;
}

// --- delete ---

void run_delete(const Doc& command, CommandContext& ctx, CommandResult& result) {
  check_fields(command, "delete", {"delete", "deletes", "ordered", "writeConcern"}, true);
  const std::string ns = collection_of(command, ctx);
  if (!command.contains("deletes") || !command["deletes"].is_array()) {
    throw MongoError(9, "BSON field 'delete.deletes' is missing but a required field");
  }
  if (command["deletes"].empty())
    throw MongoError(9, "Write batch sizes must be between 1 and 100000. Got 0 operations.");
  const bool ordered = bool_field(command, "ordered", "delete", true);
  result.write_concern = parse_write_concern(command, ctx.members);
  result.is_write = true;
  int64_t n = 0;
  Doc errors = Doc::array();
  const Doc& deletes = command["deletes"];
  for (size_t i = 0; i < deletes.size(); ++i) {
    try {
      const Doc& stmt = deletes[i];
      if (!stmt.is_object())
        throw MongoError(14, "BSON field 'delete.deletes' elements must be objects");
      check_fields(stmt, "delete.deletes", {"q", "limit"}, false);
      if (!stmt.contains("q") || !stmt["q"].is_object())
        throw MongoError(9, "BSON field 'delete.deletes.q' is missing but a required field");
      if (!stmt.contains("limit") || !stmt["limit"].is_number()) {
        throw MongoError(9, "BSON field 'delete.deletes.limit' is missing but a required field");
      }
      const int64_t limit = as_int64(stmt["limit"]);
      if (limit != 0 && limit != 1)
        throw MongoError(
            9, fmt::format("The limit field in delete objects must be 0 or 1. Got {}", limit));
      validate_filter(stmt["q"]);
      Collection* coll = ctx.db.find(ns);
      for (const int64_t rid : matching(coll, stmt["q"], ExprContext{.now_ms = ctx.now_ms},
                                        static_cast<size_t>(limit))) {
        Doc before = coll->records().at(rid);
        coll->remove(rid);
        result.ops.push_back(
            MongoOp{.kind = MongoOp::Kind::remove, .ns = ns, .before = std::move(before)});
        ++n;
      }
    } catch (const MongoError& e) {
      errors.push_back(write_error(i, e));
      if (ordered) break;
    }
  }
  result.reply = make_document("n", n);
  if (!errors.empty()) result.reply["writeErrors"] = std::move(errors);
  result.reply["ok"] = 1.0;
}

// --- findAndModify ---

void run_find_and_modify(const Doc& command, CommandContext& ctx, CommandResult& result) {
  const std::string name = command_name(command);
  check_fields(command, name,
               {name, "query", "update", "remove", "new", "upsert", "writeConcern",
                "bypassDocumentValidation"},
               true);
  const std::string ns = collection_of(command, ctx);
  const Doc query = command.contains("query") ? command["query"] : Doc::object();
  if (!query.is_object())
    throw MongoError(14, "BSON field 'findAndModify.query' must be an object");
  const bool remove = bool_field(command, "remove", name, false);
  const bool return_new = bool_field(command, "new", name, false);
  const bool upsert = bool_field(command, "upsert", name, false);
  const bool has_update = command.contains("update");
  if (remove == has_update)
    throw MongoError(9, "Either an update or remove=true must be specified");
  if (remove && (upsert || return_new))
    throw MongoError(9, "Cannot specify both upsert=true and remove=true");
  result.write_concern = parse_write_concern(command, ctx.members);
  result.is_write = true;
  validate_filter(query);
  refuse_expr_in_upsert(query, upsert);
  const Doc update = has_update ? command["update"] : Doc();
  if (has_update) validate_update(update);
  const ExprContext ectx{.now_ms = ctx.now_ms};
  Collection* coll = ctx.db.find(ns);
  const std::vector<int64_t> found = matching(coll, query, ectx, 1);
  Doc last_error{{"n", 0}};
  Doc value(nullptr);
  if (found.empty()) {
    if (!remove) last_error["updatedExisting"] = false;
    if (upsert) {
      Doc doc = upsert_document(query, update, ctx);
      if (coll != nullptr) {
        if (std::optional<DuplicateKey> dup = coll->duplicate(doc))
          throw DuplicateKeyError(ns, *dup);
      }
      last_error["n"] = 1;
      last_error["upserted"] = doc["_id"];
      if (return_new) value = doc;
      insert_document(ctx, ns, std::move(doc), result.ops);
    }
  } else {
    const int64_t rid = found.front();
    Doc before = coll->records().at(rid);
    last_error["n"] = 1;
    if (remove) {
      coll->remove(rid);
      value = before;
      result.ops.push_back(
          MongoOp{.kind = MongoOp::Kind::remove, .ns = ns, .before = std::move(before)});
    } else {
      last_error["updatedExisting"] = true;
      Doc after = before;
      apply_update(update, after, false, ectx);
      if (after != before) {
        if (std::optional<DuplicateKey> dup = coll->duplicate(after, rid))
          throw DuplicateKeyError(ns, *dup);
        coll->replace(rid, after);
        result.ops.push_back(
            MongoOp{.kind = MongoOp::Kind::update, .ns = ns, .before = before, .after = after});
      }
      value = return_new ? after : before;
    }
  }
  result.reply =
      Doc{{"lastErrorObject", std::move(last_error)}, {"value", std::move(value)}, {"ok", 1.0}};
}

// --- find ---

void run_find(const Doc& command, CommandContext& ctx, CommandResult& result) {
  check_fields(command, "find",
               {"find", "filter", "limit", "singleBatch", "batchSize", "skip", "readConcern"},
               true);
  const std::string ns = collection_of(command, ctx);
  const Doc filter = command.contains("filter") ? command["filter"] : Doc::object();
  if (!filter.is_object())
    throw MongoError(14, "BSON field 'find.filter' is the wrong type, expected type 'object'");
  int64_t limit = 0;
  if (command.contains("limit")) {
    if (!command["limit"].is_number())
      throw MongoError(14, "BSON field 'find.limit' is the wrong type");
    limit = as_int64(command["limit"]);
    if (limit < 0)
      throw MongoError(
          51024, fmt::format("BSON field 'limit' value must be >= 0, actual value '{}'", limit));
  }
  int64_t skip = 0;
  if (command.contains("skip")) {
    if (!command["skip"].is_number() || as_int64(command["skip"]) < 0)
      throw MongoError(51024, "BSON field 'skip' value must be >= 0");
    skip = as_int64(command["skip"]);
  }
  bool_field(command, "singleBatch", "find", false);
  bool majority = false;
  if (command.contains("readConcern")) {
    const Doc& rc = command["readConcern"];
    if (!rc.is_object())
      throw MongoError(14,
                       "BSON field 'find.readConcern' is the wrong type, expected type 'object'");
    check_fields(rc, "readConcern", {"level"}, false);
    if (rc.contains("level")) {
      if (!rc["level"].is_string())
        throw MongoError(14, "BSON field 'readConcern.level' is the wrong type");
      const std::string level = rc["level"].get<std::string>();
      if (level == "majority") {
        majority = true;
      } else if (level != "local" && level != "available") {
        throw MongoError(
            2, fmt::format("readConcern level '{}' is not supported by lockstep's simulated mongod "
                           "(local, available, majority)",
                           level));
      }
    }
  }
  validate_filter(filter);
  Doc batch = Doc::array();
  auto scan = [&](const Collection& coll) {
    int64_t skipped = 0;
    for (const auto& [rid, doc] : coll.records()) {
      if (limit != 0 && static_cast<int64_t>(batch.size()) >= limit) break;
      if (!matches(filter, doc, ExprContext{.now_ms = ctx.now_ms})) continue;
      if (skipped++ < skip) continue;
      batch.push_back(doc);
    }
  };
  if (majority) {
    scan(ctx.majority_view(ns));
  } else if (const Collection* coll = ctx.db.find(ns)) {
    scan(*coll);
  }
  result.reply = Doc{{"cursor", {{"firstBatch", std::move(batch)}, {"id", int64_t{0}}, {"ns", ns}}},
                     {"ok", 1.0}};
}

// --- createIndexes ---

IndexSpec parse_index(const Doc& spec) {
  if (!spec.is_object()) throw MongoError(14, "each index specification must be an object");
  for (auto it = spec.begin(); it != spec.end(); ++it) {
    const std::string& f = it.key();
    if (f != "key" && f != "name" && f != "unique" && f != "expireAfterSeconds" && f != "v") {
      throw MongoError(
          197,
          fmt::format("The field '{}' is not valid for an index specification. Specification: {}",
                      f, render(spec)));
    }
  }
  if (!spec.contains("key") || !spec["key"].is_object() || spec["key"].empty()) {
    throw MongoError(
        9, fmt::format(
               "Error in specification {} :: caused by :: The 'key' field is a required property "
               "of an index specification",
               render(spec)));
  }
  if (!spec.contains("name") || !spec["name"].is_string()) {
    throw MongoError(
        9, fmt::format(
               "Error in specification {} :: caused by :: The 'name' field is a required property "
               "of an index specification",
               render(spec)));
  }
  IndexSpec out{.name = spec["name"].get<std::string>(), .key = spec["key"]};
  for (auto it = out.key.begin(); it != out.key.end(); ++it) {
    if (!it.value().is_number() || (as_int64(it.value()) != 1 && as_int64(it.value()) != -1)) {
      throw MongoError(
          67, fmt::format(
                  "Error in specification {} :: caused by :: Values in the index key pattern can "
                  "only be 1 or -1 in lockstep's simulated mongod",
                  render(spec)));
    }
  }
  if (spec.contains("unique")) out.unique = bool_field(spec, "unique", "index", false);
  if (spec.contains("expireAfterSeconds")) {
    // As mongod's validateIndexSpecTTL (src/mongo/db/catalog/index_key_validate.cpp): a number,
    // within a 32-bit integer, not negative; all 67 CannotCreateIndex.
    const Doc& e = spec["expireAfterSeconds"];
    if (!e.is_number()) {
      throw MongoError(
          67, fmt::format("TTL index 'expireAfterSeconds' option must be numeric, but received a "
                          "type of '{}'. Index spec: {}",
                          type_name(&e), render(spec)));
    }
    if (as_int64(e) > std::numeric_limits<int32_t>::max() ||
        as_int64(e) < std::numeric_limits<int32_t>::min()) {
      throw MongoError(67, fmt::format("TTL index 'expireAfterSeconds' must be within the range "
                                       "of a 32-bit integer. Index spec: {}",
                                       render(spec)));
    }
    if (as_int64(e) < 0) {
      throw MongoError(67, fmt::format("TTL index 'expireAfterSeconds' option cannot be less than "
                                       "0. Index spec: {}",
                                       render(spec)));
    }
    if (out.key.size() != 1)
      throw MongoError(
          67, "TTL indexes are single-field indexes, compound indexes do not support TTL.");
    out.expire_after_seconds = as_int64(e);
  }
  return out;
}

void run_create_indexes(const Doc& command, CommandContext& ctx, CommandResult& result) {
  check_fields(command, "createIndexes",
               {"createIndexes", "indexes", "writeConcern", "commitQuorum"}, true);
  const std::string ns = collection_of(command, ctx);
  if (!command.contains("indexes") || !command["indexes"].is_array() ||
      command["indexes"].empty()) {
    throw MongoError(9, "Must specify at least one index to create");
  }
  result.write_concern = parse_write_concern(command, ctx.members);
  result.is_write = true;
  std::vector<IndexSpec> specs;
  for (const Doc& spec : command["indexes"]) specs.push_back(parse_index(spec));
  const Collection* existing = ctx.db.find(ns);
  const int before = existing ? static_cast<int>(existing->indexes().size()) : 1;
  // Decide first (conflicts fail the whole command), then build.
  std::vector<IndexSpec> to_build;
  for (IndexSpec& spec : specs) {
    const IndexSpec* same_name = existing ? existing->index_named(spec.name) : nullptr;
    const IndexSpec* same_key = existing ? existing->index_with_key(spec.key) : nullptr;
    if (same_name != nullptr && same_name->key != spec.key) {
      throw MongoError(
          86, fmt::format(
                  "An existing index has the same name as the requested index. Requested index: "
                  "{}, existing index: {}",
                  render(spec.to_doc()), render(same_name->to_doc())));
    }
    if (same_key != nullptr && same_key->name != spec.name) {
      throw MongoError(
          85, fmt::format("Index already exists with a different name: {}", same_key->name));
    }
    if (same_key != nullptr && !same_key->same_options(spec)) {
      throw MongoError(
          85, fmt::format(
                  "An equivalent index already exists with the same name but different options. "
                  "Requested index: {}, existing index: {}",
                  render(spec.to_doc()), render(same_key->to_doc())));
    }
    if (same_key != nullptr) continue;
    for (const IndexSpec& earlier : to_build) {
      if (earlier.name == spec.name || earlier.key == spec.key) {
        throw MongoError(
            85,
            fmt::format("Index with name: {} already exists with different options", spec.name));
      }
    }
    to_build.push_back(std::move(spec));
  }
  if (to_build.empty()) {
    result.reply = Doc{{"numIndexesBefore", before},
                       {"numIndexesAfter", before},
                       {"note", "all indexes already exist"},
                       {"ok", 1.0}};
    return;
  }
  const bool created = existing == nullptr;
  std::vector<MongoOp> ops;
  if (created) {
    ctx.db.get_or_create(ns);
    ops.push_back(MongoOp{.kind = MongoOp::Kind::create_collection, .ns = ns});
  }
  Collection& coll = ctx.db.get_or_create(ns);
  for (const IndexSpec& spec : to_build) {
    if (std::optional<DuplicateKey> dup = coll.add_index(spec)) {
      for (auto op = ops.rbegin(); op != ops.rend(); ++op)
        ctx.db.undo(*op);  // an index build is all or nothing
      throw DuplicateKeyError(ns, *dup, "Index build failed: ");
    }
    ops.push_back(MongoOp{.kind = MongoOp::Kind::create_index, .ns = ns, .index = spec});
  }
  for (MongoOp& op : ops) result.ops.push_back(std::move(op));
  result.reply = Doc{{"numIndexesBefore", before},
                     {"numIndexesAfter", static_cast<int>(coll.indexes().size())},
                     {"createdCollectionAutomatically", created},
                     {"ok", 1.0}};
}

std::string short_json(const Doc& value) { return compact(value, 72); }

}  // namespace

Doc WriteConcern::to_doc() const {
  Doc out{{"w", !mode.empty() ? Doc(mode) : majority ? Doc("majority") : Doc(w)}};
  if (wtimeout_ms > 0) out["wtimeout"] = wtimeout_ms;
  return out;
}

std::string command_name(const Doc& command) {
  if (!command.is_object() || command.empty()) return "";
  return command.begin().key();
}

CommandKind command_kind(const Doc& command) {
  const std::string name = command_name(command);
  if (name == "update" || name == "delete" || name == "findAndModify" || name == "findandmodify" ||
      name == "createIndexes") {
    return CommandKind::write;
  }
  if (name == "find") return CommandKind::read;
  if (name == "hello" || name == "isMaster" || name == "ismaster") return CommandKind::hello;
  if (name == "ping") return CommandKind::ping;
  return CommandKind::unknown;
}

CommandResult run_data_command(const Doc& command, CommandContext& ctx) {
  CommandResult result;
  const std::string name = command_name(command);
  try {
    if (name == "update") {
      run_update(command, ctx, result);
    } else if (name == "delete") {
      run_delete(command, ctx, result);
    } else if (name == "findAndModify" || name == "findandmodify") {
      run_find_and_modify(command, ctx, result);
    } else if (name == "find") {
      run_find(command, ctx, result);
    } else if (name == "createIndexes") {
      run_create_indexes(command, ctx, result);
    } else {
      throw MongoError(59, fmt::format("no such command: '{}'", name));
    }
  } catch (const DuplicateKeyError& e) {
    result.reply = e.reply_doc();
  } catch (const MongoError& e) {
    result.reply = e.reply();
  }
  return result;
}

std::string summarize(const Doc& command) {
  const std::string name = command_name(command);
  if (name.empty()) return "(empty)";
  const Doc& target = command.begin().value();
  std::string out =
      name + " " + (target.is_string() ? target.get<std::string>() : short_json(target));
  auto first_of = [&](const char* field) -> const Doc* {
    if (!command.contains(field) || !command[field].is_array() || command[field].empty())
      return nullptr;
    return &command[field][0];
  };
  if (name == "update") {
    if (const Doc* s = first_of("updates"); s != nullptr && s->is_object()) {
      out += " q=" + short_json(s->value("q", Doc())) + " u=" + short_json(s->value("u", Doc()));
      if (s->value("upsert", false)) out += " upsert";
    }
  } else if (name == "delete") {
    if (const Doc* s = first_of("deletes"); s != nullptr && s->is_object())
      out += " q=" + short_json(s->value("q", Doc()));
  } else if (name == "findAndModify" || name == "findandmodify") {
    out += " q=" + short_json(command.value("query", Doc())) +
           " u=" + short_json(command.value("update", Doc()));
  } else if (name == "find") {
    out += " " + short_json(command.value("filter", Doc::object()));
    if (command.contains("readConcern")) out += " rc=" + short_json(command["readConcern"]);
  } else if (name == "createIndexes") {
    out += fmt::format(" {} indexes", command.contains("indexes") && command["indexes"].is_array()
                                          ? command["indexes"].size()
                                          : 0);
  }
  if (command.contains("writeConcern")) out += " wc=" + short_json(command["writeConcern"]);
  return out;
}

}  // namespace lockstep::sim::mongo
