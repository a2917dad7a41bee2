#include "services/mongo/adapter/mongo_adapter.h"

#include <fmt/format.h>

#include "base/check.h"

namespace lockstep {

namespace cmd = mongo_commands;
using Kind = MongoReplyOutcome::Kind;

std::string_view to_string(MongoTimeSource source) {
  switch (source) {
    case MongoTimeSource::server: return "server";
    case MongoTimeSource::client: return "client";
  }
  return "?";
}

std::string_view to_string(MongoWriteConcern concern) {
  switch (concern) {
    case MongoWriteConcern::majority: return "majority";
    case MongoWriteConcern::one: return "1";
  }
  return "?";
}

MongoAdapter::MongoAdapter(MongoAdapterOptions options) : options_(std::move(options)) {
  LOCKSTEP_CHECK(options_.connection != nullptr, "MongoAdapter needs a connection");
  LOCKSTEP_CHECK(options_.time_source != MongoTimeSource::client || options_.clock != nullptr,
                 "time_source client reads the client's clock");
  LOCKSTEP_CHECK(!options_.database.empty() && !options_.collection.empty() &&
                     !options_.fencing_collection.empty(),
                 "a database and two collections");
  LOCKSTEP_CHECK(options_.collection != options_.fencing_collection,
                 "lock documents and fencing counters apart");
  LOCKSTEP_CHECK(options_.write_concern != MongoWriteConcern::majority ||
                     options_.write_concern_timeout_ms > 0,
                 "w:majority needs a bounded wtimeout");
}

MongoNow MongoAdapter::now() {
  if (options_.time_source == MongoTimeSource::server) return MongoNow::server();
  return MongoNow::client(options_.clock->now_ms());
}

MongoDocument MongoAdapter::write_concern() const {
  return options_.write_concern == MongoWriteConcern::majority
             ? cmd::majority_write_concern(options_.write_concern_timeout_ms)
             : cmd::w1_write_concern();
}

MongoAdapter::Sent MongoAdapter::send(MongoDocument command) {
  Sent sent{.result = options_.connection->run_command(options_.database, std::move(command)),
            .outcome = {}};
  if (sent.result.ok()) sent.outcome = read_reply(sent.result.reply);
  return sent;
}

AdapterResult MongoAdapter::failure(const char* op, const char* command, const Sent& sent,
                                    bool writes) const {
  const std::string where = fmt::format("{} on {}", op, options_.connection->endpoint());
  if (!sent.result.ok()) {
    // A write sent whole and then timed out or reset may have been applied: only its reply is
    // known lost (io_status.h).
    const bool maybe_applied = writes && may_have_applied(sent.result.status);
    return {.status = maybe_applied ? AdapterStatus::outcome_unknown : AdapterStatus::backend_error,
            .message = fmt::format("{}: {} {} ({})", where, command, to_string(sent.result.status),
                                   sent.result.message)};
  }
  const char* what = "unexpected reply";
  switch (sent.outcome.kind) {
    case Kind::command_error: what = "command error"; break;
    case Kind::write_error:
    case Kind::duplicate_key: what = "write error"; break;
    case Kind::write_concern_error: what = "write concern error"; break;
    case Kind::malformed:
    case Kind::ok: break;
  }
  const std::string detail =
      sent.outcome.message.empty() ? sent.result.reply.dump() : sent.outcome.message;
  // Applied on the primary but not replicated as asked: a failover may roll it back, or not.
  const bool maybe_applied = writes && sent.outcome.kind == Kind::write_concern_error;
  return {.status = maybe_applied ? AdapterStatus::outcome_unknown : AdapterStatus::backend_error,
          .message = fmt::format("{}: {} {}: {}", where, command, what, detail)};
}

std::optional<AdapterResult> MongoAdapter::ensure_indexes(const char* op) {
  if (indexes_ready_) return std::nullopt;
  const Sent sent = send(cmd::create_indexes(options_.collection, write_concern()));
  if (sent.result.ok() && sent.outcome.kind == Kind::ok) {
    indexes_ready_ = true;
    return std::nullopt;
  }
  return failure(op, "createIndexes", sent, /*writes=*/false);
}

MongoAdapter::Cleanup MongoAdapter::best_effort_release(const LockSpec& spec, const MongoNow& at) {
  const Sent sent =
      send(cmd::release(options_.collection, spec.key, spec.value, at, cmd::w1_write_concern()));
  if (!sent.result.ok())
    return {.note = fmt::format("best-effort release failed: {}", to_string(sent.result.status))};
  if (sent.outcome.kind != Kind::ok)
    return {.note = "best-effort release failed: " + sent.outcome.message};
  return {
      .gone = true,
      .note = sent.outcome.n == 1 ? "lock document deleted again" : "lock document already gone"};
}

AdapterResult MongoAdapter::create_lock(const LockSpec& spec) {
  LOCKSTEP_CHECK(spec.ttl_ms > 0, "a lock needs a positive TTL");
  if (auto failed = ensure_indexes("acquire")) return *failed;
  const MongoNow at = now();
  auto not_held = [&](const char* command, const Sent& sent) {
    // After a transport failure the lock document we wrote stays (nothing cleans it up): the
    // key may be ours until its TTL, which only outcome_unknown says. After an answered failure
    // the best-effort release below ran, and its word is in the message: unless it confirmed the
    // document gone, the key may still be ours too.
    AdapterResult result = failure("acquire", command, sent, /*writes=*/false);
    if (!sent.result.ok()) {
      result.status = AdapterStatus::outcome_unknown;
      result.message += "; the lock document written before it may hold the key until its TTL";
      return result;
    }
    // Only when the server answered: after a transport failure the next command would most
    // likely fail the same way, and the TTL frees the key anyway.
    const Cleanup cleanup = best_effort_release(spec, at);
    if (!cleanup.gone) result.status = AdapterStatus::outcome_unknown;
    result.message += "; not reported as held (" + cleanup.note + ")";
    return result;
  };

  // 1. The lock document: an expired one is taken over, a missing one inserted, a live one of
  // another owner makes the upsert collide.
  const Sent upsert = send(
      cmd::acquire(options_.collection, spec.key, spec.value, spec.ttl_ms, at, write_concern()));
  if (!upsert.result.ok()) return failure("acquire", "update", upsert, /*writes=*/true);
  // A statement of the batch failed after an earlier one applied (n > 0): the take-over may have
  // made the key ours, so it is cleaned up like any acquire that cannot be confirmed.
  const bool partly_applied =
      (upsert.outcome.kind == Kind::duplicate_key || upsert.outcome.kind == Kind::write_error) &&
      upsert.outcome.n > 0;
  if (partly_applied) return not_held("update", upsert);
  if (upsert.outcome.kind == Kind::duplicate_key) return {.status = AdapterStatus::contended};
  // Applied on the primary but not acknowledged as asked (e.g. no majority): not a grant.
  if (upsert.outcome.kind == Kind::write_concern_error) return not_held("update", upsert);
  if (upsert.outcome.kind != Kind::ok) return failure("acquire", "update", upsert, /*writes=*/true);
  const bool inserted = upsert.outcome.upserted && upsert.outcome.n == 1;
  const bool taken_over = !upsert.outcome.upserted && upsert.outcome.n == 2;
  if (!upsert.outcome.upserted && upsert.outcome.n == 1) {
    // Nothing expired to take over and the upsert matched our own live document: this value
    // holds the key already. Not a new grant (it would get a token without a new lease).
    return {.status = AdapterStatus::contended,
            .message = fmt::format("acquire on {}: the key is locked with this value already",
                                   options_.connection->endpoint())};
  }
  if (!inserted && !taken_over) return not_held("update", upsert);

  // 2. The next fencing token of the key.
  const Sent counter =
      send(cmd::next_token(options_.fencing_collection, spec.key, write_concern()));
  const std::optional<int64_t> token =
      counter.result.ok() ? token_of(counter.result.reply) : std::nullopt;
  if (!counter.result.ok() || counter.outcome.kind != Kind::ok || !token)
    return not_held("findAndModify", counter);

  // 3. Confirm: the token goes on the lock document only while the lease still lives.
  const Sent confirm = send(
      cmd::confirm_token(options_.collection, spec.key, spec.value, *token, at, write_concern()));
  if (!confirm.result.ok() || confirm.outcome.kind != Kind::ok) return not_held("update", confirm);
  if (confirm.outcome.n == 0) {
    return {.status = AdapterStatus::contended,
            .message = fmt::format("acquire on {}: the lease ended before token {} was confirmed",
                                   options_.connection->endpoint(), *token)};
  }
  if (confirm.outcome.n != 1) return not_held("update", confirm);
  return {.fencing_token = static_cast<uint64_t>(*token)};
}

AdapterResult MongoAdapter::owner_checked(const char* op, const char* command,
                                          MongoDocument sent_command) {
  const Sent sent = send(std::move(sent_command));
  if (sent.result.ok() && sent.outcome.kind == Kind::ok) {
    if (sent.outcome.n == 1) return {};
    if (sent.outcome.n == 0) return {.status = AdapterStatus::not_owner};
  }
  return failure(op, command, sent, /*writes=*/true);
}

AdapterResult MongoAdapter::release_lock(const LockSpec& spec) {
  if (auto failed = ensure_indexes("release")) return *failed;
  return owner_checked(
      "release", "delete",
      cmd::release(options_.collection, spec.key, spec.value, now(), write_concern()));
}

AdapterResult MongoAdapter::extend_lock(const LockSpec& spec, int64_t ttl_ms) {
  LOCKSTEP_CHECK(ttl_ms > 0, "an extend needs a positive TTL");
  if (auto failed = ensure_indexes("extend")) return *failed;
  return owner_checked(
      "extend", "update",
      cmd::extend(options_.collection, spec.key, spec.value, ttl_ms, now(), write_concern()));
}

AdapterResult MongoAdapter::is_valid_lock(const LockSpec& spec) {
  if (auto failed = ensure_indexes("is_locked")) return *failed;
  const Sent sent = send(cmd::find_owned(
      options_.collection, spec.key, spec.value, now(),
      options_.read_majority.value_or(options_.write_concern == MongoWriteConcern::majority)));
  if (sent.result.ok() && sent.outcome.kind == Kind::ok) {
    if (const auto found = first_batch_size(sent.result.reply))
      return *found > 0 ? AdapterResult{} : AdapterResult{.status = AdapterStatus::not_owner};
  }
  return failure("is_locked", "find", sent, /*writes=*/false);
}

}  // namespace lockstep
