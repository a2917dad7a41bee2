#pragma once
// PgServer: a simulated PostgreSQL 15 server on its own World node: the PgEngine's state, the
// connections that carry its sessions, their keepalive, crash and restart, and a streaming
// replica to fail over to.
//
// Connections: a client's host (PgPeer: its kernel, which outlives its process) opens one with a
// startup message and gets a session (a backend pid, from 1000 up, never reused); its statements
// run on arrival (in order, on the node's clock: a paused server runs nothing until it resumes);
// its FIN ends the session. A session the server ended (terminated) sends its client FATAL 57P01
// at once, which the client reads at its next statement; a statement that reaches the ended
// session anyway gets the same, later ones a reset connection.
//
// Keepalive, as the kernel does it for a backend's socket with the session's
// tcp_keepalives_idle / _interval / _count (seconds; 0: Linux's 7200 / 75 / 9) and
// tcp_user_timeout (ms; 0: off): after `idle` without hearing from the client, the server probes
// its host, again every `interval` while unanswered; `count` unanswered probes (or unanswered
// for tcp_user_timeout, when set) end the session. A host answers while its socket is open and
// its process lives, even stopped (its kernel does), and resets a socket whose process is gone or
// whose program has ended (the process exited). So a partitioned or crashed client's session ends
// only when the server notices, and a paused one's never does.
//
// Crash (World::crash(node())): every session ends (their locks are released: a session lock's
// promise is kept by ending it), clients waiting on a statement see the connection close, and
// sequences go back to their durable state. Restart: an empty server.
//
// Replication: what becomes durable on a primary reaches its replica replication_delay_ms of
// true time later, unless the primary crashed meanwhile (it was never sent). promote() makes a
// replica a primary from what it received: it holds no advisory lock (they are not replicated).
//
// Invariants: a PgServer outlives its World's run; a replica takes no session until promoted.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "services/postgres/sim/pg_engine.h"
#include "sim/world.h"

namespace lockstep::sim {

// A client host's kernel, as a server sees it through a connection.
class PgPeer {
 public:
  virtual ~PgPeer() = default;
  virtual NodeId node() const = 0;  // where its packets come from
  virtual int client() const = 0;   // the harness's client (-1: none)
  // Whether the socket of connection `conn` is still open in a live process: a keepalive probe is
  // answered (true) or reset (false).
  virtual bool socket_open(uint64_t conn) const = 0;
  // The server ended conn's session and said why (FATAL 57P01): the client's kernel keeps it for
  // the client's next read, whatever becomes of the server meanwhile.
  virtual void closed_by_server(uint64_t conn, PgResult why) = 0;
};

struct PgServerOptions {
  std::string name = "postgres-0";
  int64_t first_pid = 1000;
  PgLockObserver* observer = nullptr;
  ClockSpec clock;
  bool replica = false;  // a standby: no sessions until promote()
};

class PgServer {
 public:
  using Reply = std::function<void(PgResult)>;

  PgServer(World& world, PgServerOptions options);
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  NodeId node() const { return node_; }
  const std::string& name() const { return options_.name; }
  PgEngine& engine() { return engine_; }
  bool accepting() const { return world_.alive(node_) && !options_.replica; }

  // Arrivals at the server (run on its node). `reply` sends a result back to the client; it is
  // called once per startup or statement, now or later, or never when the server dies first.
  void startup(uint64_t conn, std::shared_ptr<PgPeer> peer, const PgSettings& settings,
               Reply reply);
  void query(uint64_t conn, const std::string& sql, const PgTag& tag, Reply reply);
  // The client closed the connection (its FIN). Unknown or ended connections are ignored.
  void client_closed(uint64_t conn);

  // pg_terminate_backend(pid) from an administrator's session (a fault): false when no such
  // session.
  bool terminate(int64_t pid);
  // The session of connection conn, 0 when it has none (never opened, or ended).
  int64_t pid_of(uint64_t conn) const;
  // The live sessions of connections from host, ascending.
  std::vector<int64_t> pids_from(NodeId host) const;

  // Streams what becomes durable here to `replica` (a PgServer made with replica = true).
  void add_replica(PgServer& replica, int64_t replication_delay_ms);
  void promote();

 private:
  struct Conn {
    int64_t pid = 0;
    std::shared_ptr<PgPeer> peer;
    bool ended = false;
    std::string end_sqlstate;  // "57P01" when terminated, reported once
    std::string end_error;
    std::optional<Reply> pending;  // a statement waiting for a lock
    // Its client is gone (a FIN, an RST, keepalive gave up) while a statement waited: a backend
    // blocked on a lock reads nothing, so it notices only as it sends the statement's result.
    std::string gone_cause;
    int gone_requester = -1;  // whose close it was (-1: the server's keepalive)
    uint64_t wait_id = 0;     // which wait a lock_timeout timer is for
    // keepalive
    int64_t idle_us = 0;
    int64_t interval_us = 0;
    int64_t count = 0;
    int64_t user_timeout_us = 0;
    int64_t last_heard_us = 0;  // the server's monotonic clock
    int64_t unanswered = 0;
    bool probing = false;  // a probe round is under way (any packet from the client ends it)
    int64_t unanswered_since_us = 0;  // the server's monotonic clock
    uint64_t keepalive_gen = 0;
  };

  void after_engine(const PgEngine::Outcome* outcome);
  void reconcile_ended();
  void send_woken();
  void replicate();
  void schedule_wal_writer(const PgWal& wal);
  void end_conn(uint64_t conn, Conn& c, int requester, const std::string& cause);
  // The client's side of conn is gone: the session ends now, or, with a statement waiting, when
  // that statement answers (PostgreSQL without client_connection_check_interval).
  void peer_gone(uint64_t conn, Conn& c, int requester, const std::string& cause);
  // Answers conn's waiting statement, or ends the session when its client is gone.
  void answer_pending(uint64_t conn, Conn& c, PgResult result);
  void schedule_keepalive(uint64_t conn, Conn& c, int64_t local_delay_us);
  void keepalive_check(uint64_t conn, uint64_t gen);
  void send_probe(uint64_t conn, Conn& c);
  void probe_timeout(uint64_t conn, uint64_t gen);
  void on_probe_answer(uint64_t conn, uint64_t gen, bool open);
  // Runs fn when the server's monotonic clock has advanced by local_delay_us (drift changes
  // re-time it: World::deliver_at_local).
  void at_local(int64_t local_delay_us, std::function<void()> fn);
  int64_t local_now_us() const;  // the server's monotonic clock
  void on_crash();
  Conn* live(uint64_t conn);

  World& world_;
  PgServerOptions options_;
  NodeId node_;
  PgEngine engine_;
  int64_t next_pid_;
  std::map<uint64_t, Conn> conns_;  // by connection id (ordered: nothing walks it by hash)
  std::map<int64_t, uint64_t> conn_of_pid_;
  uint64_t next_wait_id_ = 0;
  PgServer* replica_ = nullptr;
  int64_t replication_delay_ms_ = 0;
};

}  // namespace lockstep::sim
