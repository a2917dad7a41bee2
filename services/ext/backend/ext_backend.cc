#include "services/ext/backend/ext_backend.h"

#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "base/check.h"
#include "lockstep/redis.h"
#include "real/child_process.h"
#include "real/keeper_thread.h"
#include "real/server_errors.h"
#include "real/tcp_proxy.h"
#include "services/etcd/backend/etcd_backend.h"
#include "services/etcd/real/etcd_cluster.h"
#include "services/ext/backend/ext_sim.h"
#include "services/ext/driver/driver_process.h"
#include "services/ext/driver/node_drivers.h"
#include "services/postgres/adapter/advisory_adapter.h"
#include "services/postgres/adapter/libpq_connection.h"
#include "services/postgres/backend/postgres_backend.h"
#include "services/postgres/backend/real_leases.h"
#include "services/postgres/real/pg_server.h"
#include "services/redis/real/redis_server.h"
#include "services/redlock/backend/redlock_backend.h"

namespace lockstep {

namespace ext {

// A driver broke the protocol (died, hung, wrote a malformed line, refused a request, could not
// start): not a lock outcome, so not a LockError. It escapes the client and ends the run as an
// error carrying the message, which names the rule, with nothing judged (ClientProtocolBroken).
class DriverFailed : public ClientProtocolBroken {
 public:
  using ClientProtocolBroken::ClientProtocolBroken;
};

}  // namespace ext

namespace {

struct ExtLibrary {
  const char* adapter;
  const char* lib;  // services/ext/node/libs/LIB.js; "" for a user's driver (the `driver` option)
  const char* description;
  bool over_nodes;        // Redlock: N independent redis-servers
  bool in_memory;         // no server: the store is the driver's memory, shared by every client
  bool extends = true;    // false: no extend call (redis-semaphore refreshes on its own timer)
  bool postgres = false;  // over one PostgreSQL server (session advisory locks)
  bool etcd = false;      // over an etcd cluster (lease locks)
};

constexpr ExtLibrary kLibraries[] = {
    {"ext:locco-redis", "locco-redis",
     "@kontsedal/locco 0.1.0 (npm, Node driver) with its ioredis adapter: SET NX PX, Lua "
     "compare-and-delete "
     "release, compare-and-set extend; random lock value, no fencing token",
     false, false},
    {"ext:locco-memory", "locco-memory",
     "@kontsedal/locco 0.1.0 (npm, Node driver) with its in-memory adapter; every client shares "
     "one driver "
     "process; random lock value, no fencing token",
     false, true},
    {"ext:node-redlock", "node-redlock",
     "redlock 5.0.0-beta.2 (npm node-redlock, Node driver) over N redis-servers (nodes: 3, 5, 7); "
     "random lock "
     "value, no fencing token",
     true, false},
    {"ext:redis-semaphore", "redis-semaphore",
     "redis-semaphore 5.8.0 Mutex (npm, Node driver): SET NX PX, refreshed every 0.8 TTL while its "
     "process runs; "
     "no extend, release does not report its result; random identifier, no fencing token",
     false, false, false},
    {"ext:redis-semaphore-redlock", "redis-semaphore-redlock",
     "redis-semaphore 5.8.0 RedlockMutex (npm, Node driver) over N redis-servers (nodes: 3, 5, 7), "
     "refreshed "
     "every 0.8 TTL; random identifier, no fencing token",
     true, false, false},
    {"ext:advisory-lock", "advisory-lock",
     "advisory-lock 2.0.0 (npm, Node driver) over PostgreSQL: a session advisory lock on a new "
     "session (node-postgres Client) per lock, pg_try_advisory_lock to take it, "
     "pg_advisory_unlock and the session closed to give it back; no expiry, no extend, release "
     "does not report its result, no fencing token",
     false, false, false, true},
    {"ext:etcd3", "etcd3",
     "etcd3 1.1.2 (npm, Node driver) Lock over etcd's gRPC API (@grpc/grpc-js): a lease of the TTL "
     "in whole seconds, the key put if its create revision is 0, else refused (one attempt); the "
     "lease kept alive every TTL/3 while held; release revokes the lease and does not report its "
     "result; no extend, no fencing token",
     false, false, false, false, true},
};

// A user's driver for a lock library in any language that speaks services/ext/PROTOCOL.md, over one
// redis-server: `--adapter ext --set driver='python3 my_driver.py'`.
constexpr ExtLibrary kUserDriver = {
    "ext", "",
    "your own lock library's driver (services/ext/PROTOCOL.md), started as --set driver='COMMAND "
    "ARGS' "
    "with --redis 127.0.0.1:PORT appended (--world sim: --sim --redis sim:0, for a driver of "
    "protocol 2); over one Redis; judged as an owner-checked lease, with fencing tokens if "
    "--set tokens=monotonic",
    false, false};
constexpr size_t kDriverCommandBytesMax = 4096;

// Splits a driver command into words: whitespace separates, single or double quotes group (no
// escapes, no shell: no variables, globs or redirections). nullopt for an unclosed quote.
std::optional<std::vector<std::string>> split_command(const std::string& command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (const char ch : command) {
    if (quote != 0) {
      if (ch == quote) {
        quote = 0;
      } else {
        word += ch;
      }
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
      in_word = true;
    } else if (ch == ' ' || ch == '\t') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += ch;
      in_word = true;
    }
  }
  if (quote != 0) return std::nullopt;
  if (in_word) words.push_back(std::move(word));
  return words;
}

// The driver command of a user's driver: the program resolved (a path, or a name on PATH) and
// its arguments. Throws ServerUnavailable (exit 3) when the program is not there.
std::vector<std::string> user_driver_command(const std::string& command) {
  std::vector<std::string> words = split_command(command).value_or(std::vector<std::string>{});
  LOCKSTEP_CHECK(!words.empty(), "check_options lets no empty driver command through");
  std::string& program = words.front();
  if (program.find('/') == std::string::npos) {
    const std::optional<std::string> found = real::find_on_path(program);
    if (!found) {
      throw real::ServerUnavailable(
          fmt::format("the driver's program \"{}\" is not on PATH (install it, or give its path "
                      "in --set driver=)",
                      program));
    }
    program = *found;
  } else if (access(program.c_str(), X_OK) != 0) {
    throw real::ServerUnavailable(
        fmt::format("the driver's program \"{}\" is not an executable file", program));
  }
  return words;
}

// One client's view of a driver (its own, or a shared one with `client` set).
class ExtAdapter final : public LockAdapter {
 public:
  ExtAdapter(std::string name, ext::DriverProcess& driver, int client, FencingSupport fencing,
             std::function<void(std::string)> trace)
      : name_(std::move(name)),
        driver_(driver),
        client_(client),
        fencing_(fencing),
        trace_(std::move(trace)) {}

