#pragma once
// The PgConnection seam over libpq (PostgreSQL 15's client library), for real servers.
//
// open() connects without blocking past connect_timeout_ms (PQconnectStartParams polled on its
// socket) and passes the session settings in the startup packet (`options=-c NAME=VALUE ...`), so
// they hold from the session's first statement. execute() sends the statement with PQsendQuery
// and waits for its results on the socket for at most command_timeout_ms (or the caller's longer
// wait_us_min): past that, the session's
// state is unknown, so it is closed (PQfinish) and the call returns timeout. WARNING and NOTICE
// messages the server raises during a statement are collected into its PgResult.
//
// Invariants: one statement in flight at a time; a connection is never reopened behind the
// caller's back; every wait is bounded. Not thread-safe, except abort(), which may be called from
// another thread and only shuts the socket down (as the death of the client's process would).
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "services/postgres/client/pg_connection.h"

struct pg_conn;
struct pg_result;

namespace lockstep {

struct LibpqOptions {
  std::string host = "127.0.0.1";
  int port = 5432;
  std::string user = "lockstep";
  std::string dbname = "postgres";
  int64_t connect_timeout_ms = 5'000;
  int64_t command_timeout_ms = 1'000;
  PgSettings settings;
};

class LibpqConnection final : public PgConnection {
 public:
  explicit LibpqConnection(LibpqOptions options);
  ~LibpqConnection() override;
  LibpqConnection(const LibpqConnection&) = delete;
  LibpqConnection& operator=(const LibpqConnection&) = delete;

  PgResult open() override;
  bool is_open() const override { return conn_ != nullptr; }
  int64_t session_pid() const override { return pid_.load(); }
  using PgConnection::execute;
  PgResult execute(const std::string& sql, int64_t wait_us_min) override;
  void close() override;
  std::string endpoint() const override;

  // Shuts the socket down (both ways) without freeing anything: the server sees the connection end
  // as it would at the death of the client's process. The next execute() fails.
  void abort();

 private:
  static void on_notice(void* self, const ::pg_result* result);
  PgResult fail(IoStatus status, std::string message);
  bool wait_socket(short events, int64_t deadline_ns);

  LibpqOptions options_;
  pg_conn* conn_ = nullptr;
  std::atomic<int64_t> pid_ = 0;      // read by other threads (a fault ending the session)
  std::vector<std::string> notices_;  // raised during the statement in flight
  std::mutex socket_mutex_;           // guards socket_ against abort() from another thread
  int socket_ = -1;
};

// Makes LibpqConnections to one server; tracks the live ones so a client's death can abort them.
class LibpqConnector final : public PgConnector {
 public:
  explicit LibpqConnector(LibpqOptions base) : base_(std::move(base)) {}
  std::unique_ptr<PgConnection> connect(const PgSettings& settings) override;
  // Aborts every connection this connector made that still exists (thread-safe).
  void abort_all();
  // The sessions of its connections that are open now (thread-safe).
  std::vector<int64_t> session_pids();

 private:
  class Tracked;
  LibpqOptions base_;
  std::shared_ptr<std::mutex> mutex_ = std::make_shared<std::mutex>();
  std::shared_ptr<std::set<LibpqConnection*>> live_ =
      std::make_shared<std::set<LibpqConnection*>>();
};

}  // namespace lockstep
