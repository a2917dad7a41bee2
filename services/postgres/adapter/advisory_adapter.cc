#include "services/postgres/adapter/advisory_adapter.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace lockstep {

namespace {

constexpr uint64_t kFnvOffset = 14695981039346656037ULL;
constexpr uint64_t kFnvPrime = 1099511628211ULL;

AdapterResult result_of(AdapterStatus status, std::string message = {}) {
  return AdapterResult{.status = status, .message = std::move(message)};
}

std::optional<uint64_t> token_of(const std::optional<std::string>& text) {
  uint64_t token = 0;
  if (!text || text->empty()) return std::nullopt;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), token);
  if (error != std::errc() || end != text->data() + text->size() || token == 0) {
    return std::nullopt;
  }
  return token;
}

}  // namespace

int64_t advisory_key(const std::string& prefix, const std::string& key) {
  uint64_t hash = kFnvOffset;
  for (const std::string* part : {&prefix, &key}) {
    for (unsigned char c : *part) {
      hash ^= c;
      hash *= kFnvPrime;
    }
  }
  return static_cast<int64_t>(hash);
}

AdvisoryAdapter::AdvisoryAdapter(AdvisoryAdapterOptions options) : options_(std::move(options)) {
  if (options_.connector == nullptr)
    throw std::invalid_argument("AdvisoryAdapter needs a connector");
  if (options_.clock == nullptr) throw std::invalid_argument("AdvisoryAdapter needs a clock");
  if (options_.keepalive_idle_s < 1 || options_.keepalive_interval_s < 1 ||
      options_.keepalive_count < 1 || options_.sessions_max < 1) {
    throw std::invalid_argument("AdvisoryAdapter: keepalive settings and sessions_max are >= 1");
  }
}

AdvisoryAdapter::~AdvisoryAdapter() = default;

std::string_view AdvisoryAdapter::name() const {
  switch (options_.mode) {
    case AdvisoryMode::session_try: return "postgres-session";
    case AdvisoryMode::session_blocking: return "postgres-blocking";
    case AdvisoryMode::xact: return "postgres-xact";
  }
  return "postgres";
}

int64_t advisory_session_loss_bound_us(int64_t keepalive_idle_s, int64_t keepalive_interval_s,
                                       int64_t keepalive_count, int64_t user_timeout_ms) {
  constexpr int64_t kUsPerS = 1'000'000;
  if (user_timeout_ms > 0) {
    // Linux ends a connection whose keepalive probes go unanswered once tcp_user_timeout has
    // passed since the peer's last word; probes start after the idle time.
    return std::max(keepalive_idle_s * kUsPerS, user_timeout_ms * 1000);
  }
  return (keepalive_idle_s + keepalive_interval_s * keepalive_count) * kUsPerS;
}

int64_t AdvisoryAdapter::session_loss_bound_us() const {
  return advisory_session_loss_bound_us(options_.keepalive_idle_s, options_.keepalive_interval_s,
                                        options_.keepalive_count, options_.user_timeout_ms);
}

int64_t AdvisoryAdapter::validity_end_us(const LockSpec& spec, int64_t requested_at_us,
                                         int64_t ttl_ms) const {
  (void)spec;
  return requested_at_us + std::min(ttl_ms * 1000, session_loss_bound_us());
}

PgSettings AdvisoryAdapter::settings() const {
  PgSettings out{{"tcp_keepalives_idle", std::to_string(options_.keepalive_idle_s)},
                 {"tcp_keepalives_interval", std::to_string(options_.keepalive_interval_s)},
                 {"tcp_keepalives_count", std::to_string(options_.keepalive_count)}};
  if (options_.user_timeout_ms > 0) {
    out.emplace_back("tcp_user_timeout", std::to_string(options_.user_timeout_ms));
  }
  if (options_.mode == AdvisoryMode::session_blocking) {
    out.emplace_back("lock_timeout", std::to_string(options_.lock_wait_ms));
  }
  return out;
}

