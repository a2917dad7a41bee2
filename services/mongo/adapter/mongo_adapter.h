#pragma once
// The MongoDB lock (the seed library locco's Mongo adapter, made safer): one document per locked
// key in a collection with a unique index on `key` and a TTL index on `expire_at`.
//
// Documents: {key, value, token, expire_at} in `collection`; the fencing counter of a key is the
// document {_id: key, n} in `fencing_collection`, never deleted, so tokens keep increasing across
// releases and TTL deletions (as long as the deployment keeps its writes: a rolled-back w:1 write
// can reissue a token, which the fencing checker reports).
//
// - create: one update of two ordered statements (mongo_commands::acquire): take over
//   {key, expire_at < now} -> {value, expire_at: now + ttl} without upsert, then upsert
//   {key, value} (expire_at: now + ttl when inserting). A live lock of another owner makes the
//   upsert insert a second document for the key: duplicate key (11000) = contended. The $$NOW
//   condition sits in the statement that does not upsert, because mongod refuses $expr in an
//   upsert's query (224). Then the token: findAndModify $inc on the counter, and a confirming update
//   {key, value, expire_at > now} -> {token}. If the confirmation matches nothing the lease ran out
//   before its token was issued and the grant is not reported (tokens then strictly increase in
//   grant order, because a lease is confirmed before it can end and the next grant can begin).
// - release: deleteOne({key, value, expire_at > now}); extend: updateOne({key, value,
//   expire_at > now}, {expire_at: now + ttl}) without upsert, so a lock that is gone stays gone.
// - is_valid: find({key, value, expire_at > now}), at readConcern majority when read_majority;
//   unset, it follows the write concern: with w:majority a lock is only reported held once a
//   majority has it (a primary's read could see a write that a failover then rolls back), with w:1
//   the primary is read (a majority read could miss the client's own acknowledged write).
// - now: the server's $$NOW (time_source server: an update pipeline and $expr filters) or the
//   client's clock (time_source client: locco's `new Date()`, so a fast client clock can take a
//   live lock).
// - Indexes: createIndexes for both, on first use, idempotently; a failed attempt is retried on
//   the next operation, and the operation fails with backend_error meanwhile.
// Transport failures, command errors and write-concern errors become backend_error with the
// endpoint and the cause, except where a write may have taken effect: a write sent whole whose
// reply timed out or whose connection was lost (io_status.h), a transport failure after the
// acquire's document was written, a write-concern error on release or extend are outcome_unknown.
// An acquire that cannot be confirmed is never reported as held.
// - A create whose document the server wrote but that cannot be reported held (a writeConcernError
//   on any of its three writes, a batch whose take-over applied before its upsert failed, a failed
//   or unusable findAndModify) deletes its document again, best effort: owner-checked and
//   unexpired, with {"w": 1} so it does not wait out the wtimeout of the majority that just
//   failed. It is backend_error only when that delete confirmed the document gone; otherwise the
//   key may still be ours until its TTL: outcome_unknown. Never after a transport failure (the
//   next command would most likely fail the same way; the TTL frees the key): outcome_unknown.
//   Deleting our own document can never harm another owner.
// - A confirmation that matches nothing (the lease ended before its token was issued) is
//   contended, with a message, like a Redlock attempt whose validity ran out.
// The command documents are mongo_commands.h's; the reading of replies is read_reply()'s.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lockstep/adapter.h"
#include "lockstep/clock.h"
#include "services/mongo/adapter/mongo_commands.h"
#include "services/mongo/client/mongo_connection.h"

namespace lockstep {

enum class MongoTimeSource { server, client };
enum class MongoWriteConcern { majority, one };
std::string_view to_string(MongoTimeSource source);
std::string_view to_string(MongoWriteConcern concern);

struct MongoAdapterOptions {
  MongoConnection* connection = nullptr;  // required; used by one client at a time
  Clock* clock = nullptr;                 // required when time_source is client
  std::string database = "lockstep";
  std::string collection = "locks";
  std::string fencing_collection = "lock_fencing";
  MongoTimeSource time_source = MongoTimeSource::server;
  MongoWriteConcern write_concern = MongoWriteConcern::majority;
  // wtimeout for w:majority. The connection's command (socket) timeout must be longer, or the
  // client gives up before the server can answer with a writeConcernError (MongocOptions' is).
  int64_t write_concern_timeout_ms = 5000;
  // is_valid reads at readConcern majority; unset: exactly when write_concern is majority.
  std::optional<bool> read_majority{};
};

class MongoAdapter final : public LockAdapter {
 public:
  explicit MongoAdapter(MongoAdapterOptions options);

  std::string_view name() const override { return "mongo"; }
  FencingSupport fencing() const override { return FencingSupport::monotonic; }
  AdapterResult create_lock(const LockSpec& spec) override;
  AdapterResult release_lock(const LockSpec& spec) override;
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override;
  AdapterResult is_valid_lock(const LockSpec& spec) override;

  const MongoAdapterOptions& options() const { return options_; }
  // True once createIndexes succeeded on this adapter's connection.
  bool indexes_ready() const { return indexes_ready_; }

 private:
  // One command's outcome: the transport result and the reading of its reply.
  struct Sent {
    MongoResult result;
    MongoReplyOutcome outcome;
  };

  MongoNow now();  // $$NOW, or the client clock read once (per operation)
  MongoDocument write_concern() const;
  Sent send(MongoDocument command);
  // backend_error naming the op, the endpoint, the command and the cause.
  // writes: the command changes documents, so a socket timeout or a write concern error leaves
  // its outcome unknown (outcome_unknown) rather than failed.
  AdapterResult failure(const char* op, const char* command, const Sent& sent, bool writes) const;
  // createIndexes unless done; an error result when it failed (retried on the next operation).
  std::optional<AdapterResult> ensure_indexes(const char* op);
  // release/extend: n == 1 -> ok, n == 0 -> not_owner, anything else -> backend_error.
  AdapterResult owner_checked(const char* op, const char* command, MongoDocument sent_command);
  // After a create wrote the lock document but cannot report it held: delete it again (owner-
  // checked, w:1, so it does not wait for the majority that just failed), so the key is not left
  // blocked until the TTL. Returns whether the document is known gone, and what happened.
  struct Cleanup {
    bool gone = false;
    std::string note;  // for the error message
  };
  Cleanup best_effort_release(const LockSpec& spec, const MongoNow& at);

  MongoAdapterOptions options_;
  bool indexes_ready_ = false;
};

}  // namespace lockstep
