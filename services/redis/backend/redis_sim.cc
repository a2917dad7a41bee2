#include "harness/backend.h"
#include "harness/client_seams.h"
#include "lockstep/redis.h"

#include <map>

#include <fmt/format.h>

#include "base/check.h"
#include "services/redis/adapter/redis_adapter.h"
#include "services/redis/backend/lease_events.h"
#include "services/redis/sim/commands.h"
#include "services/redis/sim/redis_node.h"
#include "services/redis/sim/sim_redis_connection.h"
#include "sim/world.h"

namespace lockstep {

namespace {

// The production adapter's key layout (the known-bad variants share it).
const std::string kLockPrefix = RedisAdapterOptions{}.key_prefix;

sim::Persistence persistence_from(const std::string& name) {
  if (name == "always") return sim::Persistence::always;
  if (name == "everysec") return sim::Persistence::everysec;
  return sim::Persistence::none;
}

class RedisSimBackend final : public Backend, public sim::KeyspaceObserver {
 public:
  RedisSimBackend(BackendEnv& env, RedisClientFactory make_adapter)
      : world_(*env.sim),
        recorder_(env.recorder),
        make_adapter_(std::move(make_adapter)),
        seams_(env) {
    const Options& options = env.options;
    LOCKSTEP_CHECK(env.sim != nullptr, "the simulated Redis needs the sim world");
    command_timeout_us_ = options.get_int("command_timeout_ms") * sim::kUsPerMs;
    primary_ = std::make_unique<sim::RedisNode>(
        world_, sim::RedisNodeOptions{.name = "redis-0",
                                      .persistence = persistence_from(options.get("persistence")),
                                      .observer = this});
    servers_.push_back(primary_->node());
    current_ = primary_.get();
    if (options.get_int("replicas") > 0) {
      replica_ = std::make_unique<sim::RedisNode>(
          world_, sim::RedisNodeOptions{.name = "redis-1", .observer = this});
      primary_->add_replica(*replica_,
                            {.replication_delay_ms = options.get_int("replication_delay_ms")});
      servers_.push_back(replica_->node());
    }
    if (env.server_expiry == ExpiryClock::client_value) {
      leases_.read_values(
          [this](int client, int64_t deadline_ms) { return value_ttl_us(client, deadline_ms); });
    }
  }

  LockAdapter& adapter_for(int client, int node) override {
    connections_.push_back(std::make_unique<sim::SimRedisConnection>(
        world_, node, *primary_, client,
        sim::SimRedisConnectionOptions{.command_timeout_us = command_timeout_us_}));
    adapters_.push_back(make_adapter_(*connections_.back(), seams_.for_client(client, node)));
    client_nodes_[client] = node;
    return *adapters_.back();
  }

  void reset_connections(int client_node, int64_t for_us) override {
    for (auto& connection : connections_) {
      if (connection->client_node() == client_node) connection->reset(for_us);
    }
  }

  int server_count() const override { return static_cast<int>(servers_.size()); }
  int64_t call_timeout_us() const override { return command_timeout_us_; }
  bool records_leases() const override { return true; }

  int64_t failover() override {
    if (!replica_) throw WorldUnsupported("failover needs a replica: --set replicas=1");
    // Replication batches the primary sent that its replica had not applied: gone with it.
    const int64_t lost =
        static_cast<int64_t>(primary_->replication_seq() - replica_->replication_seq());
    world_.crash(primary_->node());
    replica_->promote();
    current_ = replica_.get();
    for (auto& connection : connections_) connection->set_target(*replica_);
    return lost;
  }

  // The primary (0) or its replica (1) dies and comes back with what its persistence kept: a
  // restart without persistence forgets every lock and fencing counter.
  void crash_server(int server) override { world_.crash(server_node(server)); }
  void restart_server(int server) override { world_.restart(server_node(server)); }
  void pause_server(int server, int64_t duration_us) override {
    world_.pause(server_node(server), duration_us);
  }

  void jump_server_clock(int server, int64_t delta_us) override {
    LOCKSTEP_CHECK(server >= 0 && server < server_count(), "a server of this backend");
    world_.jump_clock(servers_[static_cast<size_t>(server)], delta_us);
  }
  void set_server_drift(int64_t drift_ppm) override {
    for (sim::NodeId server : servers_) world_.set_drift(server, drift_ppm);
  }

