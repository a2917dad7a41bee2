// The Mongo lock against a real mongod: one the harness starts on loopback when mongod is on PATH,
// or the deployment LOCKSTEP_MONGO_URI points at.
//
// A started mongod is a one-member replica set; each client reaches it through a TCP proxy of its
// own (a direct connection, so the driver does not go around the proxy), which is how one client
// is partitioned. A deployment given by URI is used as it is: no server faults, no partitions.
// Either way the lock collections are dropped first, so a run never sees an earlier run's locks.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "harness/usage_error.h"
#include "lockstep/options.h"
#include "real/keeper_thread.h"
#include "real/server_errors.h"
#include "real/tcp_proxy.h"
#include "services/mongo/adapter/mongo_adapter.h"
#include "services/mongo/adapter/mongoc_connection.h"
#include "services/mongo/backend/mongo_backend.h"
#include "services/mongo/real/mongod_server.h"

namespace lockstep {

namespace {

bool uri_from_environment() {
  const char* uri = std::getenv("LOCKSTEP_MONGO_URI");
  return uri != nullptr && *uri != '\0';
}

// The hosts of LOCKSTEP_MONGO_URI, checked before any connection (the driver would log its own
// complaint on stderr and throw past the command line's exit codes): a scheme, and each host
// non-empty with a port, when given, in 1..65535. Exit 2 with one line otherwise.
void check_mongo_uri(const std::string& uri) {
  const auto refuse = [&uri](const std::string& why) {
    throw UsageError(fmt::format(
        "LOCKSTEP_MONGO_URI={}: {}; expected mongodb://HOST[:PORT][,HOST[:PORT]...][/?OPTIONS]",
        quote_value(uri), why));
  };
  std::string rest;
  for (const char* scheme : {"mongodb://", "mongodb+srv://"}) {
    if (uri.rfind(scheme, 0) == 0) rest = uri.substr(std::string_view(scheme).size());
  }
  if (rest.empty()) refuse("not a mongodb:// or mongodb+srv:// URI with a host");
  const std::string hosts = rest.substr(0, rest.find_first_of("/?"));
  const std::string without_user = hosts.substr(hosts.rfind('@') + 1);  // npos + 1 == 0
  size_t start = 0;
  while (start <= without_user.size()) {
    const size_t comma = std::min(without_user.find(',', start), without_user.size());
    const std::string host = without_user.substr(start, comma - start);
    const size_t colon = host.rfind(':');
    const bool has_port = colon != std::string::npos && host.find(']', colon) == std::string::npos;
    if ((has_port ? colon : host.size()) == 0) refuse("a host is empty");
    if (has_port) {
      const std::string port = host.substr(colon + 1);
      const bool digits = !port.empty() && port.size() <= 5 &&
                          port.find_first_not_of("0123456789") == std::string::npos;
      if (!digits || std::stoi(port) < 1 || std::stoi(port) > 65535) {
        refuse(fmt::format("port {} is not in 1..65535", quote_value(port)));
      }
    }
    start = comma + 1;
  }
}

struct ClientLink {
  std::unique_ptr<real::TcpProxy> proxy;  // only with a mongod the harness started
  std::unique_ptr<MongocConnection> connection;
  std::unique_ptr<LockAdapter> adapter;
};

class MongoRealBackend final : public Backend {
 public:
  MongoRealBackend(BackendEnv& env, MongoAdapterFactory make_adapter)
      : world_(env.world), options_(env.options), make_adapter_(std::move(make_adapter)) {
    if (uri_from_environment()) {
      uri_ = default_mongo_uri();
      check_mongo_uri(uri_);
      env.world.trace_linef("server mongo at LOCKSTEP_MONGO_URI ({})",
                            MongocConnection({.uri = uri_}).endpoint());
    } else {
      real::MongodProcess::binary_path();  // ServerUnavailable, saying how to provide one
      keeper_.run([this] { mongod_ = std::make_unique<real::MongodProcess>(); });
      uri_ = mongod_->uri();
      env.world.trace_linef("server mongod pid {} at {}", mongod_->pid(), uri_);
    }
    drop_lock_collections();
  }

