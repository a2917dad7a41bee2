// Redlock against N real redis-server processes on loopback.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "real/keeper_thread.h"
#include "real/tcp_proxy.h"
#include "services/redis/real/redis_server.h"
#include "services/redlock/adapter/polling_fanout.h"
#include "services/redlock/backend/redlock_backend.h"

namespace lockstep {

namespace {

struct RealClientLink {
  std::vector<std::unique_ptr<real::TcpProxy>>
      proxies;  // one per node, when the scenario partitions
  std::unique_ptr<PollingFanout> fanout;
  SystemClock clock;
  SystemRandom random;
  std::unique_ptr<LockAdapter> adapter;
};

class RedlockRealBackend final : public Backend {
 public:
  RedlockRealBackend(BackendEnv& env, RedlockAdapterFactory make_adapter)
      : make_adapter_(std::move(make_adapter)),
        settings_(redlock_settings_from(env.options)),
        options_(env.options),
        use_proxies_(cuts_clients_off(env.options)) {
    // libfaketime must be preloaded at start for a later jump; only scenarios that jump ask for it.
    const real::RedisServerOptions server_options{
        .persistence = real::persistence_from_name(env.options.get("persistence")),
        .clock_jumps = env.options.has("jump_ms")};
    const int64_t nodes = env.options.get_int("nodes");
    for (int64_t i = 0; i < nodes; ++i) {
      servers_.push_back(std::make_unique<real::RedisServerProcess>(server_options));
      env.world.trace_linef("server redis-{} pid {} at {}", i, servers_.back()->pid(),
                            servers_.back()->endpoint());
    }
  }

  LockAdapter& adapter_for(int, int node) override {
    RealClientLink& link = links_[node];
    PollingFanoutOptions options;
    for (auto& server : servers_) {
      int port = server->port();
      if (use_proxies_) {
        link.proxies.push_back(
            std::make_unique<real::TcpProxy>(real::TcpProxyOptions{.upstream_port = port}));
        port = link.proxies.back()->port();
      }
      options.endpoints.push_back({.port = port});
    }
    link.fanout = std::make_unique<PollingFanout>(std::move(options));
    RedlockAdapterParts parts{
        .fanout = *link.fanout, .clock = link.clock, .random = link.random, .settings = settings_};
    link.adapter = make_adapter_(parts);
    return *link.adapter;
  }

  int server_count() const override { return static_cast<int>(servers_.size()); }
  bool records_leases() const override { return false; }  // quorum 1: one derived lease per lock

  void partition(int client_node, bool two_way) override {
    for (int i = 0; i < server_count(); ++i) partition_server(client_node, i, two_way);
  }
  void partition_server(int client_node, int server, bool two_way) override {
    if (!use_proxies_)
      throw WorldUnsupported("partitions need the per-node proxies of a partition scenario");
    real::TcpProxy& proxy = *links_.at(client_node).proxies.at(static_cast<size_t>(server));
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
    if (!use_proxies_)
      throw WorldUnsupported("resets need the per-node proxies of a partition scenario");
    for (auto& proxy : links_.at(client_node).proxies) proxy->reset_all();
  }

  void crash_server(int server) override { at(server).crash(); }
  void restart_server(int server) override {
    keeper_.run([this, server] { at(server).restart(); });
  }
  // SIGSTOP for the duration; the fault thread waits it out (faults are short and few).
  void pause_server(int server, int64_t duration_us) override {
    at(server).pause();
    std::this_thread::sleep_for(std::chrono::microseconds(duration_us));
    at(server).resume();
  }
  void jump_server_clock(int server, int64_t delta_us) override {
    const int64_t seconds = (delta_us + (delta_us >= 0 ? 999'999 : -999'999)) /
                            1'000'000;  // whole seconds, away from 0
    at(server).jump_clock_s(seconds);
  }

 private:
  real::RedisServerProcess& at(int server) { return *servers_.at(static_cast<size_t>(server)); }

  RedlockAdapterFactory make_adapter_;
  RedlockSettings settings_;
  const Options& options_;
  bool use_proxies_;
  real::KeeperThread keeper_;  // before servers_: outlives the processes it restarted
  std::vector<std::unique_ptr<real::RedisServerProcess>> servers_;
  std::map<int, RealClientLink> links_;
};

}  // namespace

std::unique_ptr<Backend> make_redlock_real_backend(BackendEnv& env,
                                                   RedlockAdapterFactory make_adapter) {
  return std::make_unique<RedlockRealBackend>(env, std::move(make_adapter));
}

bool cuts_clients_off(const Options& options) {
  for (const char* name :
       {"partition_at_ms", "jump_ms", "restart_delay_ms", "heal_at_ms", "reset_at_ms"}) {
    if (options.has(name)) return true;
  }
  return false;
}

}  // namespace lockstep
