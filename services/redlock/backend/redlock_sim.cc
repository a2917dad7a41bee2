#include "services/redlock/backend/redlock_backend.h"

#include <fmt/format.h>

#include "adapters/core/locker.h"
#include "base/check.h"
#include "services/redis/backend/lease_events.h"
#include "services/redis/sim/redis_node.h"
#include "services/redis/sim/sim_redis_connection.h"
#include "services/redlock/adapter/redlock_adapter.h"
#include "services/redlock/sim/sim_redis_fanout.h"
#include "sim/world.h"

namespace lockstep {

namespace {

constexpr const char* kLockPrefix = "lock:";  // RedlockAdapterOptions' default key_prefix

sim::Persistence sim_persistence(const std::string& name) {
  if (name == "always") return sim::Persistence::always;
  if (name == "everysec") return sim::Persistence::everysec;
  return sim::Persistence::none;
}

// One client's view of the N nodes.
struct SimClientLink {
  std::vector<std::unique_ptr<sim::SimRedisConnection>> connections;
  std::unique_ptr<sim::SimRedisFanout> fanout;
  std::unique_ptr<SeededRandom> random;
  std::unique_ptr<LockAdapter> adapter;
};

class RedlockSimBackend final : public Backend, public sim::KeyspaceObserver {
 public:
  RedlockSimBackend(BackendEnv& env, RedlockAdapterFactory make_adapter)
      : world_(*env.sim),
        recorder_(env.recorder),
        make_adapter_(std::move(make_adapter)),
        settings_(redlock_settings_from(env.options)),
        options_(env.options) {
    LOCKSTEP_CHECK(env.sim != nullptr, "the simulated Redlock needs the sim world");
    const int nodes = static_cast<int>(env.options.get_int("nodes"));
    for (int i = 0; i < nodes; ++i) {
      nodes_.push_back(std::make_unique<sim::RedisNode>(
          world_,
          sim::RedisNodeOptions{.name = fmt::format("redis-{}", i),
                                .persistence = sim_persistence(env.options.get("persistence")),
                                .observer = this}));
    }
  }

  LockAdapter& adapter_for(int client, int node) override {
    auto link = std::make_unique<SimClientLink>();
    std::vector<sim::SimRedisConnection*> raw;
    for (auto& server : nodes_) {
      link->connections.push_back(std::make_unique<sim::SimRedisConnection>(
          world_, node, *server, client,
          sim::SimRedisConnectionOptions{.command_timeout_us =
                                             settings_.request_timeout_ms * 1000}));
      raw.push_back(link->connections.back().get());
    }
    link->fanout = std::make_unique<sim::SimRedisFanout>(world_, std::move(raw));
    link->random = std::make_unique<SeededRandom>(static_cast<uint64_t>(client) + 1);
    RedlockAdapterParts parts{.fanout = *link->fanout,
                              .clock = world_.clock(node),
                              .random = *link->random,
                              .settings = settings_};
    link->adapter = make_adapter_(parts);
    links_.push_back(std::move(link));
    return *links_.back()->adapter;
  }

  int server_count() const override { return static_cast<int>(nodes_.size()); }
  int64_t call_timeout_us() const override { return settings_.request_timeout_ms * 1000; }
  int quorum() const override { return static_cast<int>(nodes_.size() / 2 + 1); }
  bool records_leases() const override { return true; }

  void set_server_drift(int64_t drift_ppm) override {
    for (auto& server : nodes_) world_.set_drift(server->node(), drift_ppm);
  }
  void reset_connections(int client_node, int64_t for_us) override {
    for (auto& link : links_) {
      for (auto& connection : link->connections) {
        if (connection->client_node() == client_node) connection->reset(for_us);
      }
    }
  }

  void partition(int client_node, bool two_way) override {
    for (int i = 0; i < server_count(); ++i) partition_server(client_node, i, two_way);
  }
  void heal() override { world_.network().heal_all(); }
  void set_fixed_latency(int64_t latency_us) override {
    world_.network().set_fixed_latency(latency_us);
  }

