// The PostgreSQL advisory locks in the simulator.
#include <algorithm>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "base/check.h"
#include "services/postgres/adapter/advisory_adapter.h"
#include "services/postgres/backend/pg_lease_event.h"
#include "services/postgres/backend/postgres_backend.h"
#include "services/postgres/sim/pg_server.h"
#include "services/postgres/sim/sim_pg_connection.h"
#include "sim/world.h"

namespace lockstep {

namespace {

// The adapter as the backend hands it out: every call first tells the client's host which lock
// operation it is in, so the server's lease facts name their owner (the statement's tag).
class TaggingAdapter final : public LockAdapter {
 public:
  TaggingAdapter(std::unique_ptr<LockAdapter> inner, sim::PgTag& tag, int client)
      : inner_(std::move(inner)), tag_(tag), client_(client) {}

  std::string_view name() const override { return inner_->name(); }
  FencingSupport fencing() const override { return inner_->fencing(); }
  AdapterResult create_lock(const LockSpec& spec) override {
    return tagged(spec, [&] { return inner_->create_lock(spec); });
  }
  AdapterResult release_lock(const LockSpec& spec) override {
    return tagged(spec, [&] { return inner_->release_lock(spec); });
  }
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override {
    return tagged(spec, [&] { return inner_->extend_lock(spec, ttl_ms); });
  }
  AdapterResult is_valid_lock(const LockSpec& spec) override {
    return tagged(spec, [&] { return inner_->is_valid_lock(spec); });
  }
  bool is_whole_library() const override { return inner_->is_whole_library(); }
  int64_t validity_end_us(const LockSpec& spec, int64_t requested_at_us,
                          int64_t ttl_ms) const override {
    return inner_->validity_end_us(spec, requested_at_us, ttl_ms);
  }

 private:
  template <typename Call>
  AdapterResult tagged(const LockSpec& spec, Call call) {
    tag_ = sim::PgTag{.client = client_, .value = spec.value, .key = spec.key};
    AdapterResult result = call();
    tag_ = sim::PgTag{.client = client_};
    return result;
  }

  std::unique_ptr<LockAdapter> inner_;
  sim::PgTag& tag_;
  int client_;
};

// A client's view of the one pooled session every client shares (known-bad): opening it opens the
// pool's connection once; closing gives it back to the pool, which keeps it open; each statement
// goes with the calling client's tag.
class PooledConnection final : public PgConnection {
 public:
  PooledConnection(sim::SimPgConnection& pooled, sim::PgTag& pool_tag, const sim::PgTag& caller)
      : pooled_(pooled), pool_tag_(pool_tag), caller_(caller) {}
  PgResult open() override { return pooled_.open(); }
  bool is_open() const override { return pooled_.is_open(); }
  int64_t session_pid() const override { return pooled_.session_pid(); }
  using PgConnection::execute;
  PgResult execute(const std::string& sql, int64_t wait_us_min) override {
    pool_tag_ = caller_;
    return pooled_.execute(sql, wait_us_min);
  }
  void close() override {}
  std::string endpoint() const override { return "pool:" + pooled_.endpoint(); }

 private:
  sim::SimPgConnection& pooled_;
  sim::PgTag& pool_tag_;
  const sim::PgTag& caller_;
};

class PooledConnector final : public PgConnector {
 public:
  PooledConnector(sim::SimPgConnection& pooled, sim::PgTag& pool_tag, const sim::PgTag& caller)
      : pooled_(pooled), pool_tag_(pool_tag), caller_(caller) {}
  std::unique_ptr<PgConnection> connect(const PgSettings&) override {
    return std::make_unique<PooledConnection>(pooled_, pool_tag_, caller_);
  }

