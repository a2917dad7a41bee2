#pragma once
// PgEngine: the state of a simulated PostgreSQL 15 server, without time or network: sessions,
// transaction blocks, the advisory lock table and sequences, and the statements of
// pg_statement.h run against them. PgServer (pg_server.h) gives it a node, a network and timers.
//
// What it models, as PostgreSQL 15 does it (the differential test holds it to a real server):
// - Advisory locks are exclusive, held by a session at session level and/or transaction level,
//   re-entrantly (a count of each). pg_advisory_unlock releases one session-level hold (false and a
//   WARNING when there is none); COMMIT and ROLLBACK release the transaction's; a session's end
//   releases everything. A lock free again goes to the first session waiting for it (FIFO).
// - A blocking lock waits; lock_timeout (a session setting, in ms) ends the wait with 55P03.
// - Transaction blocks: an ERROR inside one aborts its transaction at once (its transaction-level
//   locks are released then) and makes every statement but COMMIT and ROLLBACK fail with 25P02
//   until the block ends (COMMIT then answers ROLLBACK); BEGIN inside, or COMMIT/ROLLBACK outside,
//   is a WARNING. A statement outside a block is its own transaction: its transaction-level locks
//   end with it.
// - pg_terminate_backend(pid[, timeout]) ends another session at once (true), its own with FATAL
//   57P01, and warns about a pid that is no backend.
// - Sequences hand out values as nextval does and log 32 ahead (SEQ_LOG_VALS); what survives a
//   crash (and what a replica has) is the last logged state, made durable when its transaction
//   commits (a statement outside a block commits at once), or by the WAL writer shortly after an
//   abort (PgServer times that).
// Not modelled: deadlock detection (a lock_timeout below deadlock_timeout, 1 s, never meets it),
// transactional SET and CREATE SEQUENCE, checkpoints between a start and a crash (the real test
// cluster sets checkpoint_timeout to a day).
//
// Lease facts go to a PgLockObserver: a grant when a session comes to hold a key it did not, a
// release when it holds it no more, each with the tag of the statement that caused it.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "services/postgres/client/pg_connection.h"
#include "services/postgres/sim/pg_statement.h"

namespace lockstep::sim {

// Who sent a statement, for lease facts: the harness's client and the lock operation it was in
// (its owner value and resource key; "" when none, as for an admin or a test).
struct PgTag {
  int client = -1;
  std::string value;
  std::string key;
};

// An advisory lock's key: one bigint (space 1), or two integers (space 2, the first in the high 32
// bits). PostgreSQL keeps the two forms apart (its lock tag's objsubid): pg_advisory_lock(1) and
// pg_advisory_lock(0, 1) are different locks.
struct PgLockKey {
  int64_t value = 0;
  int space = 1;
  auto operator<=>(const PgLockKey&) const = default;
};

struct PgLockEvent {
  enum class Kind { granted, released };
  Kind kind = Kind::granted;
  int64_t pid = 0;
  PgLockKey key;
  PgTag owner;         // the lock operation the session holds the key for
  int requester = -1;  // released: the client whose statement or close ended it; -1 the server
  std::string cause;   // released: "unlock", "commit", "session end (terminated)", ...
  std::optional<uint64_t> token;  // granted: a nextval evaluated in the same statement
};

class PgLockObserver {
 public:
  virtual ~PgLockObserver() = default;
  virtual void on_lock_event(const PgLockEvent& event) = 0;
};

// A sequence's state, as in its heap tuple.
struct PgSequence {
  int64_t last_value = 1;
  int64_t log_cnt = 0;
  bool is_called = false;
};

// WAL records a transaction wrote that are not durable yet: sequence states by name.
using PgWal = std::vector<std::pair<std::string, PgSequence>>;

class PgEngine {
 public:
  explicit PgEngine(PgLockObserver* observer = nullptr) : observer_(observer) {}

  // What a statement came to.
  struct Outcome {
    PgResult result;
    bool waiting = false;        // a blocking lock waits: the result comes later (take_woken)
    bool session_ended = false;  // FATAL: the session is gone (result says why)
    PgWal aborted_wal;           // to make durable later (the WAL writer), after an abort
  };
  // A wait that ended: its session and the statement's result.
  struct Woken {
    int64_t pid = 0;
    PgResult result;
  };

