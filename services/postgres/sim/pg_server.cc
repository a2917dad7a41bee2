#include "services/postgres/sim/pg_server.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include <fmt/format.h>

#include "sim/assert.h"

namespace lockstep::sim {

namespace {

// The WAL writer writes what an aborted transaction logged within wal_writer_delay (200 ms).
constexpr int64_t kWalWriterDelayUs = 200'000;
constexpr size_t kConnectionsMax = 1'000'000;

int64_t setting_or(const PgSettings& settings, std::string_view name, int64_t fallback) {
  for (const auto& [key, value] : settings) {
    if (key != name) continue;
    int64_t parsed = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    if (error == std::errc() && end == value.data() + value.size() && parsed > 0) return parsed;
  }
  return fallback;
}

PgResult reset(std::string message) {
  return PgResult{.status = IoStatus::connection_error, .message = std::move(message)};
}

}  // namespace

PgServer::PgServer(World& world, PgServerOptions options)
    : world_(world),
      options_(std::move(options)),
      node_(world.add_node(options_.name, options_.clock)),
      engine_(options_.observer),
      next_pid_(options_.first_pid) {
  world_.on_crash(node_, [this] { on_crash(); });
}

PgServer::Conn* PgServer::live(uint64_t conn) {
  auto it = conns_.find(conn);
  return it == conns_.end() || it->second.ended ? nullptr : &it->second;
}

int64_t PgServer::pid_of(uint64_t conn) const {
  auto it = conns_.find(conn);
  return it == conns_.end() || it->second.ended ? 0 : it->second.pid;
}

std::vector<int64_t> PgServer::pids_from(NodeId host) const {
  std::vector<int64_t> pids;
  for (const auto& [conn, c] : conns_) {
    if (!c.ended && c.peer->node() == host) pids.push_back(c.pid);
  }
  std::sort(pids.begin(), pids.end());
  return pids;
}

void PgServer::at_local(int64_t local_delay_us, std::function<void()> fn) {
  world_.deliver_at_local(node_, world_.incarnation(node_), local_now_us() + local_delay_us,
                          std::move(fn), [] {});
}

int64_t PgServer::local_now_us() const { return world_.monotonic_us(node_); }

void PgServer::startup(uint64_t conn, std::shared_ptr<PgPeer> peer, const PgSettings& settings,
                       Reply reply) {
  if (!accepting()) {
    reply(reset(fmt::format("{} is a standby: it takes no sessions", name())));
    return;
  }
  LOCKSTEP_SIM_CHECK(!conns_.contains(conn) && conns_.size() < kConnectionsMax,
                     "a new connection id");
  const int64_t pid = next_pid_++;
  engine_.open_session(pid, settings);
  Conn c{.pid = pid, .peer = std::move(peer)};
  c.idle_us = setting_or(settings, "tcp_keepalives_idle", kKeepaliveIdleDefaultS) * 1'000'000;
  c.interval_us =
      setting_or(settings, "tcp_keepalives_interval", kKeepaliveIntervalDefaultS) * 1'000'000;
  c.count = setting_or(settings, "tcp_keepalives_count", kKeepaliveCountDefault);
  c.user_timeout_us = setting_or(settings, "tcp_user_timeout", 0) * 1000;
  c.last_heard_us = local_now_us();
  Conn& stored = conns_.emplace(conn, std::move(c)).first->second;
  conn_of_pid_[pid] = conn;
  world_.trace_linef("pg {} session {} starts for c{}", name(), pid, stored.peer->client());
  schedule_keepalive(conn, stored, stored.idle_us);
  PgResult started{.command_tag = "STARTUP"};
  started.rows.push_back({std::to_string(pid)});
  reply(std::move(started));
}

void PgServer::query(uint64_t conn, const std::string& sql, const PgTag& tag, Reply reply) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) {
    reply(reset("server closed the connection unexpectedly"));
    return;
  }
  Conn& c = it->second;
  if (c.ended) {
    PgResult closed = reset("server closed the connection unexpectedly");
    closed.sqlstate = std::exchange(c.end_sqlstate, {});
    closed.error = std::exchange(c.end_error, {});
    reply(std::move(closed));
    return;
  }
  c.last_heard_us = local_now_us();
  if (c.probing) {  // the client's packets end a probe round too (Linux: probes_out = 0)
    c.unanswered = 0;
    schedule_keepalive(conn, c, c.idle_us);
  }
  PgEngine::Outcome outcome = engine_.execute(c.pid, sql, tag);
  if (outcome.waiting) {
    c.pending = std::move(reply);
    c.wait_id = ++next_wait_id_;
    const int64_t timeout_ms = engine_.lock_timeout_ms(c.pid);
    if (timeout_ms > 0) {
      at_local(timeout_ms * 1000, [this, conn, wait_id = c.wait_id] {
        Conn* waiting = live(conn);
        if (waiting == nullptr || waiting->wait_id != wait_id || !waiting->pending ||
            !engine_.waiting(waiting->pid)) {
          return;
        }
        PgEngine::Outcome timed_out = engine_.wait_timed_out(waiting->pid);
        answer_pending(conn, *waiting, std::move(timed_out.result));
        after_engine(&timed_out);
      });
    }
    after_engine(&outcome);
    return;
  }
  if (outcome.session_ended) {
    c.ended = true;
    conn_of_pid_.erase(c.pid);
    world_.trace_linef("pg {} session {} ends: it terminated itself", name(), c.pid);
    PgResult fatal = reset(outcome.result.error);
    fatal.sqlstate = outcome.result.sqlstate;
    fatal.error = outcome.result.error;
    reply(std::move(fatal));
  } else {
    reply(std::move(outcome.result));
  }
  after_engine(&outcome);
}

