#include <fmt/format.h>

#include "base/check.h"
#include "services/etcd/adapter/etcd_lease_lock.h"
#include "services/etcd/backend/etcd_backend.h"
#include "services/etcd/backend/lease_facts.h"
#include "services/etcd/sim/etcd_cluster.h"
#include "services/etcd/sim/sim_etcd_connection.h"
#include "sim/world.h"

namespace lockstep {

namespace {

constexpr int64_t kUsPerMs = 1000;

// The adapter a client uses, telling the lease facts which value it is acquiring each lock with:
// the lease of the key it puts under that lock is that value's (the Lock RPC's keys carry no value
// of their own, and a client may acquire several locks at once).
class NotingAdapter final : public LockAdapter {
 public:
  NotingAdapter(std::unique_ptr<LockAdapter> inner, EtcdLeaseFacts& facts, int client)
      : inner_(std::move(inner)), facts_(facts), client_(client) {}

  std::string_view name() const override { return inner_->name(); }
  FencingSupport fencing() const override { return inner_->fencing(); }
  AdapterResult create_lock(const LockSpec& spec) override {
    facts_.acquiring(client_, spec.key, spec.value);
    return inner_->create_lock(spec);
  }
  AdapterResult release_lock(const LockSpec& spec) override { return inner_->release_lock(spec); }
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override {
    return inner_->extend_lock(spec, ttl_ms);
  }
  AdapterResult is_valid_lock(const LockSpec& spec) override { return inner_->is_valid_lock(spec); }
  bool is_whole_library() const override { return inner_->is_whole_library(); }
  int64_t validity_end_us(const LockSpec& spec, int64_t requested_at_us,
                          int64_t ttl_ms) const override {
    return inner_->validity_end_us(spec, requested_at_us, ttl_ms);
  }

 private:
  std::unique_ptr<LockAdapter> inner_;
  EtcdLeaseFacts& facts_;
  int client_;
};

class EtcdSimBackend final : public Backend {
 public:
  EtcdSimBackend(BackendEnv& env, EtcdAdapterFactory make_adapter)
      : world_(*env.sim),
        options_(env.options),
        make_adapter_(std::move(make_adapter)),
        facts_(
            env.recorder, [this] { return world_.now_us(); }, EtcdLockOptions{}.key_prefix) {
    LOCKSTEP_CHECK(env.sim != nullptr, "the simulated etcd needs the sim world");
    cluster_ = std::make_unique<sim::etcd::EtcdCluster>(
        world_, sim::etcd::EtcdClusterOptions{
                    .members = static_cast<int>(options_.get_int("members")),
                    .heartbeat_ms = options_.get_int("heartbeat_ms"),
                    .election_timeout_ms = options_.get_int("election_timeout_ms"),
                    .observer = &facts_});
  }

  LockAdapter& adapter_for(int client, int node) override {
    std::vector<int> order;
    for (int i = 0; i < cluster_->members(); ++i)
      order.push_back((client + i) % cluster_->members());
    connections_.push_back(std::make_unique<sim::etcd::SimEtcdConnection>(
        world_, node, *cluster_, client,
        sim::etcd::SimEtcdConnectionOptions{
            .request_timeout_us = options_.get_int("request_timeout_ms") * kUsPerMs,
            .members = std::move(order)}));
    adapters_.push_back(std::make_unique<NotingAdapter>(
        make_adapter_(*connections_.back(), world_.clock(node), options_), facts_, client));
    return *adapters_.back();
  }

  void reset_connections(int client_node, int64_t for_us) override {
    for (auto& connection : connections_) {
      if (connection->client_node() == client_node) connection->reset(for_us);
    }
  }

  int server_count() const override { return cluster_->members(); }
  // The Lock RPC's call waits in the server's queue for up to lock_wait_ms (etcd-lock): a queue on
  // a member that died answers never, and the call waits that long.
  int64_t call_timeout_us() const override {
    const int64_t request_ms = options_.get_int("request_timeout_ms");
    const int64_t wait_ms = options_.has("lock_wait_ms") ? options_.get_int("lock_wait_ms") : 0;
    return std::max(request_ms, wait_ms) * kUsPerMs;
  }
  // Raft: a follower stands after [1, 2) election timeouts; a split vote costs another round.
  int64_t election_us() const override {
    return 4 * options_.get_int("election_timeout_ms") * kUsPerMs;
  }
  bool records_leases() const override { return true; }

  // The leader dies; the others elect a new one after an election timeout. Raft acknowledges a
  // write only once a majority has it, so the next leader lacks none: 0 lost.
  int64_t failover() override {
    cluster_->crash_leader();
    return 0;
  }
  void set_server_drift(int64_t drift_ppm) override {
    for (int m = 0; m < cluster_->members(); ++m) world_.set_drift(cluster_->node(m), drift_ppm);
  }
  // The client is cut off from every member.
  void partition(int client_node, bool two_way) override {
    for (int m = 0; m < cluster_->members(); ++m) partition_server(client_node, m, two_way);
  }
  void heal() override { world_.network().heal_all(); }
  void set_fixed_latency(int64_t latency_us) override {
    world_.network().set_fixed_latency(latency_us);
  }
  void crash_server(int server) override { cluster_->crash(checked(server)); }
  void restart_server(int server) override { cluster_->restart(checked(server)); }
  void pause_server(int server, int64_t duration_us) override {
    world_.pause(cluster_->node(checked(server)), duration_us, "SIGSTOP etcd");
  }
  void jump_server_clock(int server, int64_t delta_us) override {
    world_.jump_clock(cluster_->node(checked(server)), delta_us);
  }
  void partition_server(int client_node, int server, bool two_way) override {
    const sim::NodeId node = cluster_->node(checked(server));
    world_.network().partition(node, client_node);
    if (two_way) world_.network().partition(client_node, node);
  }

 private:
  int checked(int server) const { return etcd_member(server, cluster_->members()); }

  sim::World& world_;
  const Options& options_;
  EtcdAdapterFactory make_adapter_;
  EtcdLeaseFacts facts_;
  std::unique_ptr<sim::etcd::EtcdCluster> cluster_;
  std::vector<std::unique_ptr<sim::etcd::SimEtcdConnection>> connections_;
  std::vector<std::unique_ptr<LockAdapter>> adapters_;
};

}  // namespace

std::unique_ptr<Backend> make_etcd_sim_backend(BackendEnv& env, EtcdAdapterFactory make_adapter) {
  return std::make_unique<EtcdSimBackend>(env, std::move(make_adapter));
}

}  // namespace lockstep
