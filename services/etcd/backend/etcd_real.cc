// The etcd locks against Debian's etcd on loopback, 1 or 3 members.
#include <chrono>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "real/keeper_thread.h"
#include "real/tcp_proxy.h"
#include "services/etcd/adapter/http_connection.h"
#include "services/etcd/backend/etcd_backend.h"
#include "services/etcd/real/etcd_cluster.h"

namespace lockstep {

namespace {

struct ClientLink {
  std::vector<std::unique_ptr<real::TcpProxy>> proxies;  // one per member
  std::unique_ptr<HttpEtcdConnection> connection;
  std::unique_ptr<LockAdapter> adapter;
};

class EtcdRealBackend final : public Backend {
 public:
  EtcdRealBackend(BackendEnv& env, EtcdAdapterFactory make_adapter)
      : world_(env.world), options_(env.options), make_adapter_(std::move(make_adapter)) {
    real::EtcdCluster::binary_path();  // ServerUnavailable, saying what to install
    const real::EtcdClusterOptions cluster_options{
        .members = static_cast<int>(options_.get_int("members")),
        .heartbeat_ms = options_.get_int("heartbeat_ms"),
        .election_timeout_ms = options_.get_int("election_timeout_ms")};
    keeper_.run([this, cluster_options] {
      cluster_ = std::make_unique<real::EtcdCluster>(cluster_options);
    });
    for (int m = 0; m < cluster_->members(); ++m) {
      env.world.trace_linef("server etcd-{} pid {} at 127.0.0.1:{}", m, cluster_->pid(m),
                            cluster_->client_port(m));
    }
  }

  LockAdapter& adapter_for(int client, int node) override {
    ClientLink& link = links_[node];
    std::vector<int> ports;
    for (int m = 0; m < cluster_->members(); ++m) {
      link.proxies.push_back(std::make_unique<real::TcpProxy>(
          real::TcpProxyOptions{.upstream_port = cluster_->client_port(m)}));
    }
    for (int i = 0; i < cluster_->members(); ++i)  // client i starts at member i mod members
      ports.push_back(
          link.proxies[static_cast<size_t>((client + i) % cluster_->members())]->port());
    link.connection = std::make_unique<HttpEtcdConnection>(HttpEtcdOptions{
        .ports = std::move(ports), .request_timeout_ms = options_.get_int("request_timeout_ms")});
    link.adapter = make_adapter_(*link.connection, world_.clock(node), options_);
    return *link.adapter;
  }

  int server_count() const override { return cluster_->members(); }
  bool records_leases() const override { return false; }

  // A real cluster cannot tell what the next leader lacks: -1 (Raft loses no acknowledged write).
  int64_t failover() override {
    cluster_->crash_leader();
    return -1;
  }
  void set_server_drift(int64_t) override { throw WorldUnsupported(kNoClockFaults); }
  void jump_server_clock(int, int64_t) override { throw WorldUnsupported(kNoClockFaults); }

  void partition(int client_node, bool two_way) override {
    for (int m = 0; m < cluster_->members(); ++m) partition_server(client_node, m, two_way);
  }
  void partition_server(int client_node, int server, bool two_way) override {
    real::TcpProxy& proxy =
        *links_.at(client_node).proxies.at(static_cast<size_t>(checked(server)));
    proxy.set_hold(real::Direction::to_client, true);
    if (two_way) proxy.set_hold(real::Direction::to_upstream, true);
  }
  void heal() override {
    for (auto& [node, link] : links_) {
      for (auto& proxy : link.proxies) proxy->heal();
    }
  }
  void reset_connections(int client_node, int64_t for_us) override {
    require_instant_reset(for_us);
    for (auto& proxy : links_.at(client_node).proxies) proxy->reset_all();
  }
  void crash_server(int server) override { cluster_->crash(checked(server)); }
  // On the keeper: a member dies with the thread that started it.
  void restart_server(int server) override {
    const int member = checked(server);
    keeper_.run([this, member] { cluster_->restart(member); });
  }
  // SIGSTOP for the duration; the fault thread waits it out (faults run one after another).
  void pause_server(int server, int64_t duration_us) override {
    const int member = checked(server);
    cluster_->pause(member);
    std::this_thread::sleep_for(std::chrono::microseconds(duration_us));
    cluster_->resume(member);
  }

 private:
  static constexpr const char* kNoClockFaults =
      "etcd's clock cannot be faulted in the real world: it is a Go program, whose clock reads go "
      "through the vDSO, not libc, so libfaketime does not reach it";

  int checked(int server) const { return etcd_member(server, cluster_->members()); }

  ScenarioWorld& world_;
  const Options& options_;
  EtcdAdapterFactory make_adapter_;
  real::KeeperThread keeper_;  // before cluster_: outlives the processes it started
  std::unique_ptr<real::EtcdCluster> cluster_;
  std::map<int, ClientLink> links_;
};

}  // namespace

std::unique_ptr<Backend> make_etcd_real_backend(BackendEnv& env, EtcdAdapterFactory make_adapter) {
  return std::make_unique<EtcdRealBackend>(env, std::move(make_adapter));
}

}  // namespace lockstep