  std::string_view name() const override { return name_; }
  FencingSupport fencing() const override { return fencing_; }

  AdapterResult create_lock(const LockSpec& spec) override {
    const ext::Response r = call(
        {.op = ext::Op::acquire, .handle = spec.value, .key = spec.key, .ttl_ms = spec.ttl_ms});
    switch (r.status) {
      case ext::Status::ok: return {.fencing_token = token_of(r)};
      case ext::Status::contended: return {.status = AdapterStatus::contended};
      default: return failed("acquire", r);
    }
  }
  AdapterResult release_lock(const LockSpec& spec) override {
    const ext::Response r = call({.op = ext::Op::release, .handle = spec.value});
    if (r.status == ext::Status::unknown) {
      return {.status = AdapterStatus::backend_error,
              .message = "the library's release does not say whether it removed the lock"};
    }
    return owner_checked("release", r);
  }
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override {
    return owner_checked("extend",
                         call({.op = ext::Op::extend, .handle = spec.value, .ttl_ms = ttl_ms}));
  }
  AdapterResult is_valid_lock(const LockSpec& spec) override {
    return owner_checked("is_locked", call({.op = ext::Op::is_locked, .handle = spec.value}));
  }
  // The TTL from the request (LockAdapter's default) is assumed, not the library's word.
  bool reports_validity(const LockSpec&) const override { return false; }

 private:
  ext::Response call(ext::Request request) {
    request.client = client_;
    ext::CallResult result = driver_.call(request);
    if (!result.ok()) throw ext::DriverFailed(result.message);
    const ext::Response& r = result.response;
    trace_(fmt::format(
        "{} {} {} {}{}{} (library {} us, round trip {} us)", name_, to_string(request.op),
        request.key.empty() ? request.handle.substr(0, 8) : request.key, to_string(r.status),
        r.token.empty() ? "" : " token=" + r.token.substr(0, 12),
        r.err ? fmt::format(" {}: {:.120}", r.err->name, r.err->message) : std::string(),
        (r.t1_ns - r.t0_ns) / 1000, (result.received_ns - result.sent_ns) / 1000));
    if (r.status == ext::Status::bad_request) {
      throw ext::DriverFailed(fmt::format(
          "driver {} {}", name_,
          ext::broke(ext::kRuleRequests,
                     fmt::format("refused a request as bad: {}",
                                 r.err ? r.err->message : std::string("(no message)")))));
    }
    return r;
  }

  uint64_t token_of(const ext::Response& r) const {
    if (fencing() != FencingSupport::monotonic) return 0;
    if (const std::optional<uint64_t> token = decimal_token(r.token)) return *token;
    throw ext::DriverFailed(fmt::format("driver {} {}", name_, token_not_decimal(r.token)));
  }