std::string AdvisoryAdapter::acquire_statement(const std::string& key) const {
  const int64_t k = lock_key(key);
  const std::string& sequence = options_.fencing_sequence;
  switch (options_.mode) {
    case AdvisoryMode::session_try:
      return sequence.empty()
                 ? fmt::format("SELECT pg_try_advisory_lock({})", k)
                 : fmt::format("SELECT CASE WHEN pg_try_advisory_lock({}) THEN nextval('{}') END",
                               k, sequence);
    case AdvisoryMode::session_blocking:
      return sequence.empty()
                 ? fmt::format("SELECT pg_advisory_lock({})", k)
                 : fmt::format("SELECT nextval('{}') FROM pg_advisory_lock({})", sequence, k);
    case AdvisoryMode::xact:
      return sequence.empty()
                 ? fmt::format("SELECT pg_try_advisory_xact_lock({})", k)
                 : fmt::format(
                       "SELECT CASE WHEN pg_try_advisory_xact_lock({}) THEN nextval('{}') END", k,
                       sequence);
  }
  return {};
}

AdvisoryAdapter::Session* AdvisoryAdapter::holding(const LockSpec& spec) {
  for (auto& session : sessions_) {
    auto it = session->held.find(spec.key);
    if (it != session->held.end() && it->second.value == spec.value) return session.get();
  }
  return nullptr;
}

bool AdvisoryAdapter::believes_held(const LockSpec& spec) const {
  return std::any_of(sessions_.begin(), sessions_.end(), [&spec](const auto& session) {
    auto it = session->held.find(spec.key);
    return session->connection->is_open() && it != session->held.end() &&
           it->second.value == spec.value;
  });
}

bool AdvisoryAdapter::held_anywhere(const std::string& key) const {
  return std::any_of(sessions_.begin(), sessions_.end(),
                     [&key](const auto& session) { return session->held.contains(key); });
}

void AdvisoryAdapter::lose(Session& session) {
  session.connection->close();
  session.held.clear();
}

AdvisoryAdapter::Session* AdvisoryAdapter::session_for_acquire(AdapterResult& failure) {
  Session* chosen = nullptr;
  const bool one_session = options_.mode != AdvisoryMode::xact;
  for (auto& session : sessions_) {
    if (one_session || session->held.empty()) {
      chosen = session.get();
      break;
    }
  }
  if (chosen == nullptr) {
    if (sessions_.size() >= options_.sessions_max) {
      failure = result_of(AdapterStatus::backend_error,
                          fmt::format("all {} sessions hold a lock", options_.sessions_max));
      return nullptr;
    }
    sessions_.push_back(std::make_unique<Session>());
    sessions_.back()->connection = options_.connector->connect(settings());
    chosen = sessions_.back().get();
  }
  if (!chosen->connection->is_open()) {
    chosen->held.clear();  // a lost session took its locks with it
    const PgResult opened = chosen->connection->open();
    if (!opened.ok()) {
      failure = result_of(
          AdapterStatus::backend_error,
          fmt::format("no session from {}: {}", chosen->connection->endpoint(), describe(opened)));
      return nullptr;
    }
  }
  return chosen;
}

PgResult AdvisoryAdapter::run(Session& session, const std::string& sql) {
  int64_t valid_until_us = 0;
  for (const auto& [key, held] : session.held)
    valid_until_us = std::max(valid_until_us, held.valid_until_us);
  const int64_t wait_us_min = std::max<int64_t>(valid_until_us - options_.clock->monotonic_us(), 0);
  return session.connection->execute(sql, wait_us_min);
}

AdapterResult AdvisoryAdapter::failed(Session& session, const PgResult& result, const char* op,
                                      bool writes) {
  const std::string where = session.connection->endpoint();
  if (result.status == IoStatus::ok) {  // a server error; the session goes on
    return result_of(AdapterStatus::backend_error,
                     fmt::format("{} on {}: {}", op, where, describe(result)));
  }
  lose(session);
  const std::string why =
      fmt::format("{} on {}: {}; the session is closed, and every lock it held ends with it", op,
                  where, describe(result));
  if (may_have_applied(result.status) && writes) {
    return result_of(AdapterStatus::outcome_unknown, why);
  }
  return result_of(
      std::string_view(op) == "acquire" ? AdapterStatus::backend_error : AdapterStatus::not_owner,
      why);
}

