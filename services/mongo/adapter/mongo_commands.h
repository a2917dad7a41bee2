#pragma once
// The command documents the Mongo adapter sends, one builder per command, and the reading of their
// replies. Pure functions of their arguments (no I/O, no clock), so tests assert them exactly and
// the simulated mongod sees the same documents as a real one.
//
// Time: MongoNow says whose clock decides expiry. Server time uses "$$NOW" in {"$expr": ...}
// filters and pipeline updates; client time uses {"$date": ms} literals that the adapter computes
// once per operation.
//
// Invariant: no upsert's query holds $expr. mongod refuses that (224 QueryFeatureNotAllowed,
// "$expr is not allowed in the query predicate for an upsert"), so a $$NOW condition only ever
// filters statements that do not upsert.
#include <cstdint>
#include <optional>
#include <string>

#include "services/mongo/client/mongo_connection.h"

namespace lockstep {

// The clock an operation's filters and expiries use.
struct MongoNow {
  std::optional<int64_t> client_ms;  // nullopt: the server's $$NOW

  static MongoNow server() { return {}; }
  static MongoNow client(int64_t epoch_ms) { return {.client_ms = epoch_ms}; }
};

namespace mongo_commands {

// {"w": "majority", "wtimeout": ms} or {"w": 1}.
MongoDocument majority_write_concern(int64_t wtimeout_ms);
MongoDocument w1_write_concern();

// Filter fragments. Server: {"$expr": {"$lt"|"$gt": ["$expire_at", "$$NOW"]}}; client:
// {"expire_at": {"$lt"|"$gt": {"$date": now}}}.
MongoDocument owner_filter(const std::string& key, const std::string& value,
                           const MongoNow& now);                            // live, ours
MongoDocument expired_filter(const std::string& key, const MongoNow& now);  // expired, anyone's

// createIndexes on the lock collection: unique `key`, TTL (expireAfterSeconds 0) on `expire_at`.
MongoDocument create_indexes(const std::string& collection, const MongoDocument& write_concern);

// create step 1, one ordered update of two statements:
//   0. {key, expired} -> {value, expire_at: now + ttl}, no upsert: takes over an expired lock.
//   1. {key, value} -> expire_at: now + ttl where it has none, upsert: inserts our lock when the
//      key has no document, matches (and leaves as it is) the one statement 0 just took over, and
//      collides with another owner's live document on the unique index: 11000 = contended.
// So a grant is "upserted" (inserted) or n == 2 (taken over); n == 1 without "upserted" means
// the key is live under this very value already.
MongoDocument acquire(const std::string& collection, const std::string& key,
                      const std::string& value, int64_t ttl_ms, const MongoNow& now,
                      const MongoDocument& write_concern);
// create step 2: findAndModify {_id: key} $inc n, new, upsert, on the fencing collection.
MongoDocument next_token(const std::string& fencing_collection, const std::string& key,
                         const MongoDocument& write_concern);
// create step 3: update {key, value, live} -> $set token, no upsert.
MongoDocument confirm_token(const std::string& collection, const std::string& key,
                            const std::string& value, int64_t token, const MongoNow& now,
                            const MongoDocument& write_concern);
// release: delete {key, value, live}, limit 1.
MongoDocument release(const std::string& collection, const std::string& key,
                      const std::string& value, const MongoNow& now,
                      const MongoDocument& write_concern);
// extend: update {key, value, live} -> expire_at: now + ttl, no upsert.
MongoDocument extend(const std::string& collection, const std::string& key,
                     const std::string& value, int64_t ttl_ms, const MongoNow& now,
                     const MongoDocument& write_concern);
// is_valid: find {key, value, live}, limit 1, single batch; readConcern majority when asked.
MongoDocument find_owned(const std::string& collection, const std::string& key,
                         const std::string& value, const MongoNow& now, bool read_majority);

}  // namespace mongo_commands

// What a reply says, in the terms the adapter decides on.
struct MongoReplyOutcome {
  enum class Kind {
    ok,             // ok: 1, no write error, no write-concern error
    duplicate_key,  // writeErrors[0].code == 11000
    write_error,    // any other write error
    // writeConcernError: the write may have been applied, but not acknowledged as asked
    write_concern_error,
    command_error,  // ok: 0
    malformed,      // no "ok", or not a document
  };
  Kind kind = Kind::malformed;
  int64_t n = 0;          // ok and write errors: "n" of an update/delete (0 when absent)
  bool upserted = false;  // ok: the reply lists an "upserted" document
  int64_t code = 0;       // the error code, when there is one
  std::string message{};  // "code 64 (WriteConcernFailed): waiting for replication timed out"
};
MongoReplyOutcome read_reply(const MongoDocument& reply);

// The token in a findAndModify reply ({"value": {"n": N}}), if it is an integer > 0.
std::optional<int64_t> token_of(const MongoDocument& find_and_modify_reply);
// How many documents a find reply's cursor.firstBatch holds; nullopt when there is no such batch.
std::optional<size_t> first_batch_size(const MongoDocument& find_reply);

}  // namespace lockstep