 private:
  sim::SimPgConnection& pooled_;
  sim::PgTag& pool_tag_;
  const sim::PgTag& caller_;
};

class PostgresSimBackend final : public Backend, public sim::PgLockObserver {
 public:
  PostgresSimBackend(BackendEnv& env, PostgresAdapterFactory factory, PostgresSimOptions options)
      : world_(*env.sim),
        recorder_(env.recorder),
        options_(env.options),
        factory_(std::move(factory)),
        sim_options_(options) {
    LOCKSTEP_CHECK(env.sim != nullptr, "the simulated PostgreSQL needs the sim world");
    client_options_.command_timeout_us = options_.get_int("command_timeout_ms") * 1000;
    client_options_.connect_timeout_us = client_options_.command_timeout_us;
    primary_ = std::make_unique<sim::PgServer>(
        world_, sim::PgServerOptions{.name = "postgres-0", .observer = this});
    primary_->engine().create_sequence(kFencingSequence);
    servers_.push_back(primary_.get());
    if (options_.get_int("replicas") > 0) {
      replica_ = std::make_unique<sim::PgServer>(
          world_,
          sim::PgServerOptions{
              .name = "postgres-1", .first_pid = 100'000, .observer = this, .replica = true});
      primary_->add_replica(*replica_, options_.get_int("replication_delay_ms"));
      servers_.push_back(replica_.get());
    }
    current_ = primary_.get();
    if (sim_options_.one_shared_session) {
      pool_host_ = std::make_shared<sim::SimPgHost>(
          world_, world_.add_node("pooler"), -1, [this] { return current_; },
          [this] { return world_.unfinished_fibers() > 0; });
      sim::SimPgClientOptions pooled = client_options_;
      pooled.any_caller = true;
      pooled_ = std::make_unique<sim::SimPgConnection>(pool_host_, PgSettings{}, pooled);
    }
  }

  LockAdapter& adapter_for(int client, int node) override {
    auto host = std::make_shared<sim::SimPgHost>(world_, node, client, [this] { return current_; });
    // The process's death closes its sockets; its kernel sends the FINs.
    world_.on_crash(node, [host] { host->close_all(); });
    hosts_[node] = host;
    std::unique_ptr<PgConnector>& connector = connectors_.emplace_back();
    if (pooled_) {
      connector = std::make_unique<PooledConnector>(*pooled_, pool_host_->tag(), host->tag());
    } else {
      connector = std::make_unique<sim::SimPgConnector>(host, client_options_);
    }
    adapters_.push_back(std::make_unique<TaggingAdapter>(
        factory_(*connector, world_.clock(node), options_), host->tag(), client));
    return *adapters_.back();
  }

  int server_count() const override { return static_cast<int>(servers_.size()); }
  int64_t call_timeout_us() const override {
    // A statement on a session that holds locks waits out the keepalive bound at least
    // (AdvisoryAdapter::run).
    const int64_t holding_wait_us = advisory_session_loss_bound_us(
        options_.get_int("keepalive_idle_s"), options_.get_int("keepalive_interval_s"),
        options_.get_int("keepalive_count"), 0);
    return client_options_.connect_timeout_us +
           std::max(client_options_.command_timeout_us, holding_wait_us);
  }
  bool records_leases() const override { return true; }

  // Advisory locks are session state, never replicated: the promoted replica holds none of
  // them, and what else was lost is not counted (-1: the judge treats it as possibly lost).
  int64_t failover() override {
    if (!replica_) throw WorldUnsupported("failover needs a replica: --set replicas=1");
    world_.crash(primary_->node());
    replica_->promote();
    current_ = replica_.get();
    return -1;
  }
  void set_server_drift(int64_t drift_ppm) override {
    for (sim::PgServer* server : servers_) world_.set_drift(server->node(), drift_ppm);
  }
  void jump_server_clock(int server, int64_t delta_us) override {
    world_.jump_clock(server_at(server).node(), delta_us);
  }
  void crash_server(int server) override { world_.crash(server_at(server).node()); }
  void restart_server(int server) override { world_.restart(server_at(server).node()); }
  void pause_server(int server, int64_t duration_us) override {
    world_.pause(server_at(server).node(), duration_us, "server pause");
  }

  // A client is cut off at its host: its process's packets and its kernel's alike.
  void partition(int client_node, bool two_way) override {
    partition_server(client_node, index_of(*current_), two_way);
  }
  void partition_server(int client_node, int server, bool two_way) override {
    const sim::NodeId host = host_of(client_node).node();
    const sim::NodeId target = server_at(server).node();
    world_.network().partition(target, host);
    if (two_way) world_.network().partition(host, target);
  }
  void heal() override { world_.network().heal_all(); }
  // The client's own connections (a pooled session belongs to the pooler: untouched).
  void reset_connections(int client_node, int64_t for_us) override {
    const size_t reset = host_of(client_node).reset_all(for_us);
    world_.trace_linef("pg node {}: {} connection(s) reset{}", client_node, reset,
                       for_us > 0 ? fmt::format(", new ones refused for {}us", for_us) : "");
  }
  void set_fixed_latency(int64_t latency_us) override {
    world_.network().set_fixed_latency(latency_us);
  }

  void end_session(int client_node) override {
    const std::vector<int64_t> pids = current_->pids_from(host_of(client_node).node());
    world_.trace_linef("pg {}: terminating {} session(s) of node {}", current_->name(), pids.size(),
                       client_node);
    for (int64_t pid : pids) current_->terminate(pid);
  }

  void on_lock_event(const sim::PgLockEvent& e) override {
    if (std::optional<HistoryEvent> lease = postgres_lease_event(e)) {
      recorder_.record(std::move(*lease));
    }
  }

 private:
  sim::PgServer& server_at(int server) {
    LOCKSTEP_CHECK(server >= 0 && server < server_count(), "a server of this backend");
    return *servers_[static_cast<size_t>(server)];
  }
  int index_of(const sim::PgServer& server) const { return &server == primary_.get() ? 0 : 1; }
  sim::SimPgHost& host_of(int client_node) {
    auto it = hosts_.find(client_node);
    if (it == hosts_.end()) throw WorldUnsupported("no client on that node");
    return *it->second;
  }

  sim::World& world_;
  Recorder& recorder_;
  const Options& options_;
  PostgresAdapterFactory factory_;
  PostgresSimOptions sim_options_;
  sim::SimPgClientOptions client_options_;
  std::unique_ptr<sim::PgServer> primary_;
  std::unique_ptr<sim::PgServer> replica_;
  sim::PgServer* current_ = nullptr;  // the primary clients open sessions on
  std::vector<sim::PgServer*> servers_;
  std::map<int, std::shared_ptr<sim::SimPgHost>> hosts_;  // by client node
  std::shared_ptr<sim::SimPgHost> pool_host_;
  std::unique_ptr<sim::SimPgConnection> pooled_;
  std::vector<std::unique_ptr<PgConnector>> connectors_;
  std::vector<std::unique_ptr<LockAdapter>> adapters_;
};

}  // namespace

std::optional<HistoryEvent> postgres_lease_event(const sim::PgLockEvent& e) {
  if (e.owner.value.empty()) return std::nullopt;  // not a client's lock operation
  const bool granted = e.kind == sim::PgLockEvent::Kind::granted;
  return HistoryEvent{.kind = granted ? EventKind::grant : EventKind::revoke,
                      .client = granted ? e.owner.client : e.requester,
                      .key = e.owner.key,
                      .has_token = granted && e.token.has_value(),
                      .token = granted ? e.token.value_or(0) : 0,
                      .server = kPostgresLeaseGroup,
                      .value = e.owner.value,
                      .ttl_us = granted ? kSessionLeaseUs : 0,
                      .detail = granted ? fmt::format("session {}", e.pid)
                                        : fmt::format("session {}: {}", e.pid, e.cause)};
}

std::unique_ptr<Backend> make_postgres_sim_backend(BackendEnv& env, PostgresAdapterFactory factory,
                                                   PostgresSimOptions sim_options) {
  return std::make_unique<PostgresSimBackend>(env, std::move(factory), sim_options);
}

}  // namespace lockstep