void PgServer::after_engine(const PgEngine::Outcome* outcome) {
  if (outcome != nullptr) schedule_wal_writer(outcome->aborted_wal);
  send_woken();
  reconcile_ended();
  replicate();
}

void PgServer::send_woken() {
  for (PgEngine::Woken& woken : engine_.take_woken()) {
    auto at = conn_of_pid_.find(woken.pid);
    if (at == conn_of_pid_.end()) continue;
    Conn* c = live(at->second);
    if (c == nullptr || !c->pending) continue;
    answer_pending(at->second, *c, std::move(woken.result));
  }
}

void PgServer::answer_pending(uint64_t conn, Conn& c, PgResult result) {
  Reply answer = std::move(*c.pending);
  c.pending.reset();
  if (c.gone_cause.empty()) return answer(std::move(result));
  end_conn(conn, c, c.gone_requester, c.gone_cause + ", noticed as its statement answered");
}

// Sessions another session's pg_terminate_backend ended: their clients learn it from FATAL 57P01,
// at once when a statement of theirs was waiting, else at their next statement.
void PgServer::reconcile_ended() {
  for (auto it = conn_of_pid_.begin(); it != conn_of_pid_.end();) {
    if (engine_.has_session(it->first)) {
      ++it;
      continue;
    }
    Conn& c = conns_.at(it->second);
    c.ended = true;
    c.end_sqlstate = "57P01";
    c.end_error = "terminating connection due to administrator command";
    world_.trace_linef("pg {} session {} ends: terminated", name(), c.pid);
    PgResult fatal = reset(c.end_error);
    fatal.sqlstate = c.end_sqlstate;
    fatal.error = c.end_error;
    if (c.pending) {
      Reply answer = std::move(*c.pending);
      c.pending.reset();
      c.end_sqlstate.clear();
      c.end_error.clear();
      if (c.gone_cause.empty()) answer(std::move(fatal));  // a gone client reads nothing
    } else {
      std::shared_ptr<PgPeer> peer = c.peer;
      world_.network().send(
          node_, peer->node(), "pg FATAL",
          [peer, conn = it->second, fatal = std::move(fatal)] {
            peer->closed_by_server(conn, fatal);
          },
          Delivery::buffer);
    }
    it = conn_of_pid_.erase(it);
  }
}

void PgServer::replicate() {
  PgWal log = engine_.take_durable_log();
  if (replica_ == nullptr || log.empty()) return;
  const uint64_t incarnation = world_.incarnation(node_);
  const TimeUs at_us = world_.now_us() + replication_delay_ms_ * 1000;
  world_.scheduler().at(at_us, [this, incarnation, log = std::move(log)] {
    // Not sent yet when the primary died: lost with it.
    if (!world_.alive(node_) || world_.incarnation(node_) != incarnation) return;
    PgServer* replica = replica_;
    world_.deliver_at(
        replica->node(), world_.incarnation(replica->node()), world_.now_us(),
        [replica, log] {
          replica->engine_.make_durable(log);
          replica->engine_.take_durable_log();
        },
        [] {});
  });
}

void PgServer::schedule_wal_writer(const PgWal& wal) {
  if (wal.empty()) return;
  at_local(kWalWriterDelayUs, [this, wal] {
    engine_.make_durable(wal);
    replicate();
  });
}

void PgServer::end_conn(uint64_t conn, Conn& c, int requester, const std::string& cause) {
  c.ended = true;
  c.pending.reset();
  conn_of_pid_.erase(c.pid);
  world_.trace_linef("pg {} session {} ends: {}", name(), c.pid, cause);
  const PgWal unflushed = engine_.end_session(c.pid, requester, cause);
  (void)conn;
  schedule_wal_writer(unflushed);
  after_engine(nullptr);
}

