#pragma once
// The PgConnection seam: one PostgreSQL session (a backend process on the server, tied to one
// connection) that runs one SQL statement at a time with the simple query protocol.
//
// Real: libpq over TCP (services/postgres/adapter/libpq_connection.h). Sim: a connection over the
// simulated network to a simulated server (services/postgres/sim). Adapters see only this, so they
// run unchanged in both worlds.
//
// A session is explicit because everything an advisory lock is hangs on it: a session lock lasts
// as long as the session, and a new session holds nothing. So a connection never reconnects by
// itself. open() starts a session; once it is lost (the server ended it, the connection failed,
// or a statement timed out, after which the connection's state is unknown and it is closed),
// is_open() is false until the caller opens a new one and knows it starts empty.
//
// Invariants: execute() blocks until the reply arrives or its wait passes: the command timeout, or
// the caller's wait_us_min when that is longer (a session holding locks must not be closed by a
// timeout sooner than the validity reported for them runs out; see AdvisoryAdapter). A transport
// failure comes back as an IoStatus (timeout, connection_error), never as an exception. A server
// error at ERROR level is a reply (status ok, sqlstate set) and the session goes on; a FATAL one
// (pg_terminate_backend: 57P01) ends the session and comes back as connection_error with its
// sqlstate. After a timeout the late reply goes to nobody: the session is closed.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/io_status.h"

namespace lockstep {

// One statement's outcome. Values are PostgreSQL's text output ("t", "42", "" for void), NULL as
// nullopt.
struct PgResult {
  IoStatus status = IoStatus::ok;
  std::string command_tag;  // "SELECT 1", "BEGIN", "COMMIT", "ROLLBACK", "SET", ...
  std::vector<std::vector<std::optional<std::string>>> rows;
  std::string sqlstate;  // the error's SQLSTATE ("55P03", "25P02", "57P01"); "" when none
  std::string error;     // the server's message for that error
  // WARNING and NOTICE messages the statement raised, in order (severity first: "WARNING: ...").
  std::vector<std::string> notices;
  std::string message;  // transport failures: what went wrong

  bool ok() const { return status == IoStatus::ok && sqlstate.empty(); }
  // The first column of the first row, when there is one and it is not NULL.
  std::optional<std::string> scalar() const;
};

// "t", "(null)", "ERROR 55P03 ...", "timeout: ...": for traces and tests.
std::string describe(const PgResult& result);

// Linux's keepalive, which a session that sets none of tcp_keepalives_idle, _interval, _count
// keeps (seconds, probes).
inline constexpr int64_t kKeepaliveIdleDefaultS = 7200;
inline constexpr int64_t kKeepaliveIntervalDefaultS = 75;
inline constexpr int64_t kKeepaliveCountDefault = 9;

// Session settings sent when a session starts (libpq's `options='-c NAME=VALUE'`), so they hold
// from its first statement: lock_timeout, tcp_keepalives_idle/interval/count, tcp_user_timeout.
using PgSettings = std::vector<std::pair<std::string, std::string>>;

class PgConnection {
 public:
  virtual ~PgConnection() = default;
  // Starts a session when none is open (closing nothing). ok: the session's backend pid is
  // session_pid(). A failure leaves it closed.
  virtual PgResult open() = 0;
  virtual bool is_open() const = 0;
  // The backend pid of the open session, 0 when none.
  virtual int64_t session_pid() const = 0;
  // Runs one statement on the open session, waiting for its reply for the command timeout or
  // wait_us_min, whichever is longer; connection_error when none is open.
  virtual PgResult execute(const std::string& sql, int64_t wait_us_min) = 0;
  PgResult execute(const std::string& sql) { return execute(sql, 0); }
  // Ends the session from the client's side (its locks end when the server notices). Idempotent.
  virtual void close() = 0;
  // "127.0.0.1:5432", "sim:postgres-0": for messages.
  virtual std::string endpoint() const = 0;
};

// Makes connections to one deployment, each a session of its own once opened: an adapter that
// holds several locks at once in separate transactions needs several.
class PgConnector {
 public:
  virtual ~PgConnector() = default;
  virtual std::unique_ptr<PgConnection> connect(const PgSettings& settings) = 0;
};

}  // namespace lockstep
