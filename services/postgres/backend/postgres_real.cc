// The PostgreSQL advisory locks against a private PostgreSQL 15 cluster on loopback.
#include <chrono>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "lockstep/clock.h"
#include "real/keeper_thread.h"
#include "real/server_errors.h"
#include "real/tcp_proxy.h"
#include "services/postgres/adapter/libpq_connection.h"
#include "services/postgres/backend/postgres_backend.h"
#include "services/postgres/backend/real_leases.h"
#include "services/postgres/real/pg_server.h"

namespace lockstep {

namespace {

struct ClientLink {
  int client = -1;
  std::unique_ptr<real::TcpProxy> proxy;  // client <-> server, for partitions
  std::unique_ptr<LibpqConnector> connector;
  SystemClock clock;
  std::unique_ptr<LockAdapter> adapter;  // last: its connections go before the connector
};

class PostgresRealBackend final : public Backend {
 public:
  PostgresRealBackend(BackendEnv& env, AdvisoryMode mode)
      : world_(env.world), options_(env.options), mode_(mode), leases_(env.recorder) {
    real::PgServerProcess::bin_dir();  // ServerUnavailable, saying what to install
    if (options_.get_int("replicas") > 0) {
      throw WorldUnsupported("a streaming replica (replicas=1) is simulated only");
    }
    keeper_.run([this] { server_ = std::make_unique<real::PgServerProcess>(); });
    env.world.trace_linef("server postgres pid {} at {}", server_->pid(), server_->endpoint());
    admin_ = std::make_unique<LibpqConnection>(LibpqOptions{.port = server_->port()});
    const PgResult opened = admin_->open();
    const PgResult created =
        opened.ok() ? admin_->execute(fmt::format("CREATE SEQUENCE {}", kFencingSequence)) : opened;
    if (!created.ok()) {
      throw real::ServerStartError("postgres at " + server_->endpoint() +
                                   " did not take the fencing sequence: " + describe(created));
    }
  }

  LockAdapter& adapter_for(int client, int node) override {
    ClientLink& link = links_[node];
    link.proxy =
        std::make_unique<real::TcpProxy>(real::TcpProxyOptions{.upstream_port = server_->port()});
    link.connector = std::make_unique<LibpqConnector>(
        LibpqOptions{.port = link.proxy->port(),
                     .connect_timeout_ms = options_.get_int("command_timeout_ms"),
                     .command_timeout_ms = options_.get_int("command_timeout_ms")});
    link.client = client;
    link.adapter = recording_adapter(std::make_unique<AdvisoryAdapter>(advisory_options(
                                         *link.connector, link.clock, mode_, options_)),
                                     leases_, client);
    // A client's death closes its sessions, as its process's would.
    LibpqConnector* connector = link.connector.get();
    world_.attach_client_process(node, {.stop = [] {},
                                        .resume = [] {},
                                        .kill =
                                            [this, connector, client] {
                                              connector->abort_all();
                                              leases_.revoke_all_of(client, "client died");
                                            }});
    return *link.adapter;
  }

  int server_count() const override { return 1; }
  bool records_leases() const override { return true; }
  std::string library() const override { return {}; }

  void partition(int client_node, bool two_way) override {
    real::TcpProxy& proxy = *link(client_node).proxy;
    proxy.set_hold(real::Direction::to_client, true);
    if (two_way) proxy.set_hold(real::Direction::to_upstream, true);
  }
  void partition_server(int client_node, int server, bool two_way) override {
    check_server(server);
    partition(client_node, two_way);
  }
  void heal() override {
    for (auto& [node, l] : links_) l.proxy->heal();
  }
  // The proxy closes both ends with an RST: the server ends the client's sessions, and their
  // locks, as the RST reaches it (recorded as it is sent, as a termination is).
  void reset_connections(int client_node, int64_t for_us) override {
    require_instant_reset(for_us);
    leases_.revoke_all_of(link(client_node).client, "connection reset");
    link(client_node).proxy->reset_all();
  }

  void crash_server(int server) override {
    check_server(server);
    server_->crash();
    leases_.revoke_all("server crash");
  }
  // On the keeper: the server dies with the thread that started it, and the fault thread ends
  // first.
  void restart_server(int server) override {
    check_server(server);
    keeper_.run([this] { server_->restart(); });
    admin_ = std::make_unique<LibpqConnection>(LibpqOptions{.port = server_->port()});
  }
  void pause_server(int server, int64_t duration_us) override {
    check_server(server);
    // The fault's own thread holds the pause (faults run one after another).
    server_->pause();
    std::this_thread::sleep_for(std::chrono::microseconds(duration_us));
    server_->resume();
  }

  void end_session(int client_node) override {
    if (!admin_->is_open() && !admin_->open().ok()) {
      throw std::runtime_error("no administrator session to end a client's session with");
    }
    // Recorded as the termination starts: pg_terminate_backend(pid, 5000) returns only once the
    // backend process has exited, well after its locks went to the next waiter.
    leases_.revoke_all_of(link(client_node).client, "session terminated");
    for (int64_t pid : link(client_node).connector->session_pids()) {
      const PgResult ended =
          admin_->execute(fmt::format("SELECT pg_terminate_backend({}, 5000)", pid));
      world_.trace_linef("server postgres: pg_terminate_backend({}) -> {}", pid, describe(ended));
    }
  }

 private:
  ClientLink& link(int client_node) {
    auto it = links_.find(client_node);
    if (it == links_.end()) throw WorldUnsupported("no client on that node");
    return it->second;
  }
  static void check_server(int server) {
    if (server != 0) throw WorldUnsupported(fmt::format("no postgres server {}", server));
  }

  ScenarioWorld& world_;
  const Options& options_;
  AdvisoryMode mode_;
  RealPgLeases leases_;        // before links_: their adapters report to it
  real::KeeperThread keeper_;  // before server_: outlives the process it started
  std::unique_ptr<real::PgServerProcess> server_;
  std::unique_ptr<LibpqConnection> admin_;
  std::map<int, ClientLink> links_;
};

}  // namespace

std::unique_ptr<Backend> make_postgres_real_backend(BackendEnv& env, AdvisoryMode mode) {
  return std::make_unique<PostgresRealBackend>(env, mode);
}

}  // namespace lockstep
