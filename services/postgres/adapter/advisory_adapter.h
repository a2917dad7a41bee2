#pragma once
// PostgreSQL advisory locks as a LockAdapter, in three modes:
// - session_try:      SELECT pg_try_advisory_lock(K) on the client's session; the Locker retries
//                     contention.
// - session_blocking: SELECT pg_advisory_lock(K), waiting in the server's queue for at most
//                     lock_wait_ms (the session's lock_timeout; 55P03 is contention, after
//                     which it unlocks K: a grant that races the timeout stays held).
// - xact:             BEGIN; SELECT pg_try_advisory_xact_lock(K) on a session of its own per held
//                     lock; release is COMMIT (a lost session or a ROLLBACK ends it too).
// K is a 64-bit hash of key_prefix + key (lock_key()). With a fencing sequence, the grant and its
// token are one statement (CASE WHEN pg_try_...(K) THEN nextval(S) END, or SELECT nextval(S)
// FROM pg_advisory_lock(K)): tokens rise in grant order (a sequence never goes back, and comes
// back ahead after a crash), unless a failover promotes a replica that missed the sequence's log.
//
// What an advisory lock is, and what this adapter claims: the lock is held by a session, without
// expiry. The server ends it only with the session: the client's unlock or close, its death, a
// pg_terminate_backend, a crash or failover, or the server's keepalive giving up on an unreachable
// client (tcp_keepalives_idle + _interval x _count, which the adapter sets for its sessions; or
// tcp_user_timeout when set). A client cannot learn of such an end without asking, so the validity
// it reports is the requested TTL, a bound the holder imposes on itself, cut to the shortest time
// in which keepalive could end the session of a client cut off right after the request was sent
// (validity_end_us): past that, a partitioned holder may have lost it. extend_lock asks the
// session whether it still lives (a round trip), and so renews that bound.
//
// A session is never shared by two locks of one key: session locks are re-entrant, so a second
// Lock on a key this session holds is refused as contention (the first Lock is another owner). A
// lost session (its connection failed, it was terminated, a statement timed out and its state is
// unknown, so it was closed) takes every lock it held. So that such a close never cuts short a
// validity this adapter reported, a statement on a session holding locks waits for its reply until
// the last of their validities has run out (by the client's clock), the command timeout at least: the adapter forgets them and opens a new
// session for the next acquire. A write that timed out is outcome_unknown (the lock may have been
// taken; the closed session ends it); a session found gone is not_owner for release and extend.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/adapter.h"
#include "lockstep/clock.h"
#include "services/postgres/client/pg_connection.h"

namespace lockstep {

enum class AdvisoryMode { session_try, session_blocking, xact };

struct AdvisoryAdapterOptions {
  PgConnector* connector = nullptr;  // required; one client's (the adapter is not thread-safe)
  // Required: the client's monotonic clock, the one its Locker counts validity on.
  Clock* clock = nullptr;
  AdvisoryMode mode = AdvisoryMode::session_try;
  std::string key_prefix = "lockstep:";
  std::string fencing_sequence;  // "": no tokens
  int64_t lock_wait_ms = 100;    // session_blocking: how long one attempt waits in the queue
  // The sessions' keepalive: how soon the server ends the session of a client it cannot reach.
  int64_t keepalive_idle_s = 2;
  int64_t keepalive_interval_s = 1;
  int64_t keepalive_count = 2;
  int64_t user_timeout_ms = 0;  // tcp_user_timeout; 0: off
  size_t sessions_max = 8;      // xact: sessions held open at once
};

// The advisory lock key of `key`: FNV-1a 64 of prefix + key, as a signed bigint.
int64_t advisory_key(const std::string& prefix, const std::string& key);

// The shortest time in which a server with these settings can end, by its keepalive, the session
// of a client it cannot reach, counted from the client's last word (user_timeout_ms 0: off).
int64_t advisory_session_loss_bound_us(int64_t keepalive_idle_s, int64_t keepalive_interval_s,
                                       int64_t keepalive_count, int64_t user_timeout_ms);

class AdvisoryAdapter final : public LockAdapter {
 public:
  explicit AdvisoryAdapter(AdvisoryAdapterOptions options);
  ~AdvisoryAdapter() override;

  std::string_view name() const override;
  FencingSupport fencing() const override {
    return options_.fencing_sequence.empty() ? FencingSupport::none : FencingSupport::monotonic;
  }
  AdapterResult create_lock(const LockSpec& spec) override;
  AdapterResult release_lock(const LockSpec& spec) override;
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override;
  AdapterResult is_valid_lock(const LockSpec& spec) override;
  int64_t validity_end_us(const LockSpec& spec, int64_t requested_at_us,
                          int64_t ttl_ms) const override;

  // The shortest time in which the server's keepalive can end the session of a client it cannot
  // reach, counted from the client's last word.
  int64_t session_loss_bound_us() const;
  int64_t lock_key(const std::string& key) const { return advisory_key(options_.key_prefix, key); }
  // The statements this adapter sends (the simulated server and the tests know them).
  std::string acquire_statement(const std::string& key) const;
  // Whether, as far as this client knows, spec's lock is still held: taken, not released, and
  // its session not found lost (no round trip).
  bool believes_held(const LockSpec& spec) const;

 private:
  struct Held {
    std::string value;  // the owner's
    // The end of the validity last reported for it (validity_end_us from the request that
    // granted or extended it), on the client's clock.
    int64_t valid_until_us = 0;
  };
  struct Session {
    std::unique_ptr<PgConnection> connection;
    std::map<std::string, Held> held;  // by key
  };

  PgSettings settings() const;
  // The session that holds spec's lock (value included), or nullptr.
  Session* holding(const LockSpec& spec);
  bool held_anywhere(const std::string& key) const;
  // An open session for a new lock: the session (session modes), or an idle one (xact).
  Session* session_for_acquire(AdapterResult& failure);
  void lose(Session& session);  // closed or found gone: everything it held is gone
  // Runs sql on the session. One that holds locks waits for the reply until the last validity
  // reported for them has run out at least: a timeout closes the session, and its locks with it.
  PgResult run(Session& session, const std::string& sql);
  AdapterResult after_grant(Session& session, const LockSpec& spec, const PgResult& result,
                            int64_t requested_at_us);
  AdapterResult failed(Session& session, const PgResult& result, const char* op, bool writes);
  // A grant that came after the validity it could promise had ended: given back, never held.
  AdapterResult give_back_late(Session& session, const LockSpec& spec);
  // A round trip on the session: it lives, and with it the lock.
  AdapterResult check_alive(Session& session, const char* op, bool reads);

  AdvisoryAdapterOptions options_;
  std::vector<std::unique_ptr<Session>> sessions_;  // session modes: at most one
};

}  // namespace lockstep