  AdapterResult owner_checked(const char* op, const ext::Response& r) const {
    switch (r.status) {
      case ext::Status::ok: return {};
      case ext::Status::not_owner: return {.status = AdapterStatus::not_owner};
      default: return failed(op, r);
    }
  }

  AdapterResult failed(const char* op, const ext::Response& r) const {
    std::string message = r.status == ext::Status::unsupported
                              ? fmt::format("the library offers no {}", op)
                              : fmt::format("{} {}", op, to_string(r.status));
    if (r.err) message += fmt::format(": {}: {}", r.err->name, r.err->message);
    return {.status = AdapterStatus::backend_error, .message = std::move(message)};
  }

  std::string name_;
  ext::DriverProcess& driver_;
  int client_;
  FencingSupport fencing_;  // declared by the run; the driver's ready line agreed
  std::function<void(std::string)> trace_;
};

class ExtBackend final : public Backend {
 public:
  ExtBackend(BackendEnv& env, const ExtLibrary& library)
      : env_(env),
        library_(library),
        node_(*library.lib == '\0' ? std::string() : ext::require_node_drivers()),
        user_command_(*library.lib == '\0' ? user_driver_command(env.options.get("driver"))
                                           : std::vector<std::string>{}),
        deadline_ms_(env.options.get_int("ext_deadline_ms")),
        command_timeout_ms_(env.options.has("ext_command_timeout_ms")
                                ? env.options.get_int("ext_command_timeout_ms")
                                : 0),
        use_proxies_(library.postgres || cuts_clients_off(env.options)),
        fencing_(declared_fencing(env.options)) {
    if (env.options.has("replicas") && env.options.get_int("replicas") > 0) {
      throw WorldUnsupported("the ext adapters' replica to fail over to is simulated only");
    }
    if (library.postgres) {
      start_postgres();
    } else if (library.etcd) {
      start_etcd();
    } else if (!library.in_memory) {
      const int64_t nodes = library.over_nodes ? env.options.get_int("nodes") : 1;
      const real::RedisServerOptions server_options{
          .persistence = real::persistence_from_name(env.options.get("persistence")),
          .clock_jumps = env.options.has("jump_ms")};
      for (int64_t i = 0; i < nodes; ++i) {
        servers_.push_back(std::make_unique<real::RedisServerProcess>(server_options));
        env.world.trace_linef("server redis-{} pid {} at {}", i, servers_.back()->pid(),
                              servers_.back()->endpoint());
      }
    }
    if (env.options.has("clients") && env.options.get_int("clients") > kDriverProcessesMax) {
      pooled_ = true;
      env.world.trace_linef("{}: {} clients share {} driver processes (no client pauses here)",
                            library.adapter, env.options.get_int("clients"), kDriverProcessesMax);
    }
    if (library.in_memory) shared_.push_back(start_driver("shared", {}));
  }

  LockAdapter& adapter_for(int client, int node) override {
    auto trace = [this](const std::string& line) { env_.world.trace_line(line); };
    if (library_.in_memory) {
      adapters_.push_back(std::make_unique<ExtAdapter>(library_.adapter, *shared_.front(), client,
                                                       fencing_, trace));
      return *adapters_.back();
    }
    client_of_node_[node] = client;
    std::vector<int> ports;
    std::vector<std::unique_ptr<real::TcpProxy>>& proxies = proxies_[node];
    for (int port : server_ports()) {
      if (use_proxies_) {
        proxies.push_back(
            std::make_unique<real::TcpProxy>(real::TcpProxyOptions{.upstream_port = port}));
        port = proxies.back()->port();
      }
      ports.push_back(port);
    }
    if (pooled_) {
      if (shared_.size() < static_cast<size_t>(kDriverProcessesMax)) {
        shared_.push_back(start_driver(fmt::format("pool {}", shared_.size()), ports));
      }
      ext::DriverProcess& driver = *shared_[static_cast<size_t>(client) % shared_.size()];
      return keep(std::make_unique<ExtAdapter>(library_.adapter, driver, client, fencing_, trace),
                  client);
    }
    own_.push_back(start_driver(fmt::format("client {}", client), ports, session_name(client)));
    ext::DriverProcess* driver = own_.back().get();
    // A killed driver's kernel closes its sockets: the server ends its sessions and their locks.
    env_.world.attach_client_process(node, {.stop = [driver] { driver->stop(); },
                                            .resume = [driver] { driver->resume(); },
                                            .kill =
                                                [this, driver, client] {
                                                  driver->kill();
                                                  if (pg_leases_)
                                                    pg_leases_->revoke_all_of(client,
                                                                              "client died");
                                                }});
    return keep(std::make_unique<ExtAdapter>(library_.adapter, *driver, -1, fencing_, trace),
                client);
  }