AdapterResult AdvisoryAdapter::create_lock(const LockSpec& spec) {
  if (held_anywhere(spec.key)) {
    // Session locks are re-entrant: taking it again on this session would let a second owner in.
    return result_of(AdapterStatus::contended, "this client's session holds it for another lock");
  }
  const int64_t requested_at_us = options_.clock->monotonic_us();
  AdapterResult failure;
  Session* session = session_for_acquire(failure);
  if (session == nullptr) return failure;
  if (options_.mode == AdvisoryMode::xact) {
    const PgResult begun = run(*session, "BEGIN");
    if (begun.status != IoStatus::ok) return failed(*session, begun, "acquire", false);
    if (!begun.ok() || !begun.notices.empty()) {
      lose(*session);  // a session already in a block is not one this adapter left
      return result_of(AdapterStatus::backend_error, "BEGIN: " + describe(begun));
    }
  }
  const PgResult taken = run(*session, acquire_statement(spec.key));
  if (taken.status != IoStatus::ok) return failed(*session, taken, "acquire", true);
  if (taken.sqlstate == "55P03") {  // lock_timeout: it stayed taken for the whole wait
    // Unless the grant raced the timeout: PostgreSQL then keeps the lock it was granted and
    // raises 55P03 all the same (LockErrorCleanup), and the session would hold it for good, the
    // next acquire re-entering it. Give back what it may hold (nothing else of this key is held
    // here: held_anywhere), and lose the session if that fails.
    const PgResult given_back =
        run(*session, fmt::format("SELECT pg_advisory_unlock({})", lock_key(spec.key)));
    if (given_back.status != IoStatus::ok) return failed(*session, given_back, "acquire", false);
    if (!given_back.sqlstate.empty()) {
      lose(*session);
      return result_of(
          AdapterStatus::backend_error,
          "could not give back a lock the timeout may have left: " + describe(given_back));
    }
    return result_of(AdapterStatus::contended,
                     fmt::format("still held after {}ms in the queue", options_.lock_wait_ms));
  }
  if (!taken.sqlstate.empty()) {
    if (options_.mode == AdvisoryMode::xact) run(*session, "ROLLBACK");
    return failed(*session, taken, "acquire", true);
  }
  return after_grant(*session, spec, taken, requested_at_us);
}

AdapterResult AdvisoryAdapter::after_grant(Session& session, const LockSpec& spec,
                                           const PgResult& result, int64_t requested_at_us) {
  const std::optional<std::string> value = result.scalar();
  const bool tokens = !options_.fencing_sequence.empty();
  const bool waits = options_.mode == AdvisoryMode::session_blocking;
  bool granted = false;
  if (tokens) {
    granted = value.has_value();  // CASE gives NULL when the lock was not taken
  } else {
    granted = waits ? value.has_value() : value == "t";
  }
  if (!granted) {
    if (options_.mode == AdvisoryMode::xact) {
      const PgResult rolled_back = run(session, "ROLLBACK");
      if (rolled_back.status != IoStatus::ok) lose(session);
    }
    return result_of(AdapterStatus::contended);
  }
  const int64_t valid_until_us = validity_end_us(spec, requested_at_us, spec.ttl_ms);
  if (options_.clock->monotonic_us() >= valid_until_us) return give_back_late(session, spec);
  AdapterResult ok{.status = AdapterStatus::ok};
  if (tokens) {
    const std::optional<uint64_t> token = token_of(value);
    if (!token) {
      // Held, but without a usable token: give it back rather than hand out a lock unfenced.
      lose(session);
      return result_of(AdapterStatus::backend_error,
                       "the fencing sequence gave no token: " + describe(result));
    }
    ok.fencing_token = *token;
  }
  session.held[spec.key] = {.value = spec.value, .valid_until_us = valid_until_us};
  return ok;
}

