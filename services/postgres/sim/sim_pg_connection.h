#pragma once
// The PgConnection seam in the simulator: a client's sessions with a simulated PostgreSQL server
// over the World's network.
//
// SimPgHost is the client's host: its kernel's side of every connection, on a network node of
// its own ("NAME-host") that the process's pauses and crash do not stop. It answers the server's
// keepalive probes while a socket is open and its process lives (stopped or not), resets it once
// the process is gone or its program has ended, and sends a closed socket's FIN, retransmitted
// (200 ms, doubling, 8 tries) while the network loses it. When the process crashes, its kernel
// closes every socket (close_all). A partition of the client cuts its host's links.
//
// SimPgConnection: open() sends a startup packet and waits (on the client's clock) for the
// session's pid; execute() sends one statement and parks the calling fiber until its result
// arrives or its wait passes, command_timeout_us or the caller's longer wait_us_min (then the connection is closed, FIN sent, and the late
// result goes to nobody). A server that died or restarted since the session opened resets the
// connection at once when the link is up (connection_lost: the statement was written, as libpq
// writes it, before the reset was read), and is a timeout when it is not.
// reset_all(for_us) is the `reset` fault on the client's host: every open connection is reset at
// once, a statement (or startup) still waiting ends as connection_lost (one on the wire is lost
// with it), the server's end hears the RST over the network and ends the session (its advisory
// locks with it; if the RST is lost, keepalive ends it later), and for for_us more every new
// connection is refused (connection_error). No draw: a run without a reset runs as before.
// The tag the host carries (the lock operation the client is in) goes with every statement, so
// the server's lease facts name their owner. Destroying an open connection sends nothing (the run
// is over): adapters close() what they are done with.
//
// Invariants: calls come from a fiber of the client's node, one at a time per connection; a
// result is returned to the statement that sent it and to no other.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "services/postgres/client/pg_connection.h"
#include "services/postgres/sim/pg_server.h"
#include "sim/world.h"

namespace lockstep::sim {

struct SimPgClientOptions {
  int64_t command_timeout_us = 1'000'000;  // on the client's clock
  int64_t connect_timeout_us = 1'000'000;
  // A pooled connection: any client's fiber may call it, its statements pipelined in the order
  // sent (the known-bad shared session). Otherwise only the host's client node calls it.
  bool any_caller = false;
};

class SimPgConnection;

class SimPgHost final : public PgPeer, public std::enable_shared_from_this<SimPgHost> {
 public:
  // target: the server new sessions go to (the primary, which a failover changes). lives: whether
  // the process that owns the sockets still runs (default: client_node is up and its program has
  // not ended; a pooler shared by every client lives while any client's program runs).
  SimPgHost(World& world, NodeId client_node, int client, std::function<PgServer*()> target,
            std::function<bool()> lives = nullptr);

  NodeId node() const override { return node_; }
  int client() const override { return client_; }
  bool socket_open(uint64_t conn) const override;
  void closed_by_server(uint64_t conn, PgResult why) override;
  // What the server said as it closed conn, if it did (taken: read once).
  std::optional<PgResult> take_closing(uint64_t conn);

  World& world() { return world_; }
  NodeId client_node() const { return client_node_; }
  PgServer* target() const { return target_(); }
  // The lock operation the client has in flight, sent with each statement.
  PgTag& tag() { return tag_; }

  uint64_t new_connection();
  // owner: the connection told of a reset (reset_all).
  void socket_opened(uint64_t conn, PgServer& server, SimPgConnection& owner) {
    open_[conn] = {.server = &server, .owner = &owner};
  }
  void socket_closed(uint64_t conn) {
    open_.erase(conn);
    closing_.erase(conn);
  }
  // Closes the socket of conn: its FIN to server, retransmitted until acknowledged.
  void close_socket(PgServer& server, uint64_t conn);
  // The process died: its kernel closes every socket it had.
  void close_all();
  // The `reset` fault (see above). Returns how many connections it reset.
  size_t reset_all(TimeUs for_us);
  bool resetting() const { return world_.now_us() < resetting_until_us_; }

 private:
  void send_fin(PgServer* server, uint64_t conn, std::shared_ptr<bool> acked, int attempt);

  World& world_;
  NodeId client_node_;
  int client_;
  std::function<PgServer*()> target_;
  std::function<bool()> lives_;
  NodeId node_;
  PgTag tag_;
  uint64_t next_connection_ = 0;
  struct OpenSocket {
    PgServer* server = nullptr;
    SimPgConnection* owner = nullptr;
  };
  std::map<uint64_t, OpenSocket> open_;   // open sockets: walked in conn order
  std::map<uint64_t, PgResult> closing_;  // what servers said as they closed sockets
  TimeUs resetting_until_us_ = 0;
};

class SimPgConnection final : public PgConnection {
 public:
  SimPgConnection(std::shared_ptr<SimPgHost> host, PgSettings settings, SimPgClientOptions options);
  ~SimPgConnection() override;
  SimPgConnection(const SimPgConnection&) = delete;
  SimPgConnection& operator=(const SimPgConnection&) = delete;

  PgResult open() override;
  bool is_open() const override { return pid_ != 0; }
  int64_t session_pid() const override { return pid_; }
  using PgConnection::execute;
  PgResult execute(const std::string& sql, int64_t wait_us_min) override;
  void close() override;
  std::string endpoint() const override;
  // Its socket was reset (SimPgHost::reset_all): the RST to the server, the waiting call woken.
  void reset_by_host();

 private:
  struct Request {
    uint64_t id = 0;
    bool answered = false;
    bool abandoned = false;
    bool reset = false;  // its connection was reset before the result came
    PgResult result;
    Waiter waiter;
  };
  // Parks until the request is answered or timeout_us of the client's clock pass.
  bool wait(Request& request, Waiter waiter, int64_t timeout_us);
  // The reply path: the server's result, sent back to the host, wakes the waiter.
  PgServer::Reply reply_to(std::shared_ptr<Request> request, Waiter waiter, PgServer& server);
  bool link_up(const PgServer& server) const;
  void forget();  // the session is gone and the socket with it (no FIN: the server closed it)

  std::shared_ptr<SimPgHost> host_;
  PgSettings settings_;
  SimPgClientOptions options_;
  PgServer* server_ = nullptr;  // of the open session, or of the startup in flight
  uint64_t incarnation_ = 0;    // the server's, when the session opened
  uint64_t conn_ = 0;
  int64_t pid_ = 0;
  uint64_t next_request_ = 0;
  std::weak_ptr<Request> in_flight_;  // the startup or statement waiting, if any
};

class SimPgConnector final : public PgConnector {
 public:
  SimPgConnector(std::shared_ptr<SimPgHost> host, SimPgClientOptions options)
      : host_(std::move(host)), options_(options) {}
  std::unique_ptr<PgConnection> connect(const PgSettings& settings) override {
    return std::make_unique<SimPgConnection>(host_, settings, options_);
  }

 private:
  std::shared_ptr<SimPgHost> host_;
  SimPgClientOptions options_;
};

}  // namespace lockstep::sim
