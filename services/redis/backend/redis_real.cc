// The Redis lock against real redis-server processes on loopback.
#include <chrono>

#include <fmt/format.h>

#include "harness/backend.h"
#include "harness/client_seams.h"
#include "lockstep/redis.h"
#include "real/tcp_proxy.h"
#include "services/redis/adapter/hiredis_connection.h"
#include "services/redis/real/redis_server.h"

namespace lockstep {

namespace {

// libfaketime's rate for a drift: +250000 ppm runs 1.25 times as fast.
std::string faketime_rate(int64_t drift_ppm) {
  return fmt::format("x{:.6f}", 1.0 + static_cast<double>(drift_ppm) / 1e6);
}

// A connection that can be pointed at another server (failover: clients follow the new primary).
class SwitchableConnection final : public RedisConnection {
 public:
  explicit SwitchableConnection(RedisConnection& first) : active_(&first) {}
  void switch_to(RedisConnection& next) { active_ = &next; }
  RedisResult command(const std::vector<std::string>& argv) override {
    return active_->command(argv);
  }
  std::string endpoint() const override { return active_->endpoint(); }

 private:
  RedisConnection* active_;
};

struct ClientLink {
  std::unique_ptr<real::TcpProxy> proxy;          // client <-> primary, for partitions
  std::unique_ptr<HiredisConnection> to_primary;  // through the proxy
  std::unique_ptr<HiredisConnection> to_replica;  // direct, used after failover
  std::unique_ptr<SwitchableConnection> connection;
  std::unique_ptr<LockAdapter> adapter;
};

class RedisRealBackend final : public Backend {
 public:
  RedisRealBackend(BackendEnv& env, RedisClientFactory make_adapter)
      : make_adapter_(std::move(make_adapter)),
        seams_(env),
        command_timeout_ms_(env.options.get_int("command_timeout_ms")) {
    real::RedisServerOptions server_options{
        .persistence = real::persistence_from_name(env.options.get("persistence"))};
    // A server's clock rate is fixed when it starts (libfaketime), so a scenario's drift is read
    // here.
    if (env.options.has("drift_ppm")) {
      drift_ppm_ = env.options.get_int("drift_ppm");
      if (drift_ppm_ != 0) server_options.clock_rate = faketime_rate(drift_ppm_);
    }
    primary_ = std::make_unique<real::RedisServerProcess>(server_options);
    env.world.trace_linef("server redis-0 pid {} at {}", primary_->pid(), primary_->endpoint());
    if (env.options.get_int("replicas") > 0) start_lagging_replica(env);
  }

  LockAdapter& adapter_for(int client, int node) override {
    ClientLink& link = links_[node];
    link.proxy =
        std::make_unique<real::TcpProxy>(real::TcpProxyOptions{.upstream_port = primary_->port()});
    link.to_primary = std::make_unique<HiredisConnection>(
        HiredisOptions{.port = link.proxy->port(), .command_timeout_ms = command_timeout_ms_});
    if (replica_) {
      link.to_replica = std::make_unique<HiredisConnection>(
          HiredisOptions{.port = replica_->port(), .command_timeout_ms = command_timeout_ms_});
    }
    link.connection = std::make_unique<SwitchableConnection>(*link.to_primary);
    link.adapter = make_adapter_(*link.connection, seams_.for_client(client, node));
    return *link.adapter;
  }

  int server_count() const override { return replica_ ? 2 : 1; }
  bool records_leases() const override { return false; }

  int64_t failover() override {
    if (!replica_) throw WorldUnsupported("failover needs a replica: --set replicas=1");
    primary_->crash();
    HiredisConnection admin({.port = replica_->port()});
    const RedisResult promoted = admin.command({"REPLICAOF", "NO", "ONE"});
    if (!promoted.ok() || promoted.reply.is_error()) {
      throw std::runtime_error("could not promote the replica: " + describe(promoted.reply) +
                               promoted.message);
    }
    for (auto& [node, link] : links_) link.connection->switch_to(*link.to_replica);
    return -1;  // what the replica lacked is not known from outside
  }

  void set_server_drift(int64_t drift_ppm) override {
    if (drift_ppm != drift_ppm_) {
      throw WorldUnsupported(
          "a real server's clock rate is set when it starts: give drift_ppm as a scenario option");
    }
  }

  void partition(int client_node, bool two_way) override {
    real::TcpProxy& proxy = *links_.at(client_node).proxy;
    proxy.set_hold(real::Direction::to_client, true);
    if (two_way) proxy.set_hold(real::Direction::to_upstream, true);
  }

  void heal() override {
    for (auto& [node, link] : links_) link.proxy->heal();
  }
  void reset_connections(int client_node, int64_t for_us) override {
    require_instant_reset(for_us);
    links_.at(client_node).proxy->reset_all();
  }

 private:
  // The replica replicates through a proxy; once synced, the proxy holds what the primary sends
  // it (and is never healed), so writes from then on never reach it, as with a replica lagging
  // behind. (Stopping the
  // replica with SIGSTOP would not do: its kernel buffers the stream and it applies it on resume.)
  void start_lagging_replica(BackendEnv& env) {
    replica_ = std::make_unique<real::RedisServerProcess>(real::RedisServerOptions{});
    replication_proxy_ =
        std::make_unique<real::TcpProxy>(real::TcpProxyOptions{.upstream_port = primary_->port()});
    // Redis 7 waits repl-diskless-sync-delay (5 s) for more replicas before a full sync.
    HiredisConnection primary_admin({.port = primary_->port()});
    primary_admin.command({"CONFIG", "SET", "repl-diskless-sync-delay", "0"});
    HiredisConnection admin({.port = replica_->port()});
    admin.command({"REPLICAOF", "127.0.0.1", std::to_string(replication_proxy_->port())});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (true) {
      const RedisResult info = admin.command({"INFO", "replication"});
      if (info.ok() && info.reply.str.find("master_link_status:up") != std::string::npos) break;
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("the replica did not sync in 5 s");
    }
    replication_proxy_->set_hold(real::Direction::to_client, true);
    env.world.trace_linef("server redis-1 pid {} at {} (replica, lagging: replication cut)",
                          replica_->pid(), replica_->endpoint());
  }

  RedisClientFactory make_adapter_;
  ClientSeamsSource seams_;
  int64_t command_timeout_ms_;
  int64_t drift_ppm_ = 0;
  std::unique_ptr<real::RedisServerProcess> primary_;
  std::unique_ptr<real::RedisServerProcess> replica_;
  std::unique_ptr<real::TcpProxy> replication_proxy_;
  std::map<int, ClientLink> links_;
};

}  // namespace

std::unique_ptr<Backend> make_redis_real_backend(BackendEnv& env,
                                                 RedisAdapterFactory make_adapter) {
  return make_redis_real_backend(env, with_seams(std::move(make_adapter)));
}

std::unique_ptr<Backend> make_redis_real_backend(BackendEnv& env, RedisClientFactory make_adapter) {
  return std::make_unique<RedisRealBackend>(env, std::move(make_adapter));
}

}  // namespace lockstep