  int server_count() const override {
    if (etcd_) return etcd_->members();
    return std::max<int>(1, static_cast<int>(servers_.size()));
  }
  std::string library() const override {
    const ext::DriverProcess* driver =
        !own_.empty() ? own_.front().get() : (!shared_.empty() ? shared_.front().get() : nullptr);
    if (driver == nullptr) return {};
    return fmt::format("{} {} (protocol {})", driver->ready().name, driver->ready().version,
                       driver->ready().protocol);
  }
  // A PostgreSQL library's leases are the backend's record of its sessions; a Redis library's
  // are derived from its clients (the servers report none).
  bool records_leases() const override { return pg_leases_ != nullptr; }

  void partition(int client_node, bool two_way) override {
    for (int i = 0; i < static_cast<int>(server_ports().size()); ++i)
      partition_server(client_node, i, two_way);
  }
  void partition_server(int client_node, int server, bool two_way) override {
    if (!use_proxies_)
      throw WorldUnsupported("partitions need the per-server proxies of a partition scenario");
    real::TcpProxy& proxy = *proxies_.at(client_node).at(static_cast<size_t>(server));
    proxy.set_hold(real::Direction::to_client, true);
    if (two_way) proxy.set_hold(real::Direction::to_upstream, true);
  }
  void heal() override {
    for (auto& [node, proxies] : proxies_) {
      for (auto& proxy : proxies) proxy->heal();
    }
  }
  void reset_connections(int client_node, int64_t for_us) override {
    require_instant_reset(for_us);
    if (!use_proxies_)
      throw WorldUnsupported("resets need the per-server proxies of a partition scenario");
    // The proxy's RST ends the client's sessions at the server (recorded as it is sent).
    if (pg_leases_) pg_leases_->revoke_all_of(client_of(client_node), "connection reset");
    for (auto& proxy : proxies_.at(client_node)) proxy->reset_all();
  }
  // An etcd library's cluster: its leader dies and the others elect another (-1: a real cluster
  // cannot tell what the next leader lacks; Raft loses no acknowledged write).
  int64_t failover() override {
    if (!etcd_) return Backend::failover();
    etcd_->crash_leader();
    return -1;
  }
  void crash_server(int server) override {
    if (etcd_) return etcd_->crash(etcd_member(server));
    if (!pg_) return at(server).crash();
    pg_->crash();
    pg_leases_->revoke_all("server crash");
  }
  void restart_server(int server) override {
    keeper_.run([this, server] {
      if (etcd_) return etcd_->restart(etcd_member(server));
      if (!pg_) return at(server).restart();
      pg_->restart();
    });
    if (pg_) pg_admin_ = std::make_unique<LibpqConnection>(LibpqOptions{.port = pg_->port()});
  }
  void pause_server(int server, int64_t duration_us) override {
    if (etcd_) {
      etcd_->pause(etcd_member(server));
    } else if (pg_) {
      pg_->pause();
    } else {
      at(server).pause();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(duration_us));
    if (etcd_) {
      etcd_->resume(etcd_member(server));
    } else if (pg_) {
      pg_->resume();
    } else {
      at(server).resume();
    }
  }
  // pg_terminate_backend of the client's sessions, which its driver names after it
  // (application_name); recorded as the termination starts, as lockstep's postgres backend does.
  void end_session(int client_node) override {
    if (!pg_) return Backend::end_session(client_node);
    if (!pg_admin_->is_open() && !pg_admin_->open().ok()) {
      throw std::runtime_error("no administrator session to end a client's session with");
    }
    const int client = client_of(client_node);
    pg_leases_->revoke_all_of(client, "session terminated");
    const PgResult ended = pg_admin_->execute(
        fmt::format("SELECT pid, pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE "
                    "application_name = '{}'",
                    session_name(client)));
    env_.world.trace_linef("server postgres: terminating the sessions of {} -> {}",
                           session_name(client), describe(ended));
  }
  void jump_server_clock(int server, int64_t delta_us) override {
    if (pg_) throw WorldUnsupported("the real PostgreSQL server's clock does not jump here");
    if (etcd_) {
      throw WorldUnsupported(
          "etcd's clock cannot be faulted in the real world: libfaketime does "
          "not reach a Go program's clock");
    }
    const int64_t seconds = (delta_us + (delta_us >= 0 ? 999'999 : -999'999)) / 1'000'000;
    at(server).jump_clock_s(seconds);
  }

