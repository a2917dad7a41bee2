#include "services/mongo/adapter/mongo_commands.h"

#include <fmt/format.h>

namespace lockstep {
namespace mongo_commands {
namespace {

// Adds the expiry condition to `filter`: expire_at < now (expired) or > now (live).
void add_expiry(MongoDocument& filter, const char* op, const MongoNow& now) {
  if (now.client_ms) {
    filter["expire_at"] = make_document(op, mongo_date(*now.client_ms));
  } else {
    filter["$expr"] = make_document(op, make_array("$expire_at", "$$NOW"));
  }
}

// The update that sets `fields` plus expire_at = now + ttl: a pipeline with $$NOW (server time)
// or a $set with a date literal (client time).
MongoDocument set_with_expiry(MongoDocument fields, int64_t ttl_ms, const MongoNow& now) {
  if (now.client_ms) {
    fields["expire_at"] = mongo_date(*now.client_ms + ttl_ms);
    return make_document("$set", std::move(fields));
  }
  fields["expire_at"] = make_document("$add", make_array("$$NOW", ttl_ms));
  return make_array(make_document("$set", std::move(fields)));
}

// expire_at = now + ttl only where the document has none, i.e. on the document an upsert inserts:
// $setOnInsert with a date literal (client time), or a pipeline with $ifNull (server time:
// operator updates cannot compute $$NOW + ttl).
MongoDocument expiry_if_absent(int64_t ttl_ms, const MongoNow& now) {
  if (now.client_ms) {
    return make_document("$setOnInsert",
                         make_document("expire_at", mongo_date(*now.client_ms + ttl_ms)));
  }
  MongoDocument expiry = make_document("$add", make_array("$$NOW", ttl_ms));
  MongoDocument if_absent = make_document("$ifNull", make_array("$expire_at", std::move(expiry)));
  return make_array(make_document("$set", make_document("expire_at", std::move(if_absent))));
}

MongoDocument statement(MongoDocument filter, MongoDocument update, bool upsert) {
  return make_document("q", std::move(filter), "u", std::move(update), "upsert", upsert);
}

MongoDocument update_command(const std::string& collection, MongoDocument statements,
                             const MongoDocument& write_concern) {
  return make_document("update", collection, "updates", std::move(statements), "ordered", true,
                       "writeConcern", write_concern);
}

MongoDocument update_one(const std::string& collection, MongoDocument filter, MongoDocument update,
                         bool upsert, const MongoDocument& write_concern) {
  return update_command(collection,
                        make_array(statement(std::move(filter), std::move(update), upsert)),
                        write_concern);
}

}  // namespace

MongoDocument majority_write_concern(int64_t wtimeout_ms) {
  return make_document("w", "majority", "wtimeout", wtimeout_ms);
}

MongoDocument w1_write_concern() { return make_document("w", 1); }

MongoDocument owner_filter(const std::string& key, const std::string& value, const MongoNow& now) {
  MongoDocument filter = make_document("key", key, "value", value);
  add_expiry(filter, "$gt", now);
  return filter;
}

MongoDocument expired_filter(const std::string& key, const MongoNow& now) {
  MongoDocument filter = make_document("key", key);
  add_expiry(filter, "$lt", now);
  return filter;
}

MongoDocument create_indexes(const std::string& collection, const MongoDocument& write_concern) {
  MongoDocument key_index =
      make_document("key", make_document("key", 1), "name", "key_1", "unique", true);
  MongoDocument ttl_index = make_document("key", make_document("expire_at", 1), "name",
                                          "expire_at_1", "expireAfterSeconds", 0);
  return make_document("createIndexes", collection, "indexes",
                       make_array(std::move(key_index), std::move(ttl_index)), "writeConcern",
                       write_concern);
}

MongoDocument acquire(const std::string& collection, const std::string& key,
                      const std::string& value, int64_t ttl_ms, const MongoNow& now,
                      const MongoDocument& write_concern) {
  // The expired filter may hold $expr (server time), so it never upserts; the upsert filters on
  // equalities only.
  MongoDocument take_over = statement(
      expired_filter(key, now), set_with_expiry(make_document("value", value), ttl_ms, now), false);
  MongoDocument insert =
      statement(make_document("key", key, "value", value), expiry_if_absent(ttl_ms, now), true);
  return update_command(collection, make_array(std::move(take_over), std::move(insert)),
                        write_concern);
}

MongoDocument next_token(const std::string& fencing_collection, const std::string& key,
                         const MongoDocument& write_concern) {
  return make_document("findAndModify", fencing_collection, "query", make_document("_id", key),
                       "update", make_document("$inc", make_document("n", 1)), "new", true,
                       "upsert", true, "writeConcern", write_concern);
}

MongoDocument confirm_token(const std::string& collection, const std::string& key,
                            const std::string& value, int64_t token, const MongoNow& now,
                            const MongoDocument& write_concern) {
  return update_one(collection, owner_filter(key, value, now),
                    make_document("$set", make_document("token", token)), false, write_concern);
}

MongoDocument release(const std::string& collection, const std::string& key,
                      const std::string& value, const MongoNow& now,
                      const MongoDocument& write_concern) {
  MongoDocument statement = make_document("q", owner_filter(key, value, now), "limit", 1);
  return make_document("delete", collection, "deletes", make_array(std::move(statement)), "ordered",
                       true, "writeConcern", write_concern);
}

MongoDocument extend(const std::string& collection, const std::string& key,
                     const std::string& value, int64_t ttl_ms, const MongoNow& now,
                     const MongoDocument& write_concern) {
  return update_one(collection, owner_filter(key, value, now),
                    set_with_expiry(MongoDocument::object(), ttl_ms, now), false, write_concern);
}

MongoDocument find_owned(const std::string& collection, const std::string& key,
                         const std::string& value, const MongoNow& now, bool read_majority) {
  MongoDocument command = make_document("find", collection, "filter", owner_filter(key, value, now),
                                        "limit", 1, "singleBatch", true);
  if (read_majority) command["readConcern"] = make_document("level", "majority");
  return command;
}

}  // namespace mongo_commands

namespace {

int64_t integer_or(const MongoDocument& document, const char* field, int64_t fallback) {
  if (!document.is_object()) return fallback;
  const auto found = document.find(field);
  if (found == document.end()) return fallback;
  if (found->is_number_integer()) return found->get<int64_t>();
  if (found->is_number_float()) return static_cast<int64_t>(found->get<double>());
  return fallback;
}

std::string string_or(const MongoDocument& document, const char* field, const char* fallback) {
  if (!document.is_object()) return fallback;
  const auto found = document.find(field);
  return found != document.end() && found->is_string() ? found->get<std::string>() : fallback;
}

// "code 64 (WriteConcernFailed): waiting for replication timed out"
std::string describe_error(const MongoDocument& error) {
  const int64_t code = integer_or(error, "code", 0);
  const std::string name = string_or(error, "codeName", "");
  const std::string text = string_or(error, "errmsg", "(no errmsg)");
  return name.empty() ? fmt::format("code {}: {}", code, text)
                      : fmt::format("code {} ({}): {}", code, name, text);
}

}  // namespace

MongoReplyOutcome read_reply(const MongoDocument& reply) {
  using Outcome = MongoReplyOutcome::Kind;
  if (!reply.is_object() || !reply.contains("ok") || !reply["ok"].is_number()) {
    return {.kind = Outcome::malformed,
            .message = "a reply without a numeric \"ok\": " + reply.dump()};
  }
  if (reply["ok"] != 1) {
    return {.kind = Outcome::command_error,
            .code = integer_or(reply, "code", 0),
            .message = describe_error(reply)};
  }
  const auto write_errors = reply.find("writeErrors");
  if (write_errors != reply.end() && write_errors->is_array() && !write_errors->empty()) {
    const MongoDocument& first = write_errors->front();
    const int64_t code = integer_or(first, "code", 0);
    // n counts the statements applied before the one that failed (an ordered batch stops there).
    return {
        .kind = code == mongo_error::kDuplicateKey ? Outcome::duplicate_key : Outcome::write_error,
        .n = integer_or(reply, "n", 0),
        .code = code,
        .message = describe_error(first)};
  }
  const auto concern_error = reply.find("writeConcernError");
  if (concern_error != reply.end()) {
    return {.kind = Outcome::write_concern_error,
            .n = integer_or(reply, "n", 0),
            .code = integer_or(*concern_error, "code", 0),
            .message = describe_error(*concern_error)};
  }
  const auto upserted = reply.find("upserted");
  return {.kind = Outcome::ok,
          .n = integer_or(reply, "n", 0),
          .upserted = upserted != reply.end() && upserted->is_array() && !upserted->empty()};
}

std::optional<int64_t> token_of(const MongoDocument& find_and_modify_reply) {
  if (!find_and_modify_reply.is_object()) return std::nullopt;
  const auto value = find_and_modify_reply.find("value");
  if (value == find_and_modify_reply.end() || !value->is_object()) return std::nullopt;
  const auto n = value->find("n");
  if (n == value->end() || !n->is_number_integer()) return std::nullopt;
  const auto token = n->get<int64_t>();
  if (token <= 0) return std::nullopt;
  return token;
}

std::optional<size_t> first_batch_size(const MongoDocument& find_reply) {
  if (!find_reply.is_object()) return std::nullopt;
  const auto cursor = find_reply.find("cursor");
  if (cursor == find_reply.end() || !cursor->is_object()) return std::nullopt;
  const auto batch = cursor->find("firstBatch");
  if (batch == cursor->end() || !batch->is_array()) return std::nullopt;
  return batch->size();
}

}  // namespace lockstep