  void partition(int client_node, bool two_way) override {
    world_.network().partition(current_->node(), client_node);
    if (two_way) world_.network().partition(client_node, current_->node());
  }

  void heal() override { world_.network().heal_all(); }

  void set_fixed_latency(int64_t latency_us) override {
    world_.network().set_fixed_latency(latency_us);
  }
  void slow_server(int server, int64_t delay_us) override {
    world_.network().set_node_delay(server_node(server), delay_us);
  }

  // Lease facts from the keyspace, whatever the keys are called (lease_events.h). Fencing tokens
  // are judged from what clients received, in the order the servers granted (checkers/fencing.cc),
  // so no counter needs recognising here.
  void on_keyspace_event(std::string_view node_name, const sim::KeyspaceEvent& e) override {
    std::optional<HistoryEvent> event = leases_.on_event(node_name, e);
    if (!event || e.replicated) return;  // a replica's keys are kept, should it be promoted
    event->detail = event->detail.empty() ? std::string(node_name)
                                          : fmt::format("{} on {}", event->detail, node_name);
    recorder_.record(std::move(*event));
  }

 private:
  // A value lease's length in true time: until the writing client's wall clock, as it runs now
  // (its later drift or jumps aside, as for a validity's end_us), reads the deadline it wrote.
  int64_t value_ttl_us(int client, int64_t deadline_ms) const {
    const auto node = client_nodes_.find(client);
    if (node == client_nodes_.end()) return 0;  // no client of this run wrote it: no lease
    const TimeUs now_us = world_.now_us();
    const TimeUs end_us = world_.node_clock(node->second)
                              .true_time_when_local_reaches(deadline_ms * sim::kUsPerMs, now_us);
    return end_us == sim::kTimeNever ? kValueLeaseForeverUs : end_us - now_us;
  }

  static constexpr int64_t kValueLeaseForeverUs = INT64_MAX / 4;
  sim::NodeId server_node(int server) const {
    LOCKSTEP_CHECK(server >= 0 && server < server_count(), "a server of this backend");
    return servers_[static_cast<size_t>(server)];
  }
  sim::World& world_;
  Recorder& recorder_;
  // Leases follow the lock, not the node: the primary and its replica are one replication group.
  // Lock keys are kLockPrefix + "{" + key + "}" (RedisAdapter::hash_tagged).
  RedisLeaseEvents leases_{kLockPrefix, /*hash_tagged=*/true, "redis"};
  RedisClientFactory make_adapter_;
  ClientSeamsSource seams_;
  int64_t command_timeout_us_ = 0;
  std::unique_ptr<sim::RedisNode> primary_;
  std::unique_ptr<sim::RedisNode> replica_;
  sim::RedisNode* current_ = nullptr;  // the primary clients talk to
  std::vector<sim::NodeId> servers_;
  std::vector<std::unique_ptr<sim::SimRedisConnection>> connections_;
  std::vector<std::unique_ptr<LockAdapter>> adapters_;
  std::map<int, sim::NodeId> client_nodes_;  // client -> its node (one entry per adapter_for)
};

}  // namespace

std::vector<OptionSpec> redis_backend_options() {
  std::vector<OptionSpec> options{
      {.name = "command_timeout_ms",
       .default_value = "100",
       .help = "client command timeout",
       .min = 1,
       .max = 60'000},
      {.name = "persistence",
       .default_value = "none",
       .help = "server persistence across a crash",
       .choices = {"none", "everysec", "always"}},
  };
  for (OptionSpec& o : replica_options("asynchronous replicas (failover)")) options.push_back(o);
  return options;
}

RedisAdapterFactory production_redis_adapter() {
  return [](RedisConnection& connection) -> std::unique_ptr<LockAdapter> {
    return std::make_unique<RedisAdapter>(RedisAdapterOptions{.connection = &connection});
  };
}

RedisClientFactory with_seams(RedisAdapterFactory make_adapter) {
  return [make = std::move(make_adapter)](RedisConnection& connection, ClientSeams) {
    return make(connection);
  };
}

std::unique_ptr<Backend> make_redis_sim_backend(BackendEnv& env, RedisAdapterFactory make_adapter) {
  return make_redis_sim_backend(env, with_seams(std::move(make_adapter)));
}

std::unique_ptr<Backend> make_redis_sim_backend(BackendEnv& env, RedisClientFactory make_adapter) {
  return std::make_unique<RedisSimBackend>(env, std::move(make_adapter));
}

}  // namespace lockstep