  void slow_server(int server, int64_t delay_us) override {
    world_.network().set_node_delay(node_of(server), delay_us);
  }
  void crash_server(int server) override { world_.crash(node_of(server)); }
  void restart_server(int server) override { world_.restart(node_of(server)); }
  void pause_server(int server, int64_t duration_us) override {
    world_.pause(node_of(server), duration_us);
  }
  void jump_server_clock(int server, int64_t delta_us) override {
    world_.jump_clock(node_of(server), delta_us);
  }
  void partition_server(int client_node, int server, bool two_way) override {
    world_.network().partition(node_of(server), client_node);  // replies to the client are lost
    if (two_way) world_.network().partition(client_node, node_of(server));
  }

  void on_keyspace_event(std::string_view node_name, const sim::KeyspaceEvent& e) override {
    if (std::optional<HistoryEvent> event = leases_.on_event(node_name, e)) {
      recorder_.record(std::move(*event));
    }
  }

 private:
  sim::NodeId node_of(int server) const {
    LOCKSTEP_CHECK(server >= 0 && server < server_count(), "no such Redlock node");
    return nodes_[static_cast<size_t>(server)]->node();
  }

  sim::World& world_;
  Recorder& recorder_;
  RedisLeaseEvents leases_{kLockPrefix};
  RedlockAdapterFactory make_adapter_;
  RedlockSettings settings_;
  const Options& options_;
  std::vector<std::unique_ptr<sim::RedisNode>> nodes_;
  std::vector<std::unique_ptr<SimClientLink>> links_;
};

}  // namespace

std::vector<OptionSpec> redlock_backend_options() {
  return {
      {.name = "nodes",
       .default_value = "5",
       .help = "independent Redis nodes",
       .choices = {"3", "5", "7"}},
      {.name = "persistence",
       .default_value = "none",
       .help = "every node's persistence across a crash",
       .choices = {"none", "everysec", "always"}},
      {.name = "request_timeout_ms",
       .default_value = "50",
       .help = "one round of requests to the nodes",
       .min = 1,
       .max = kRedlockDefaultDurationMs - 1},
      {.name = "drift_factor_ppm",
       .default_value = "1000",
       .help = "drift allowance per ms of lease (1000: 0.001)",
       .min = 0,
       .max = 999'999},
      {.name = "drift_constant_ms",
       .default_value = "5",
       .help = "fixed drift allowance",
       .min = 0,
       .max = kRedlockDefaultDurationMs},
      {.name = "max_hold_time_ms",
       .default_value = "60000",
       .help = "longest hold across extends",
       .min = kRedlockDefaultDurationMs,
       .max = kTtlMaxMs},
  };
}

RedlockSettings redlock_settings_from(const Options& options) {
  return {.max_hold_time_ms = options.get_int("max_hold_time_ms"),
          .drift_factor = static_cast<double>(options.get_int("drift_factor_ppm")) / 1e6,
          .drift_constant_ms = options.get_int("drift_constant_ms"),
          .request_timeout_ms = options.get_int("request_timeout_ms")};
}

AdapterTraits redlock_traits(AdapterTraits declared, const Options& options) {
  const int64_t drift_ppm = options.get_int("drift_factor_ppm");
  declared.envelope.client_slow_ppm_max = drift_ppm / 2;
  declared.envelope.server_fast_ppm_max = drift_ppm / 2;
  if (options.get("persistence") == "always")
    declared.envelope.server_restart = RestartRule::always;
  return declared;
}

RedlockAdapterFactory production_redlock_adapter() {
  return [](RedlockAdapterParts& parts) -> std::unique_ptr<LockAdapter> {
    return std::make_unique<RedlockAdapter>(RedlockAdapterOptions{.fanout = &parts.fanout,
                                                                  .clock = &parts.clock,
                                                                  .random = &parts.random,
                                                                  .settings = parts.settings});
  };
}

std::unique_ptr<Backend> make_redlock_sim_backend(BackendEnv& env,
                                                  RedlockAdapterFactory make_adapter) {
  return std::make_unique<RedlockSimBackend>(env, std::move(make_adapter));
}

}  // namespace lockstep
