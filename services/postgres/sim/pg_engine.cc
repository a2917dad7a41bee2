#include "services/postgres/sim/pg_engine.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <utility>

#include <fmt/format.h>

#include "sim/assert.h"

namespace lockstep::sim {

namespace {

// The key a lock function's arguments name (the parser let through one bigint or two integers).
PgLockKey lock_key(const PgCall& c) {
  if (c.args.size() == 2) {
    return {.value = static_cast<int64_t>(static_cast<uint64_t>(c.args[0].number) << 32 |
                                          static_cast<uint32_t>(c.args[1].number)),
            .space = 2};
  }
  return {.value = c.args.at(0).number};
}

constexpr int64_t kSeqLogVals = 32;  // PostgreSQL's SEQ_LOG_VALS
constexpr size_t kSessionsMax = 100'000;

// The settings a session may give; their values are integers.
constexpr std::array<std::string_view, 6> kSettings = {
    "lock_timeout",         "tcp_keepalives_idle", "tcp_keepalives_interval",
    "tcp_keepalives_count", "tcp_user_timeout",    "statement_timeout"};

bool known_setting(const std::string& name) {
  return std::find(kSettings.begin(), kSettings.end(), name) != kSettings.end();
}

std::optional<int64_t> integer(const std::string& text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// The SQL type a function returns, for CASE WHEN's check.
std::string_view result_type(PgFunction f) {
  switch (f) {
    case PgFunction::try_advisory_lock:
    case PgFunction::advisory_unlock:
    case PgFunction::try_advisory_xact_lock:
    case PgFunction::terminate_backend: return "boolean";
    case PgFunction::advisory_lock:
    case PgFunction::advisory_xact_lock:
    case PgFunction::advisory_unlock_all: return "void";
    case PgFunction::backend_pid: return "integer";
    case PgFunction::nextval: return "bigint";
  }
  return "?";
}

bool waits(PgFunction f) {
  return f == PgFunction::advisory_lock || f == PgFunction::advisory_xact_lock;
}

PgResult one_value(std::optional<std::string> value) {
  PgResult result{.command_tag = "SELECT 1"};
  result.rows.push_back({std::move(value)});
  return result;
}

}  // namespace

void PgEngine::open_session(int64_t pid, const PgSettings& settings) {
  LOCKSTEP_SIM_CHECK(!sessions_.contains(pid) && sessions_.size() < kSessionsMax,
                     "a new session under a new pid");
  Session& session = sessions_[pid];
  for (const auto& [name, value] : settings) {
    session.settings[name] = value;
    if (name == "lock_timeout") session.lock_timeout_ms = integer(value).value_or(0);
  }
}

bool PgEngine::waiting(int64_t pid) const {
  auto it = sessions_.find(pid);
  return it != sessions_.end() && it->second.wait.has_value();
}

int64_t PgEngine::lock_timeout_ms(int64_t pid) const {
  auto it = sessions_.find(pid);
  return it == sessions_.end() ? 0 : it->second.lock_timeout_ms;
}

std::optional<std::string> PgEngine::setting(int64_t pid, const std::string& name) const {
  auto it = sessions_.find(pid);
  if (it == sessions_.end()) return std::nullopt;
  auto found = it->second.settings.find(name);
  if (found == it->second.settings.end()) return std::nullopt;
  return found->second;
}

std::vector<int64_t> PgEngine::session_pids() const {
  std::vector<int64_t> pids;
  for (const auto& [pid, session] : sessions_) pids.push_back(pid);
  return pids;
}

bool PgEngine::in_block(int64_t pid) const {
  auto it = sessions_.find(pid);
  return it != sessions_.end() && it->second.in_block;
}

int64_t PgEngine::holder(PgLockKey key) const {
  auto it = locks_.find(key);
  return it == locks_.end() || !it->second.hold ? 0 : it->second.hold->pid;
}

void PgEngine::notify(PgLockEvent event) {
  if (observer_ != nullptr) observer_->on_lock_event(event);
}

PgEngine::Outcome PgEngine::error(Session& session, std::string sqlstate, std::string message,
                                  std::vector<std::string> notices) {
  Outcome out;
  out.result.sqlstate = std::move(sqlstate);
  out.result.error = std::move(message);
  out.result.notices = std::move(notices);
  (void)session;  // end_statement decides what the error does to its transaction
  return out;
}

PgEngine::Outcome PgEngine::execute(int64_t pid, const std::string& sql, const PgTag& tag) {
  auto it = sessions_.find(pid);
  LOCKSTEP_SIM_CHECK(it != sessions_.end(), "a statement of a live session");
  Session& session = it->second;
  if (session.wait) {
    Outcome busy;
    busy.result.sqlstate = "08P01";
    busy.result.error = "another command is already in progress";
    return busy;
  }
  const PgParse parse = parse_statement(sql);
  if (!parse.statement) {
    if (parse.sqlstate.empty()) return Outcome{.result = PgResult{}};  // an empty query
    Outcome out = error(session, parse.sqlstate, parse.error);
    end_statement(pid, session, true, out);
    return out;
  }
  const PgStatement& statement = *parse.statement;
  const bool exits_block =
      statement.kind == PgStatement::Kind::commit || statement.kind == PgStatement::Kind::rollback;
  if (session.in_block && session.failed && !exits_block) {
    return error(session, "25P02",
                 "current transaction is aborted, commands ignored until end of transaction "
                 "block");
  }
  return run(pid, session, statement, tag);
}

PgEngine::Outcome PgEngine::run(int64_t pid, Session& session, const PgStatement& statement,
                                const PgTag& tag) {
  Outcome out;
  switch (statement.kind) {
    case PgStatement::Kind::begin:
      out.result.command_tag = "BEGIN";
      if (session.in_block) {
        out.result.notices.push_back("WARNING: there is already a transaction in progress");
      }
      session.in_block = true;
      return out;
    case PgStatement::Kind::commit:
    case PgStatement::Kind::rollback: {
      const bool commit = statement.kind == PgStatement::Kind::commit;
      if (!session.in_block) {
        out.result.command_tag = commit ? "COMMIT" : "ROLLBACK";
        out.result.notices.push_back("WARNING: there is no transaction in progress");
        return out;
      }
      out.result.command_tag = commit && !session.failed ? "COMMIT" : "ROLLBACK";
      out.aborted_wal = end_block(pid, session, commit && !session.failed, tag.client);
      return out;
    }
    case PgStatement::Kind::set: {
      if (!known_setting(statement.name)) {
        out = error(session, "42704",
                    fmt::format("unrecognized configuration parameter \"{}\"", statement.name));
        end_statement(pid, session, true, out);
        return out;
      }
      const std::optional<int64_t> value = integer(statement.value);
      if (!value) {
        out = error(session, "22023",
                    fmt::format("invalid value for parameter \"{}\": \"{}\"", statement.name,
                                statement.value));
        end_statement(pid, session, true, out);
        return out;
      }
      session.settings[statement.name] = statement.value;
      if (statement.name == "lock_timeout") session.lock_timeout_ms = *value;
      out.result.command_tag = "SET";
      return out;
    }
    case PgStatement::Kind::create_sequence:
      if (sequences_.contains(statement.name)) {
        if (!statement.if_not_exists) {
          out = error(session, "42P07",
                      fmt::format("relation \"{}\" already exists", statement.name));
          end_statement(pid, session, true, out);
          return out;
        }
        out.result.notices.push_back(
            fmt::format("NOTICE: relation \"{}\" already exists, skipping", statement.name));
      } else {
        create_sequence(statement.name);
      }
      out.result.command_tag = "CREATE SEQUENCE";
      return out;
    case PgStatement::Kind::select: return select(pid, session, statement, tag);
  }
  return out;
}

void PgEngine::create_sequence(const std::string& name) {
  sequences_[name] = PgSequence{};
  durable_[name] = PgSequence{};
  durable_log_.emplace_back(name, PgSequence{});
}

PgEngine::Outcome PgEngine::select(int64_t pid, Session& session, const PgStatement& statement,
                                   const PgTag& tag) {
  Outcome out;
  if (statement.shape == PgStatement::Shape::case_when &&
      result_type(statement.first.function) != "boolean") {
    out = error(session, "42804",
                fmt::format("argument of CASE/WHEN must be type boolean, not type {}",
                            result_type(statement.first.function)));
    end_statement(pid, session, true, out);
    return out;
  }
  if (statement.shape != PgStatement::Shape::call && waits(statement.second.function)) {
    out = error(session, "0A000", "the simulated server waits only in a statement's first call");
    end_statement(pid, session, true, out);
    return out;
  }
  const auto saved_grants = std::exchange(grants_in_statement_, {});
  const auto saved_token = std::exchange(token_in_statement_, std::nullopt);
  std::optional<std::optional<std::string>> first;
  PgResult failure;
  if (waits(statement.first.function)) {
    const PgLockKey key = lock_key(statement.first);
    const bool xact = statement.first.function == PgFunction::advisory_xact_lock;
    if (!try_take(pid, session, key, xact, tag)) {
      session.wait = Wait{.key = key, .xact = xact, .statement = statement, .tag = tag};
      locks_[key].waiters.push_back(pid);
      out.waiting = true;
      grants_in_statement_ = saved_grants;
      token_in_statement_ = saved_token;
      return out;
    }
    first = std::optional<std::string>("");
  } else {
    first = call(pid, session, statement.first, tag, failure);
  }
  std::optional<std::string> value;
  bool failed = !first.has_value();
  if (!failed && !sessions_.contains(pid)) {  // it terminated itself
    grants_in_statement_ = saved_grants;
    token_in_statement_ = saved_token;
    out.session_ended = true;
    out.result.sqlstate = "57P01";
    out.result.error = "terminating connection due to administrator command";
    return out;
  }
  if (!failed) {
    if (statement.shape == PgStatement::Shape::call) {
      value = *first;
    } else if (statement.shape == PgStatement::Shape::case_when && *first != "t") {
      value = std::nullopt;
    } else {
      std::optional<std::optional<std::string>> second =
          call(pid, session, statement.second, tag, failure);
      failed = !second.has_value();
      if (!failed) value = *second;
    }
  }
  for (PgLockEvent& grant : grants_in_statement_) {
    if (!failed) grant.token = token_in_statement_;
    notify(std::move(grant));
  }
  grants_in_statement_ = saved_grants;
  token_in_statement_ = saved_token;
  if (failed) {
    out = error(session, failure.sqlstate, failure.error, failure.notices);
  } else {
    std::vector<std::string> notices = std::move(failure.notices);
    out.result = one_value(std::move(value));
    out.result.notices = std::move(notices);
  }
  end_statement(pid, session, failed, out);
  return out;
}

std::optional<std::optional<std::string>> PgEngine::call(int64_t pid, Session& session,
                                                         const PgCall& c, const PgTag& tag,
                                                         PgResult& error) {
  auto arg = [&c](size_t i) { return c.args.at(i).number; };
  switch (c.function) {
    case PgFunction::try_advisory_lock:
    case PgFunction::try_advisory_xact_lock: {
      const bool xact = c.function == PgFunction::try_advisory_xact_lock;
      return std::optional<std::string>(try_take(pid, session, lock_key(c), xact, tag) ? "t" : "f");
    }
    case PgFunction::advisory_unlock: {
      const PgLockKey key = lock_key(c);
      auto it = locks_.find(key);
      if (it == locks_.end() || !it->second.hold || it->second.hold->pid != pid ||
          it->second.hold->session_count == 0) {
        error.notices.push_back("WARNING: you don't own a lock of type ExclusiveLock");
        return std::optional<std::string>("f");
      }
      release_one(pid, key, false, tag.client, "unlock");
      return std::optional<std::string>("t");
    }
    case PgFunction::advisory_unlock_all: {
      std::vector<PgLockKey> keys;
      for (const auto& [key, lock] : locks_) {
        if (lock.hold && lock.hold->pid == pid && lock.hold->session_count > 0) keys.push_back(key);
      }
      for (const PgLockKey& key : keys) {
        Lock& lock = locks_.at(key);
        lock.hold->session_count = 0;
        if (lock.hold->xact_count == 0) release_hold(lock, key, tag.client, "unlock all");
      }
      return std::optional<std::string>("");
    }
    case PgFunction::backend_pid: return std::optional<std::string>(std::to_string(pid));
    case PgFunction::terminate_backend: {
      const int64_t target = arg(0);
      if (c.args.size() > 1 && arg(1) < 0) {
        error.sqlstate = "22003";
        error.error = "\"timeout\" must not be negative";
        return std::nullopt;
      }
      if (!sessions_.contains(target)) {
        error.notices.push_back(
            fmt::format("WARNING: PID {} is not a PostgreSQL backend process", target));
        return std::optional<std::string>("f");
      }
      const PgWal unflushed =
          end_session(target, tag.client, fmt::format("terminated by pid {}", pid));
      (void)unflushed;  // a terminated session's open transaction never committed
      return std::optional<std::string>("t");
    }
    case PgFunction::nextval: {
      std::optional<std::string> next = nextval(session, c.args.at(0).text, error);
      if (!next) return std::nullopt;  // an error, not a NULL
      return std::optional<std::string>(std::move(next));
    }
    case PgFunction::advisory_lock:
    case PgFunction::advisory_xact_lock: break;  // first call only (select)
  }
  error.sqlstate = "0A000";
  error.error = "the simulated server cannot run this here";
  return std::nullopt;
}

bool PgEngine::try_take(int64_t pid, Session& session, PgLockKey key, bool xact, const PgTag& tag) {
  Lock& lock = locks_[key];
  if (lock.hold && lock.hold->pid != pid) return false;
  if (!lock.hold) lock.hold = Hold{.pid = pid};
  // A session shared by several lock operations (a pooled session) re-enters the lock for each:
  // the server has then granted it to each of them, and the lease facts say so.
  const bool new_owner =
      lock.hold->owners.empty() ||
      std::none_of(lock.hold->owners.begin(), lock.hold->owners.end(), [&tag](const PgTag& o) {
        return o.client == tag.client && o.value == tag.value;
      });
  if (new_owner) {
    lock.hold->owners.push_back(tag);
    grants_in_statement_.push_back(
        PgLockEvent{.kind = PgLockEvent::Kind::granted, .pid = pid, .key = key, .owner = tag});
  }
  if (xact) {
    ++lock.hold->xact_count;
    session.xact_keys.push_back(key);
  } else {
    ++lock.hold->session_count;
  }
  return true;
}

void PgEngine::release_one(int64_t pid, PgLockKey key, bool xact, int requester,
                           const std::string& cause) {
  Lock& lock = locks_.at(key);
  LOCKSTEP_SIM_CHECK(lock.hold && lock.hold->pid == pid, "a release of a lock the session holds");
  int& count = xact ? lock.hold->xact_count : lock.hold->session_count;
  LOCKSTEP_SIM_CHECK(count > 0, "a hold to release");
  --count;
  if (lock.hold->session_count == 0 && lock.hold->xact_count == 0) {
    release_hold(lock, key, requester, cause);
  }
}

void PgEngine::release_hold(Lock& lock, PgLockKey key, int requester, const std::string& cause) {
  const Hold hold = *lock.hold;
  lock.hold.reset();
  for (const PgTag& owner : hold.owners) {
    notify(PgLockEvent{.kind = PgLockEvent::Kind::released,
                       .pid = hold.pid,
                       .key = key,
                       .owner = owner,
                       .requester = requester,
                       .cause = cause});
  }
  grant_next(key);
}

// The lock on key is free: the first waiter takes it, and its statement finishes.
void PgEngine::grant_next(PgLockKey key) {
  auto it = locks_.find(key);
  if (it == locks_.end()) return;
  if (it->second.hold || it->second.waiters.empty()) {
    if (!it->second.hold && it->second.waiters.empty()) locks_.erase(it);
    return;
  }
  const int64_t pid = it->second.waiters.front();
  it->second.waiters.pop_front();
  Session& session = sessions_.at(pid);
  const Wait wait = std::move(*session.wait);
  session.wait.reset();
  const auto saved_grants = std::exchange(grants_in_statement_, {});
  const auto saved_token = std::exchange(token_in_statement_, std::nullopt);
  const bool taken = try_take(pid, session, key, wait.xact, wait.tag);
  LOCKSTEP_SIM_CHECK(taken, "a free lock goes to its first waiter");
  Outcome out;
  PgResult failure;
  std::optional<std::string> value = std::string();
  bool failed = false;
  if (wait.statement.shape == PgStatement::Shape::from) {
    std::optional<std::optional<std::string>> second =
        call(pid, session, wait.statement.second, wait.tag, failure);
    failed = !second.has_value();
    if (!failed) value = *second;
  }
  for (PgLockEvent& grant : grants_in_statement_) {
    if (!failed) grant.token = token_in_statement_;
    notify(std::move(grant));
  }
  grants_in_statement_ = saved_grants;
  token_in_statement_ = saved_token;
  if (failed) {
    out = error(session, failure.sqlstate, failure.error, failure.notices);
  } else {
    out.result = one_value(std::move(value));
    out.result.notices = std::move(failure.notices);
  }
  end_statement(pid, session, failed, out);
  woken_.push_back(Woken{.pid = pid, .result = std::move(out.result)});
  if (!out.aborted_wal.empty()) make_durable(out.aborted_wal);  // the WAL writer, soon enough
}

std::optional<std::string> PgEngine::nextval(Session& session, const std::string& name,
                                             PgResult& error) {
  auto it = sequences_.find(name);
  if (it == sequences_.end()) {
    error.sqlstate = "42P01";
    error.error = fmt::format("relation \"{}\" does not exist", name);
    return std::nullopt;
  }
  // nextval_internal of PostgreSQL 15's sequence.c, for INCREMENT 1 and CACHE 1.
  PgSequence& seq = it->second;
  int64_t last = seq.last_value;
  int64_t next = last;
  int64_t result = last;
  int64_t fetch = 1;
  int64_t log = seq.log_cnt;
  int64_t rescnt = 0;
  if (!seq.is_called) {
    ++rescnt;
    --fetch;
  }
  bool logit = false;
  if (log < fetch || !seq.is_called) {
    fetch = log = fetch + kSeqLogVals;
    logit = true;
  }
  while (fetch > 0) {
    ++next;
    --fetch;
    if (rescnt < 1) {
      --log;
      ++rescnt;
      last = next;
      if (rescnt == 1) result = next;
    }
  }
  if (logit) {
    session.unflushed.emplace_back(name,
                                   PgSequence{.last_value = next, .log_cnt = 0, .is_called = true});
  }
  seq = PgSequence{.last_value = last, .log_cnt = log, .is_called = true};
  token_in_statement_ = static_cast<uint64_t>(result);
  return std::to_string(result);
}

void PgEngine::end_statement(int64_t pid, Session& session, bool failed, Outcome& outcome) {
  if (session.in_block) {
    if (failed && !session.failed) {
      // An error aborts the transaction at once (its locks go now); the block stays, failed,
      // until COMMIT or ROLLBACK.
      PgWal wal = end_block(pid, session, false, -1);
      session.in_block = true;
      session.failed = true;
      outcome.aborted_wal.insert(outcome.aborted_wal.end(), wal.begin(), wal.end());
    }
    return;
  }
  // Outside a block the statement was its own transaction: it ends here.
  PgWal wal = end_block(pid, session, !failed, -1);
  if (!wal.empty()) outcome.aborted_wal.insert(outcome.aborted_wal.end(), wal.begin(), wal.end());
}

PgWal PgEngine::end_block(int64_t pid, Session& session, bool commit, int requester) {
  const std::vector<PgLockKey> keys = std::exchange(session.xact_keys, {});
  PgWal wal = std::exchange(session.unflushed, {});
  session.in_block = false;
  session.failed = false;
  for (const PgLockKey& key : keys) {
    release_one(pid, key, true, requester, commit ? "commit" : "rollback");
  }
  if (commit) {
    make_durable(wal);
    return {};
  }
  return wal;
}

PgEngine::Outcome PgEngine::wait_timed_out(int64_t pid) {
  Session& session = sessions_.at(pid);
  LOCKSTEP_SIM_CHECK(session.wait.has_value(), "a timeout of a wait");
  std::deque<int64_t>& waiters = locks_.at(session.wait->key).waiters;
  waiters.erase(std::find(waiters.begin(), waiters.end(), pid));
  const PgLockKey key = session.wait->key;
  session.wait.reset();
  grant_next(key);  // erases an entry left without holder or waiter
  Outcome out = error(session, "55P03", "canceling statement due to lock timeout");
  end_statement(pid, session, true, out);
  return out;
}

PgWal PgEngine::end_session(int64_t pid, int requester, const std::string& cause) {
  auto it = sessions_.find(pid);
  if (it == sessions_.end()) return {};
  Session& session = it->second;
  if (session.wait) {
    std::deque<int64_t>& waiters = locks_.at(session.wait->key).waiters;
    waiters.erase(std::find(waiters.begin(), waiters.end(), pid));
    const PgLockKey key = session.wait->key;
    session.wait.reset();
    grant_next(key);
  }
  PgWal wal = std::move(session.unflushed);
  std::vector<PgLockKey> held;
  for (const auto& [key, lock] : locks_) {
    if (lock.hold && lock.hold->pid == pid) held.push_back(key);
  }
  sessions_.erase(it);
  for (const PgLockKey& key : held) release_hold(locks_.at(key), key, requester, cause);
  return wal;
}

std::vector<PgEngine::Woken> PgEngine::take_woken() { return std::exchange(woken_, {}); }

void PgEngine::crash(const std::string& cause) {
  for (auto& [key, lock] : locks_) {
    if (!lock.hold) continue;
    const Hold hold = *lock.hold;
    for (const PgTag& owner : hold.owners) {
      notify(PgLockEvent{.kind = PgLockEvent::Kind::released,
                         .pid = hold.pid,
                         .key = key,
                         .owner = owner,
                         .requester = -1,
                         .cause = cause});
    }
  }
  locks_.clear();
  sessions_.clear();
  woken_.clear();
  sequences_ = durable_;
}

void PgEngine::make_durable(const PgWal& wal) {
  for (const auto& [name, state] : wal) {
    durable_[name] = state;
    durable_log_.emplace_back(name, state);
  }
}

PgWal PgEngine::take_durable_log() { return std::exchange(durable_log_, {}); }

void PgEngine::restore(std::map<std::string, PgSequence> durable) {
  durable_ = std::move(durable);
  sequences_ = durable_;
}

}  // namespace lockstep::sim