// The validity is the TTL cut to the session-loss bound, counted from the request: a grant that
// comes later (the client or the server paused, the statement slow) is of a lock the server may
// already have let another session take, by its count of this one's silence. The Locker takes
// back only grants older than the whole TTL; this bound is shorter. So the lock is given back (its
// transaction rolled back, or unlocked) and the acquire refused. If giving back fails, the session
// goes, and the lock with it, but when the server lets go is not known: an unknown outcome.
AdapterResult AdvisoryAdapter::give_back_late(Session& session, const LockSpec& spec) {
  const std::string statement =
      options_.mode == AdvisoryMode::xact
          ? std::string("ROLLBACK")
          : fmt::format("SELECT pg_advisory_unlock({})", lock_key(spec.key));
  const PgResult given_back = run(session, statement);
  if (given_back.status != IoStatus::ok) {
    // The grant was applied whatever became of the give-back: a connection that failed before
    // the statement was sent (reset while this client was paused with the grant in its buffer)
    // leaves the session, and the lock, to the server until it notices.
    lose(session);
    return result_of(AdapterStatus::outcome_unknown,
                     fmt::format("a grant that came after its validity could not be given back "
                                 "({}): the session is closed, and the server lets go of the lock "
                                 "when it notices",
                                 describe(given_back)));
  }
  if (!given_back.sqlstate.empty()) {
    lose(session);
    return result_of(AdapterStatus::outcome_unknown,
                     "a grant that came after its validity could not be given back (" +
                         describe(given_back) + "): the session is closed");
  }
  return result_of(AdapterStatus::contended,
                   "the grant came after the validity it could promise had ended (given back)");
}

AdapterResult AdvisoryAdapter::release_lock(const LockSpec& spec) {
  Session* session = holding(spec);
  if (session == nullptr) {
    return result_of(AdapterStatus::not_owner, "not held by this client's session");
  }
  if (!session->connection->is_open()) {
    session->held.clear();
    return result_of(AdapterStatus::not_owner, "its session was lost, and the lock with it");
  }
  if (options_.mode == AdvisoryMode::xact) {
    const PgResult committed = run(*session, "COMMIT");
    if (committed.status != IoStatus::ok) return failed(*session, committed, "release", true);
    session->held.erase(spec.key);
    if (committed.command_tag == "COMMIT" && committed.notices.empty()) {
      return AdapterResult{.status = AdapterStatus::ok};
    }
    return result_of(AdapterStatus::not_owner, "its transaction had ended: " + describe(committed));
  }
  const PgResult unlocked =
      run(*session, fmt::format("SELECT pg_advisory_unlock({})", lock_key(spec.key)));
  if (unlocked.status != IoStatus::ok) return failed(*session, unlocked, "release", true);
  if (!unlocked.sqlstate.empty()) return failed(*session, unlocked, "release", true);
  session->held.erase(spec.key);
  if (unlocked.scalar() == "t") return AdapterResult{.status = AdapterStatus::ok};
  return result_of(AdapterStatus::not_owner, "the session did not hold it: " + describe(unlocked));
}

AdapterResult AdvisoryAdapter::check_alive(Session& session, const char* op, bool reads) {
  (void)reads;
  if (!session.connection->is_open()) {
    session.held.clear();
    return result_of(AdapterStatus::not_owner, "its session was lost, and the lock with it");
  }
  const PgResult alive = run(session, "SELECT pg_backend_pid()");
  if (alive.status != IoStatus::ok) return failed(session, alive, op, false);
  if (!alive.sqlstate.empty()) return failed(session, alive, op, false);
  return AdapterResult{.status = AdapterStatus::ok};
}

AdapterResult AdvisoryAdapter::extend_lock(const LockSpec& spec, int64_t ttl_ms) {
  // No expiry to move: the session's life is the lease, and the validity a bound on the holder.
  const int64_t requested_at_us = options_.clock->monotonic_us();
  Session* session = holding(spec);
  if (session == nullptr) {
    return result_of(AdapterStatus::not_owner, "not held by this client's session");
  }
  AdapterResult alive = check_alive(*session, "extend", false);
  if (alive.ok()) {
    session->held[spec.key].valid_until_us = validity_end_us(spec, requested_at_us, ttl_ms);
  }
  return alive;
}

AdapterResult AdvisoryAdapter::is_valid_lock(const LockSpec& spec) {
  Session* session = holding(spec);
  if (session == nullptr) {
    return result_of(AdapterStatus::not_owner, "not held by this client's session");
  }
  return check_alive(*session, "validity check", true);
}

}  // namespace lockstep