 private:
  // A private PostgreSQL cluster (services/postgres/real/pg_server.h), started on the keeper
  // (the server dies with the thread that started it), and an administrator's session.
  void start_postgres() {
    real::PgServerProcess::bin_dir();  // ServerUnavailable, saying what to install
    keeper_.run([this] { pg_ = std::make_unique<real::PgServerProcess>(); });
    env_.world.trace_linef("server postgres pid {} at {}", pg_->pid(), pg_->endpoint());
    pg_admin_ = std::make_unique<LibpqConnection>(LibpqOptions{.port = pg_->port()});
    pg_leases_ = std::make_unique<RealPgLeases>(env_.recorder);
  }
  // Debian's etcd on loopback as `members` members (services/etcd/real/etcd_cluster.h), started
  // on the keeper (a member dies with the thread that started it). A real cluster reports no
  // leases: they are derived from the clients.
  void start_etcd() {
    real::EtcdCluster::binary_path();  // ServerUnavailable, saying what to install
    const real::EtcdClusterOptions options{
        .members = static_cast<int>(env_.options.get_int("members")),
        .heartbeat_ms = env_.options.get_int("heartbeat_ms"),
        .election_timeout_ms = env_.options.get_int("election_timeout_ms")};
    keeper_.run([this, options] { etcd_ = std::make_unique<real::EtcdCluster>(options); });
    for (int m = 0; m < etcd_->members(); ++m) {
      env_.world.trace_linef("server etcd-{} pid {} at 127.0.0.1:{}", m, etcd_->pid(m),
                             etcd_->client_port(m));
    }
  }
  int etcd_member(int server) const { return lockstep::etcd_member(server, etcd_->members()); }
  // What a client's driver names its PostgreSQL sessions (application_name): "" for a Redis one.
  std::string session_name(int client) const {
    return pg_ ? fmt::format("lockstep-c{}", client) : std::string();
  }
  int client_of(int client_node) const {
    auto it = client_of_node_.find(client_node);
    if (it == client_of_node_.end()) throw WorldUnsupported("no client on that node");
    return it->second;
  }
  // The adapter a client uses, its session leases recorded for a PostgreSQL library.
  LockAdapter& keep(std::unique_ptr<LockAdapter> adapter, int client) {
    if (pg_leases_) {
      adapter = library_recording_adapter(std::move(adapter), *pg_leases_, client,
                                          session_lock_validity_us());
    }
    adapters_.push_back(std::move(adapter));
    return *adapters_.back();
  }

  std::unique_ptr<ext::DriverProcess> start_driver(const std::string& who,
                                                   const std::vector<int>& ports,
                                                   const std::string& session_name = "") {
    const std::string name = fmt::format("{} ({})", library_.adapter, who);
    try {
      auto driver = std::make_unique<ext::DriverProcess>(ext::DriverOptions{
          .program = user_command_.empty() ? node_ : user_command_.front(),
          .args = driver_args(ports, session_name),
          .name = name,
          .request_deadline_ms = deadline_ms_,
          .on_event = [this, name](const ext::Event& e) {
            env_.world.trace_linef("{} event {} key={} handle={:.8}{}", name, e.event, e.key,
                                   e.handle, e.err ? ": " + e.err->message : std::string());
          }});
      env_.world.trace_linef("driver {} pid {}: {} protocol {} token {}", name, driver->pid(),
                             driver->ready().version, driver->ready().protocol,
                             to_string(driver->ready().capabilities.token));
      const std::string broken = token_promise_broken(fencing_, driver->ready());
      if (!broken.empty()) throw ext::DriverFailed(fmt::format("driver {} {}", name, broken));
      return driver;
    } catch (const ext::DriverStartError& e) {
      throw ext::DriverFailed(e.what());  // the run's error: its message names the rule broken
    }
  }

  std::vector<std::string> driver_args(const std::vector<int>& ports,
                                       const std::string& session_name) const {
    if (user_command_.empty()) {
      std::vector<std::string> args =
          ext::node_driver_args(library_.lib, ports, command_timeout_ms_,
                                library_.postgres ? "--postgres"
                                : library_.etcd   ? "--etcd"
                                                  : "--redis");
      if (!session_name.empty()) args.insert(args.end(), {"--application-name", session_name});
      return args;
    }
    std::vector<std::string> args(user_command_.begin() + 1, user_command_.end());
    std::string endpoints;
    for (const int port : ports)
      endpoints += fmt::format("{}127.0.0.1:{}", endpoints.empty() ? "" : ",", port);
    args.push_back("--redis");
    args.push_back(endpoints);
    return args;
  }

  real::RedisServerProcess& at(int server) { return *servers_.at(static_cast<size_t>(server)); }
  // The port of each server the drivers reach (before a client's proxies).
  std::vector<int> server_ports() const {
    if (pg_) return {pg_->port()};
    if (etcd_) return etcd_->client_ports();
    std::vector<int> ports;
    for (const auto& server : servers_) ports.push_back(server->port());
    return ports;
  }