  LockAdapter& adapter_for(int, int node) override {
    ClientLink& link = links_[node];
    std::string uri = uri_;
    if (mongod_) {
      link.proxy =
          std::make_unique<real::TcpProxy>(real::TcpProxyOptions{.upstream_port = mongod_->port()});
      uri = fmt::format("mongodb://127.0.0.1:{}/?directConnection=true", link.proxy->port());
    }
    const int64_t timeout_ms = options_.get_int("command_timeout_ms");
    link.connection = std::make_unique<MongocConnection>(
        MongocOptions{.uri = uri, .socket_timeout_ms = timeout_ms});
    link.adapter = make_adapter_(*link.connection, world_.clock(node), options_);
    return *link.adapter;
  }

  int server_count() const override { return 1; }
  bool records_leases() const override { return false; }

  void partition(int client_node, bool two_way) override {
    real::TcpProxy& proxy = proxy_for(client_node);
    proxy.set_hold(real::Direction::to_client, true);
    if (two_way) proxy.set_hold(real::Direction::to_upstream, true);
  }
  void heal() override {
    for (auto& [node, link] : links_) {
      if (link.proxy) link.proxy->heal();
    }
  }
  void reset_connections(int client_node, int64_t for_us) override {
    require_instant_reset(for_us);
    proxy_for(client_node).reset_all();
  }
  void partition_server(int client_node, int server, bool two_way) override {
    started_server(server);
    partition(client_node, two_way);
  }

  void crash_server(int server) override { started_server(server).crash(); }
  // On the keeper: a mongod dies with the thread that started it, and the fault thread ends first.
  void restart_server(int server) override {
    real::MongodProcess& mongod = started_server(server);
    keeper_.run([&mongod] { mongod.restart(); });
  }
  void pause_server(int server, int64_t duration_us) override {
    // As for Redis: the fault's own thread holds the pause (faults run one after another).
    real::MongodProcess& mongod = started_server(server);
    mongod.pause();
    std::this_thread::sleep_for(std::chrono::microseconds(duration_us));
    mongod.resume();
  }

 private:
  void drop_lock_collections() {
    MongocConnection admin({.uri = uri_});
    const MongoAdapterOptions layout;
    for (const std::string& collection : {layout.collection, layout.fencing_collection}) {
      const MongoResult dropped =
          admin.run_command(layout.database, MongoDocument{{"drop", collection}});
      if (!dropped.ok()) {
        throw real::ServerStartError(
            fmt::format("mongo at {} did not answer: {}", admin.endpoint(), dropped.message));
      }
      // ok:0 with NamespaceNotFound (26): there was nothing to drop.
    }
  }

  real::MongodProcess& started_server(int server) {
    if (!mongod_)
      throw WorldUnsupported("a deployment given by LOCKSTEP_MONGO_URI takes no server faults");
    if (server != 0)
      throw WorldUnsupported(fmt::format("no mongod {} (the harness starts one)", server));
    return *mongod_;
  }

  real::TcpProxy& proxy_for(int client_node) {
    auto it = links_.find(client_node);
    if (!mongod_ || it == links_.end() || !it->second.proxy) {
      throw WorldUnsupported("only a client of a mongod the harness started can be partitioned");
    }
    return *it->second.proxy;
  }

  ScenarioWorld& world_;
  const Options& options_;
  MongoAdapterFactory make_adapter_;
  real::KeeperThread keeper_;  // before mongod_: outlives the process it started
  std::unique_ptr<real::MongodProcess> mongod_;
  std::string uri_;
  std::map<int, ClientLink> links_;
};

}  // namespace

std::unique_ptr<Backend> make_mongo_real_backend(BackendEnv& env,
                                                 MongoAdapterFactory make_adapter) {
  return std::make_unique<MongoRealBackend>(env, std::move(make_adapter));
}

}  // namespace lockstep