  void open_session(int64_t pid, const PgSettings& settings);
  bool has_session(int64_t pid) const { return sessions_.contains(pid); }
  bool waiting(int64_t pid) const;
  int64_t lock_timeout_ms(int64_t pid) const;
  // A session setting's value as given at its start or by SET (tcp_keepalives_idle, ...).
  std::optional<std::string> setting(int64_t pid, const std::string& name) const;
  Outcome execute(int64_t pid, const std::string& sql, const PgTag& tag);
  // The lock_timeout of pid's wait ran out: its statement fails with 55P03.
  Outcome wait_timed_out(int64_t pid);
  // Ends a session (its client closed, it was terminated, its connection was found dead):
  // releases its locks, cancels its wait. Returns its unflushed WAL (for the WAL writer).
  PgWal end_session(int64_t pid, int requester, const std::string& cause);
  // Waits that ended since the last call, in the order they ended.
  std::vector<Woken> take_woken();
  // The server crashed: every session is gone (their locks released, reported as such), and
  // sequences are back to their durable state.
  void crash(const std::string& cause);
  // The durable state of sequences, and WAL that becomes durable now (commit, WAL writer).
  void make_durable(const PgWal& wal);
  const std::map<std::string, PgSequence>& durable() const { return durable_; }
  // A promoted replica starts from what it received.
  void restore(std::map<std::string, PgSequence> durable);
  // Creates a sequence outside any session (a deployment's setup).
  void create_sequence(const std::string& name);
  // Durable WAL since the last call, in order: what a replica is sent.
  PgWal take_durable_log();

  std::vector<int64_t> session_pids() const;  // ascending
  // Whether pid's session is inside a transaction block.
  bool in_block(int64_t pid) const;
  // Who holds key now (0: nobody).
  int64_t holder(PgLockKey key) const;
  int64_t holder(int64_t key) const { return holder(PgLockKey{.value = key}); }

 private:
  struct Hold {
    int64_t pid = 0;
    int session_count = 0;
    int xact_count = 0;
    // The lock operations it was granted to, in order: one, unless the session is shared.
    std::vector<PgTag> owners;
  };
  struct Wait {
    PgLockKey key;
    bool xact = false;
    PgStatement statement;
    PgTag tag;
  };
  struct Session {
    bool in_block = false;
    bool failed = false;
    int64_t lock_timeout_ms = 0;
    std::map<std::string, std::string> settings;
    std::optional<Wait> wait;
    std::vector<PgLockKey> xact_keys;  // keys held at transaction level, in order taken
    PgWal unflushed;                   // sequence records of the open transaction
  };
  struct Lock {
    std::optional<Hold> hold;
    std::deque<int64_t> waiters;
  };

  Outcome run(int64_t pid, Session& session, const PgStatement& statement, const PgTag& tag);
  Outcome select(int64_t pid, Session& session, const PgStatement& statement, const PgTag& tag);
  // Evaluates a call that does not wait; nullopt and an error in `error` on failure.
  std::optional<std::optional<std::string>> call(int64_t pid, Session& session, const PgCall& c,
                                                 const PgTag& tag, PgResult& error);
  bool try_take(int64_t pid, Session& session, PgLockKey key, bool xact, const PgTag& tag);
  void release_one(int64_t pid, PgLockKey key, bool xact, int requester, const std::string& cause);
  void release_hold(Lock& lock, PgLockKey key, int requester, const std::string& cause);
  void grant_next(PgLockKey key);
  std::optional<std::string> nextval(Session& session, const std::string& name, PgResult& error);
  Outcome error(Session& session, std::string sqlstate, std::string message,
                std::vector<std::string> notices = {});
  // Ends the statement's implicit transaction, or notes the block's failure.
  void end_statement(int64_t pid, Session& session, bool failed, Outcome& outcome);
  PgWal end_block(int64_t pid, Session& session, bool commit, int requester);
  void notify(PgLockEvent event);

  PgLockObserver* observer_;
  std::map<int64_t, Session> sessions_;
  std::map<PgLockKey, Lock> locks_;
  std::map<std::string, PgSequence> sequences_;
  std::map<std::string, PgSequence> durable_;
  PgWal durable_log_;
  std::vector<Woken> woken_;
  std::optional<uint64_t> token_in_statement_;  // a nextval of the statement being run
  std::vector<PgLockEvent> grants_in_statement_;
};

}  // namespace lockstep::sim