  BackendEnv& env_;
  const ExtLibrary& library_;
  std::string node_;
  std::vector<std::string> user_command_;  // a user's driver: program and its arguments
  int64_t deadline_ms_;
  int64_t command_timeout_ms_;
  bool use_proxies_;
  FencingSupport fencing_;  // what the run declared (the `tokens` option)
  bool pooled_ = false;
  real::KeeperThread keeper_;  // before servers_: outlives the processes it restarted
  std::vector<std::unique_ptr<real::RedisServerProcess>> servers_;
  // A PostgreSQL library's server, its administrator's session and the record of its sessions'
  // locks (before the drivers and adapters, which report to it).
  std::unique_ptr<real::PgServerProcess> pg_;
  std::unique_ptr<LibpqConnection> pg_admin_;
  std::unique_ptr<RealPgLeases> pg_leases_;
  std::unique_ptr<real::EtcdCluster> etcd_;  // an etcd library's cluster
  std::map<int, int> client_of_node_;
  std::map<int, std::vector<std::unique_ptr<real::TcpProxy>>>
      proxies_;  // by client node, one per server
  // Drivers after servers: they go first, while their servers still answer their shutdown.
  std::vector<std::unique_ptr<ext::DriverProcess>> shared_;
  std::vector<std::unique_ptr<ext::DriverProcess>> own_;
  std::vector<std::unique_ptr<LockAdapter>> adapters_;
};

// What each library claims to be (owner-checked release and extend, no fencing token), judged as
// such: a library whose claims do not hold shows it as a violation.
AdapterTraits ext_traits(const ExtLibrary& library) {
  if (library.postgres) {
    // A session lock without expiry, as lockstep's postgres adapters are (kPostgresTraits): a
    // paused or cut-off holder keeps it while its session lives; a reset, a failover (advisory
    // locks are not replicated) or a restart ends it under the holder, outside the envelope. It
    // reads no clock: a client clock's drift or jump is nothing to it.
    return {.servers = ServerLayout::one_server,
            .envelope = {.server_wall_clock = true, .connection_resets = false},
            .tokens = TokenKind::none,
            .extends = false,
            .server_expiry = ExpiryClock::none,
            .errors_mean_not_applied = false};
  }
  if (library.etcd) {
    // A lease lock on a Raft cluster, as lockstep's etcd locks are (kEtcdTraits: leases timed on
    // the leader's monotonic clock, a leader change and a member's restart survived, a paused
    // member outside), but one attempt per acquire (no queue), no token, no extend (its own
    // keepalive instead), and errors that say nothing of what applied. It times its keepalive
    // with Date.now() (a lease it has not renewed for two TTLs by the wall clock is given up): a
    // client's wall-clock step reaches it.
    AdapterTraits traits = kEtcdTraits;
    traits.envelope.client_wall_clock = false;
    traits.tokens = TokenKind::none;
    traits.extends = false;
    traits.queued_grant = QueuedGrant::none;
    traits.errors_mean_not_applied = false;
    return traits;
  }
  const ServerLayout servers = library.over_nodes  ? ServerLayout::independent_nodes
                               : library.in_memory ? ServerLayout::in_process
                                                   : ServerLayout::one_server;
  // The npm libraries time validity and retries with Date.now(): a wall-clock step reaches them.
  return {.servers = servers,
          .envelope = {.client_wall_clock = false},
          .tokens = TokenKind::none,
          .extends = library.extends,
          .errors_mean_not_applied = false};
}

// etcd3's: etcd's leases are whole seconds, kept past their TTL (etcd_findings), and a keepalive
// every third of the TTL outruns a fast leader.
std::vector<Finding> etcd3_sim_findings() {
  std::vector<Finding> out = etcd_findings(EtcdLockKind::library);
  out.push_back({.scenario = "clock-drift",
                 .violated = {},
                 .summary = "its keepalive renews the lease every third of its TTL: a leader "
                            "25% fast never lets it run out while A works"});
  return out;
}

// What the simulator has shown each library to do where its traits expect otherwise: seed 1 of
// the default matrix, fencing off and on alike (docs/npm-libraries.md, "Findings in the
// simulator", has the replay lines). Declared here so `matrix` charts them as findings; a release
// of the library that changes one shows as a difference again.
std::vector<Finding> sim_findings(const ExtLibrary& library) {
  const std::string lib = library.lib;
  std::vector<Finding> out;
  if (lib.empty() || library.in_memory) return out;  // a user's driver; not co-simulated
  if (library.etcd) return etcd3_sim_findings();
  if (library.postgres) {
    out.push_back({.scenario = "failover",
                   .violated = {Invariant::mutual_exclusion, Invariant::no_lost_update,
                                Invariant::validity_within_lease},
                   .end = RunEnd::error,
                   .summary = "after the expected violations (advisory locks are not "
                              "replicated), the holder's unlock waits on its connection to the "
                              "dead primary until TCP gives up: no statement or connection "
                              "timeout"});
    return out;
  }
  out.push_back({.scenario = "slow-acquire",
                 .violated = {Invariant::valid_on_return},
                 .summary = "returns a lock whose TTL ran out while it was being acquired: no "
                            "validity check after the grant"});
  const Expectation overlap = {Invariant::mutual_exclusion, Invariant::lease_exclusion,
                               Invariant::no_lost_update};
  if (lib == "node-redlock") {
    for (const char* scenario : {"clock-jump", "crash-restart"}) {
      out.push_back({.scenario = scenario,
                     .violated = overlap,
                     .end = RunEnd::error,
                     .summary = "after the expected violations, a release whose unreachable nodes "
                                "leave no quorum for or against never completes (no command "
                                "timeout)"});
    }
  }
  if (lib == "redis-semaphore-redlock") {
    const std::string waits = "waits for every node (Promise.all) with no command timeout";
    out.push_back({.scenario = "node-pause",
                   .violated = {Invariant::mutual_exclusion, Invariant::no_lost_update,
                                Invariant::liveness, Invariant::valid_on_return},
                   .summary = waits + ": a stopped node stalls the acquire past the TTL, and it "
                                      "returns that expired lock, so two clients work at once"});
    for (const char* scenario : {"clock-jump", "crash-restart"}) {
      out.push_back({.scenario = scenario,
                     .violated = {Invariant::lease_exclusion},
                     .end = RunEnd::error,
                     .summary = waits + ": a partitioned node hangs the first acquire for good"});
    }
  }
  return out;
}

std::vector<OptionSpec> ext_options(const ExtLibrary& library) {
  std::vector<OptionSpec> options = {{.name = "ext_deadline_ms",
                                      .default_value = "10000",
                                      .help = "longest wait for one driver reply",
                                      .min = 1,
                                      .max = 600'000}};
  if (library.etcd) {
    // The cluster's shape and Raft timing, with the bounds of lockstep's etcd backend (its
    // request_timeout_ms is its own C++ client's: etcd3 keeps its defaults).
    for (const OptionSpec& option : etcd_backend_options()) {
      if (option.name != "request_timeout_ms") options.push_back(option);
    }
    return options;
  }
  if (library.postgres) {
    // A replica to fail over to, with the bounds of lockstep's postgres backend.
    for (const OptionSpec& option : postgres_backend_options(AdvisoryMode::session_try)) {
      if (option.name == "replicas" || option.name == "replication_delay_ms") {
        options.push_back(option);
      }
    }
    return options;
  }
  if (!library.in_memory) {  // one or more redis-servers
    options.push_back({.name = "persistence",
                       .default_value = "none",
                       .help = "server persistence across a crash",
                       .choices = {"none", "everysec", "always"}});
    if (*library.lib != '\0')  // the Node drivers' ioredis option
      options.push_back(
          {.name = "ext_command_timeout_ms",
           .default_value = "0",
           .help =
               "the driver's Redis command timeout (ioredis commandTimeout; 0: its default, none)",
           .min = 0,
           .max = 600'000});
  }
  if (*library.lib == '\0') {
    options.push_back({.name = "driver",
                       .default_value = "",
                       .help = "the driver's command line (program and arguments, no shell)",
                       .text_bytes_max = kDriverCommandBytesMax});
    options.push_back({.name = "tokens",
                       .default_value = "none",
                       .help = "the fencing tokens the driver's lock gives (its ready line must "
                               "say the same; random counts as none)",
                       .choices = {"none", "monotonic"}});
  }
  if (!library.in_memory && !library.over_nodes) {
    // A replica to fail over to, simulated only (ext_sim.h), with the bounds of lockstep's redis.
    for (const OptionSpec& option : redis_backend_options()) {
      if (option.name == "replicas" || option.name == "replication_delay_ms") {
        options.push_back(option);
      }
    }
  }
  if (library.over_nodes) {
    options.push_back({.name = "nodes",
                       .default_value = "5",
                       .help = "independent Redis nodes",
                       .choices = {"3", "5", "7"}});
  }
  return options;
}

}  // namespace

int64_t session_lock_validity_us() {
  return advisory_session_loss_bound_us(kKeepaliveIdleDefaultS, kKeepaliveIntervalDefaultS,
                                        kKeepaliveCountDefault, 0);
}

FencingSupport declared_fencing(const Options& options) {
  return options.has("tokens") && options.get("tokens") == "monotonic" ? FencingSupport::monotonic
                                                                       : FencingSupport::none;
}

std::string token_promise_broken(FencingSupport declared, const ext::Ready& ready) {
  const bool promises = ready.capabilities.token == ext::TokenKind::monotonic;
  if (promises == (declared == FencingSupport::monotonic)) return {};
  return ext::broke(ext::kRuleTokens,
                    fmt::format("its ready line says token {} where the run declares tokens={} "
                                "(--set tokens=monotonic|none)",
                                to_string(ready.capabilities.token), to_string(declared)));
}

std::optional<uint64_t> decimal_token(std::string_view token) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (ec != std::errc() || end != token.data() + token.size()) return std::nullopt;
  return value;
}

std::string token_not_decimal(std::string_view token) {
  return ext::broke(ext::kRuleTokens,
                    fmt::format("promised monotonic tokens and sent \"{:.40}\"", token));
}

// A user's driver must be named, and its command must split into words.
void check_user_driver(const Options& options) {
  const std::string& command = options.get("driver");
  const std::optional<std::vector<std::string>> words = split_command(command);
  if (!words) {
    throw OptionError(fmt::format("option driver: {} has an unclosed quote", quote_value(command)));
  }
  if (words->empty()) {
    throw OptionError(
        "--adapter ext needs --set driver='COMMAND ARGS' (the command that starts your driver, "
        "e.g. driver='python3 examples/python-driver/driver.py')");
  }
}

std::vector<AdapterEntry> ext_adapter_entries() {
  std::vector<AdapterEntry> entries;
  AdapterTraits user_traits = ext_traits(kUserDriver);
  user_traits.sim_faults =
      kExtSimFaults;  // a driver that speaks version 2 (services/ext/PROTOCOL.md)
  entries.push_back({.name = kUserDriver.adapter,
                     .description = kUserDriver.description,
                     .worlds = {WorldKind::sim, WorldKind::real},
                     .traits = user_traits,
                     .options = ext_options(kUserDriver),
                     .check_options = check_user_driver,
                     .third_party = true,
                     .needs_user_option = true,
                     .refine =
                         [](AdapterTraits declared, const Options& options) {
                           if (declared_fencing(options) == FencingSupport::monotonic) {
                             declared.tokens = TokenKind::monotonic;
                           }
                           return declared;
                         },
                     .make_sim = [](BackendEnv& env) -> std::unique_ptr<Backend> {
                       ExtSimLibrary library{.adapter = kUserDriver.adapter};
                       library.command = user_driver_command(env.options.get("driver"));
                       return make_ext_sim_backend(env, library);
                     },
                     .make_real = [](BackendEnv& env) -> std::unique_ptr<Backend> {
                       return std::make_unique<ExtBackend>(env, kUserDriver);
                     }});
  for (const ExtLibrary& library : kLibraries) {
    entries.push_back({.name = library.adapter,
                       .description = library.description,
                       .worlds = {WorldKind::real},
                       .traits = ext_traits(library),
                       .options = ext_options(library),
                       .make_real = [&library](BackendEnv& env) -> std::unique_ptr<Backend> {
                         return std::make_unique<ExtBackend>(env, library);
                       }});
    // Co-simulated too (ext_sim.h); the in-memory library in one driver shared by every client,
    // on a node of its own (no network; its clock drifts and jumps as a server's). Their findings
    // are declared, so the default matrix charts them.
    AdapterEntry& entry = entries.back();
    entry.worlds = {WorldKind::sim, WorldKind::real};
    entry.traits.sim_faults = library.in_memory    ? kExtSimSharedFaults
                              : library.over_nodes ? kExtSimNodesFaults
                              : library.etcd       ? kEtcdTraits.sim_faults
                                                   : kExtSimFaults;
    entry.findings = sim_findings(library);
    entry.third_party = true;
    entry.make_sim = [&library](BackendEnv& env) {
      return make_ext_sim_backend(env, {.adapter = library.adapter,
                                        .lib = library.lib,
                                        .over_nodes = library.over_nodes,
                                        .in_memory = library.in_memory,
                                        .postgres = library.postgres,
                                        .etcd = library.etcd});
    };
  }
  return entries;
}

std::vector<std::string> ext_family() {
  std::vector<std::string> names;
  for (const ExtLibrary& library : kLibraries) {
    // Leases with expiry on one Redis, N nodes or in memory, judged alike.
    if (!library.postgres && !library.etcd) names.emplace_back(library.adapter);
  }
  return names;
}

std::vector<std::string> ext_redlock_family() {
  std::vector<std::string> names;
  for (const ExtLibrary& library : kLibraries) {
    if (library.over_nodes) names.emplace_back(library.adapter);
  }
  return names;
}

}  // namespace lockstep