void PgServer::peer_gone(uint64_t conn, Conn& c, int requester, const std::string& cause) {
  if (!c.pending) return end_conn(conn, c, requester, cause);
  if (!c.gone_cause.empty()) return;
  c.gone_cause = cause;
  c.gone_requester = requester;
  world_.trace_linef("pg {} session {}: {}; its statement waits on, unaware", name(), c.pid, cause);
}

void PgServer::client_closed(uint64_t conn) {
  Conn* c = live(conn);
  if (c == nullptr) return;
  peer_gone(conn, *c, c->peer->client(), "the client closed the connection");
}

bool PgServer::terminate(int64_t pid) {
  auto at = conn_of_pid_.find(pid);
  if (at == conn_of_pid_.end() || !engine_.has_session(pid)) return false;
  const PgWal unflushed = engine_.end_session(pid, -1, "terminated by an administrator");
  schedule_wal_writer(unflushed);
  after_engine(nullptr);  // marks its connection ended with 57P01
  return true;
}

// --- keepalive ---

void PgServer::schedule_keepalive(uint64_t conn, Conn& c, int64_t local_delay_us) {
  const uint64_t gen = ++c.keepalive_gen;
  c.probing = false;
  at_local(local_delay_us, [this, conn, gen] { keepalive_check(conn, gen); });
}

void PgServer::keepalive_check(uint64_t conn, uint64_t gen) {
  Conn* c = live(conn);
  if (c == nullptr || c->keepalive_gen != gen) return;
  const int64_t due_us = c->last_heard_us + c->idle_us;  // on the server's clock
  if (local_now_us() < due_us) {
    const uint64_t next_gen = ++c->keepalive_gen;
    world_.deliver_at_local(
        node_, world_.incarnation(node_), due_us,
        [this, conn, next_gen] { keepalive_check(conn, next_gen); }, [] {});
    return;
  }
  send_probe(conn, *c);
}

void PgServer::send_probe(uint64_t conn, Conn& c) {
  const uint64_t gen = ++c.keepalive_gen;
  c.probing = true;
  if (c.unanswered == 0) c.unanswered_since_us = local_now_us();
  std::shared_ptr<PgPeer> peer = c.peer;
  World& world = world_;
  const NodeId server = node_;
  world_.network().send(
      node_, peer->node(), "pg keepalive",
      [this, &world, server, peer, conn, gen] {
        const bool open = peer->socket_open(conn);
        world.network().send(peer->node(), server, open ? "pg keepalive ack" : "pg RST",
                             [this, conn, gen, open] { on_probe_answer(conn, gen, open); });
      },
      Delivery::buffer);
  at_local(c.interval_us, [this, conn, gen] { probe_timeout(conn, gen); });
}

void PgServer::probe_timeout(uint64_t conn, uint64_t gen) {
  Conn* c = live(conn);
  if (c == nullptr || c->keepalive_gen != gen) return;
  ++c->unanswered;
  const bool dead = c->user_timeout_us > 0
                        ? local_now_us() - c->unanswered_since_us >= c->user_timeout_us
                        : c->unanswered >= c->count;
  if (dead) {
    peer_gone(conn, *c, -1, fmt::format("keepalive: {} probes unanswered", c->unanswered));
    return;
  }
  send_probe(conn, *c);
}

void PgServer::on_probe_answer(uint64_t conn, uint64_t gen, bool open) {
  (void)gen;  // any answer shows what the host's socket is now
  Conn* c = live(conn);
  if (c == nullptr) return;
  if (!open) {
    peer_gone(conn, *c, -1, "the client's host reset the connection");
    return;
  }
  c->last_heard_us = local_now_us();
  c->unanswered = 0;
  schedule_keepalive(conn, *c, c->idle_us);
}

// --- crash, replication ---

void PgServer::on_crash() {
  world_.trace_linef("pg {} crashes: {} sessions end", name(), conn_of_pid_.size());
  engine_.crash("server crash");
  engine_.take_durable_log();
  conns_.clear();
  conn_of_pid_.clear();
}

void PgServer::add_replica(PgServer& replica, int64_t replication_delay_ms) {
  LOCKSTEP_SIM_CHECK(replica.options_.replica && replica_ == nullptr, "one standby replica");
  replica_ = &replica;
  replication_delay_ms_ = replication_delay_ms;
  replica.engine_.restore(engine_.durable());
}

void PgServer::promote() {
  options_.replica = false;
  engine_.restore(engine_.durable());
  world_.trace_linef("pg {} promoted: sequences as replicated, no advisory lock", name());
}

}  // namespace lockstep::sim
