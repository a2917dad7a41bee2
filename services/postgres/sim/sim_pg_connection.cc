#include "services/postgres/sim/sim_pg_connection.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "sim/assert.h"

namespace lockstep::sim {

namespace {

constexpr int64_t kFinRtoUs = 200'000;  // TCP's minimum retransmission timeout
constexpr int kFinTriesMax = 8;         // tcp_orphan_retries' default for a closed socket

}  // namespace

SimPgHost::SimPgHost(World& world, NodeId client_node, int client,
                     std::function<PgServer*()> target, std::function<bool()> lives)
    : world_(world),
      client_node_(client_node),
      client_(client),
      target_(std::move(target)),
      lives_(std::move(lives)),
      node_(world.add_node(world.node_name(client_node) + "-host")) {}

bool SimPgHost::socket_open(uint64_t conn) const {
  if (!open_.contains(conn)) return false;
  if (lives_) return lives_();
  if (!world_.alive(client_node_)) return false;
  // A process whose program has ended has exited, closing its sockets.
  const std::vector<NodeId> busy = world_.unfinished_fiber_nodes();
  return std::find(busy.begin(), busy.end(), client_node_) != busy.end();
}

void SimPgHost::closed_by_server(uint64_t conn, PgResult why) {
  if (open_.contains(conn)) closing_[conn] = std::move(why);
}

std::optional<PgResult> SimPgHost::take_closing(uint64_t conn) {
  auto it = closing_.find(conn);
  if (it == closing_.end()) return std::nullopt;
  PgResult why = std::move(it->second);
  closing_.erase(it);
  return why;
}

uint64_t SimPgHost::new_connection() {
  // Unique in the run: the host's node in the high bits.
  return (static_cast<uint64_t>(node_) << 32) | ++next_connection_;
}

void SimPgHost::close_socket(PgServer& server, uint64_t conn) {
  open_.erase(conn);
  closing_.erase(conn);
  send_fin(&server, conn, std::make_shared<bool>(false), 0);
}

void SimPgHost::close_all() {
  const std::map<uint64_t, OpenSocket> sockets = std::move(open_);
  open_.clear();
  for (const auto& [conn, socket] : sockets) {
    send_fin(socket.server, conn, std::make_shared<bool>(false), 0);
  }
}

size_t SimPgHost::reset_all(TimeUs for_us) {
  LOCKSTEP_SIM_CHECK(for_us >= 0, "a reset lasts 0 us or more");
  resetting_until_us_ = std::max(resetting_until_us_, world_.now_us() + for_us);
  // A copy: each reset forgets its socket.
  const std::map<uint64_t, OpenSocket> sockets = open_;
  for (const auto& [conn, socket] : sockets) socket.owner->reset_by_host();
  return sockets.size();
}

void SimPgHost::send_fin(PgServer* server, uint64_t conn, std::shared_ptr<bool> acked,
                         int attempt) {
  // A server whose process is gone has no socket left: its kernel resets ours.
  if (*acked || !world_.alive(server->node())) return;
  const NodeId host = node_;
  World& world = world_;
  world_.network().send(node_, server->node(), "pg FIN", [&world, server, conn, host, acked] {
    server->client_closed(conn);
    world.network().send(
        server->node(), host, "pg FIN ack", [acked] { *acked = true; }, Delivery::buffer);
  });
  if (attempt + 1 >= kFinTriesMax) return;
  world_.scheduler().after(kFinRtoUs << attempt,
                           [self = shared_from_this(), server, conn, acked, attempt] {
                             self->send_fin(server, conn, acked, attempt + 1);
                           });
}

// --- SimPgConnection ---

SimPgConnection::SimPgConnection(std::shared_ptr<SimPgHost> host, PgSettings settings,
                                 SimPgClientOptions options)
    : host_(std::move(host)), settings_(std::move(settings)), options_(options) {
  LOCKSTEP_SIM_CHECK(options_.command_timeout_us > 0 && options_.connect_timeout_us > 0,
                     "positive timeouts");
}

void SimPgConnection::reset_by_host() {
  if (conn_ == 0 || server_ == nullptr) return;
  World& world = host_->world();
  PgServer* server = server_;
  const uint64_t conn = conn_;
  const std::shared_ptr<Request> waiting = in_flight_.lock();
  const bool ends_call = waiting && !waiting->answered && !waiting->abandoned;
  world.trace_linef("pg c{} connection to {} reset{}", host_->client(), server->name(),
                    ends_call ? fmt::format(" with #{} in flight", waiting->id) : "");
  // The RST reaches the server's end too, which ends the session (lost on a cut path: keepalive
  // ends it later, as the host's kernel no longer knows the socket).
  world.network().send(host_->node(), server->node(), "pg RST",
                       [server, conn] { server->client_closed(conn); });
  forget();
  if (ends_call) {
    waiting->reset = true;
    world.wake(waiting->waiter);
  }
}

SimPgConnection::~SimPgConnection() {
  if (conn_ != 0) host_->socket_closed(conn_);
}

std::string SimPgConnection::endpoint() const {
  const PgServer* server = server_ != nullptr ? server_ : host_->target();
  return "sim:" + server->name();
}

bool SimPgConnection::link_up(const PgServer& server) const {
  const Network& network = host_->world().network();
  return network.link_up(host_->node(), server.node()) &&
         network.link_up(server.node(), host_->node());
}

void SimPgConnection::forget() {
  if (conn_ != 0) host_->socket_closed(conn_);
  conn_ = 0;
  pid_ = 0;
  server_ = nullptr;
}

PgServer::Reply SimPgConnection::reply_to(std::shared_ptr<Request> request, Waiter waiter,
                                          PgServer& server) {
  World* world = &host_->world();
  const NodeId host = host_->node();
  const int client = host_->client();
  return [world, host, client, request, waiter, &server](PgResult result) {
    world->network().send(
        server.node(), host, "pg result",
        [world, client, request, waiter, result = std::move(result)]() mutable {
          if (request->answered || request->abandoned || request->reset) {
            world->trace_linef("pg c{} #{} {} result discarded", client, request->id,
                               request->reset ? "reset connection's" : "late");
            return;
          }
          request->answered = true;
          request->result = std::move(result);
          world->wake(waiter);
        },
        Delivery::buffer);
  };
}

bool SimPgConnection::wait(Request& request, Waiter waiter, int64_t timeout_us) {
  World& world = host_->world();
  const ParkResult woke = world.park_for_local(waiter, timeout_us);
  if (woke == ParkResult::woken && request.answered) return true;
  // A result buffered while a pause of the client deferred its wake-up, after the deadline, is
  // still a timeout.
  request.abandoned = true;
  return false;
}

PgResult SimPgConnection::open() {
  if (pid_ != 0) return PgResult{.command_tag = "OPEN"};
  World& world = host_->world();
  LOCKSTEP_SIM_CHECK(
      world.in_fiber() && (options_.any_caller || world.current_node() == host_->client_node()),
      "open() runs on a fiber of the client's node");
  PgServer* server = host_->target();
  const int client = host_->client();
  if (host_->resetting()) {
    world.trace_linef("pg c{} open {}: reset", client, server->name());
    return PgResult{.status = IoStatus::connection_error,
                    .message = fmt::format("connection to {} reset", endpoint())};
  }
  if (!world.alive(server->node()) && link_up(*server)) {
    world.trace_linef("pg c{} open {}: refused (server down)", client, server->name());
    return PgResult{.status = IoStatus::connection_error,
                    .message = fmt::format("connection to {} refused", endpoint())};
  }
  conn_ = host_->new_connection();
  server_ = server;
  host_->socket_opened(conn_, *server, *this);
  auto request = std::make_shared<Request>(Request{.id = ++next_request_});
  const Waiter waiter = world.prepare_park();
  request->waiter = waiter;
  in_flight_ = request;
  world.trace_linef("pg c{} #{} -> {}: startup", client, request->id, server->name());
  const uint64_t conn = conn_;
  std::shared_ptr<PgPeer> peer = host_;
  PgServer::Reply reply = reply_to(request, waiter, *server);
  world.network().send(host_->node(), server->node(), "pg startup",
                       [server, conn, peer, settings = settings_, reply = std::move(reply)] {
                         server->startup(conn, peer, settings, reply);
                       });
  if (!wait(*request, waiter, options_.connect_timeout_us)) {
    if (request->reset) {
      return PgResult{.status = IoStatus::connection_error,
                      .message = fmt::format("connection to {} reset during startup", endpoint())};
    }
    world.trace_linef("pg c{} #{} no session within {}us", client, request->id,
                      options_.connect_timeout_us);
    close();  // the server may still start one: the FIN ends it
    return PgResult{.status = IoStatus::connection_error,
                    .message = fmt::format("no session from {} within {}us", endpoint(),
                                           options_.connect_timeout_us)};
  }
  const std::optional<std::string> pid_text = request->result.scalar();
  int64_t pid = 0;
  if (request->result.status != IoStatus::ok || !pid_text ||
      std::from_chars(pid_text->data(), pid_text->data() + pid_text->size(), pid).ec !=
          std::errc()) {
    world.trace_linef("pg c{} #{} refused: {}", client, request->id, request->result.message);
    forget();
    return PgResult{.status = IoStatus::connection_error, .message = request->result.message};
  }
  pid_ = pid;
  incarnation_ = world.incarnation(server->node());
  world.trace_linef("pg c{} #{} <- session {}", client, request->id, pid);
  return PgResult{.command_tag = "OPEN"};
}

PgResult SimPgConnection::execute(const std::string& sql, int64_t wait_us_min) {
  // A connection shared by several fibers (bad-pg-shared-session's pool) can be closed by one of
  // them while another is between its open and this call: no server, no session.
  if (pid_ == 0 || server_ == nullptr) {
    return PgResult{.status = IoStatus::connection_error, .message = "no session is open"};
  }
  World& world = host_->world();
  LOCKSTEP_SIM_CHECK(
      world.in_fiber() && (options_.any_caller || world.current_node() == host_->client_node()),
      "execute() runs on a fiber of the client's node");
  PgServer* server = server_;
  const int client = host_->client();
  if (std::optional<PgResult> closed = host_->take_closing(conn_)) {
    world.trace_linef("pg c{} -> {}: the server had closed the session ({})", client,
                      server->name(), closed->sqlstate);
    forget();
    return *closed;
  }
  const bool same_server =
      world.alive(server->node()) && world.incarnation(server->node()) == incarnation_;
  if (!same_server && link_up(*server)) {
    // As libpq meets it: the statement goes into the kernel's buffer whole, and the read finds the
    // reset, so for all the client knows it may have run.
    world.trace_linef("pg c{} -> {}: connection reset (the server went down)", client,
                      server->name());
    forget();
    return PgResult{.status = IoStatus::connection_lost,
                    .message = "server closed the connection unexpectedly"};
  }
  auto request = std::make_shared<Request>(Request{.id = ++next_request_});
  const Waiter waiter = world.prepare_park();
  request->waiter = waiter;
  in_flight_ = request;
  world.trace_line_by([&] {
    return fmt::format("pg c{} #{} -> {}: {}", client, request->id, server->name(), sql);
  });
  const uint64_t conn = conn_;
  PgServer::Reply reply = reply_to(request, waiter, *server);
  world.network().send(
      host_->node(), server->node(), [&] { return "pg " + sql.substr(0, sql.find('(')); },
      [&world, client, request, server, conn, sql, tag = host_->tag(), reply = std::move(reply)] {
        if (request->reset) {  // still on the wire when its connection was reset: lost with it
          world.trace_linef("pg c{} #{} lost with its reset connection", client, request->id);
          return;
        }
        server->query(conn, sql, tag, reply);
      });
  const int64_t wait_us = std::max(options_.command_timeout_us, wait_us_min);
  if (!wait(*request, waiter, wait_us)) {
    if (request->reset) {  // sent whole: it may have run
      return PgResult{.status = IoStatus::connection_lost,
                      .message = fmt::format("connection to {} reset after the statement was sent",
                                             endpoint())};
    }
    world.trace_linef("pg c{} #{} timeout after {}us: the session is closed", client, request->id,
                      wait_us);
    close();
    return PgResult{.status = IoStatus::timeout,
                    .message = fmt::format("no result from {} within {}us", endpoint(), wait_us)};
  }
  PgResult result = std::move(request->result);
  world.trace_line_by(
      [&] { return fmt::format("pg c{} #{} <- {}", client, request->id, describe(result)); });
  if (result.status != IoStatus::ok) forget();  // the server ended the session
  return result;
}

void SimPgConnection::close() {
  if (conn_ == 0) return;
  if (server_ != nullptr) host_->close_socket(*server_, conn_);
  conn_ = 0;
  pid_ = 0;
  server_ = nullptr;
}

}  // namespace lockstep::sim
