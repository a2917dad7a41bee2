#include "services/ext/backend/ext_sim.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/check.h"
#include "real/server_errors.h"
#include "services/etcd/backend/etcd_backend.h"
#include "services/etcd/backend/lease_facts.h"
#include "services/etcd/sim/etcd_cluster.h"
#include "services/etcd/sim/etcd_grpc_front.h"
#include "services/ext/backend/ext_backend.h"
#include "services/ext/driver/node_drivers.h"
#include "services/ext/driver/protocol_rules.h"
#include "services/ext/driver/sim_driver.h"
#include "services/ext/driver/sim_driver_pool.h"
#include "services/postgres/backend/pg_lease_event.h"
#include "services/postgres/sim/pg_server.h"
#include "services/postgres/sim/pg_wire_front.h"
#include "services/redis/backend/lease_events.h"
#include "services/redis/sim/redis_node.h"
#include "services/redis/sim/sim_redis_stream.h"
#include "sim/byte_stream.h"
#include "sim/world.h"

namespace lockstep {

namespace ext {

// A co-simulated driver's library left a request unanswered for ext_deadline_ms of simulated time:
// not a lock outcome. It escapes the client's fiber and ends the run as an error carrying the
// message; what happened before it is judged (a library that hangs is a finding about it).
class SimDriverFailed : public ClientProcessFailed {
 public:
  using ClientProcessFailed::ClientProcessFailed;
};

// A co-simulated driver broke the protocol (died, hung in real time, wrote a malformed line or an
// answer to nothing, refused a request): the run ends as an error with nothing judged, the message
// naming the rule (services/ext/driver/protocol_rules.h).
class SimDriverBroke : public ClientProtocolBroken {
 public:
  using ClientProtocolBroken::ClientProtocolBroken;
};

}  // namespace ext

namespace {

constexpr int kStartExchangesMax = 1000;  // the connection handshake before the run
constexpr size_t kStreamsMax = 1000;      // connections one driver may open
// More clients than this share this many driver processes, as the real world's ext backend does:
// a Node process per client would cost a sweep seconds per run (retry-storm's 200 clients).
constexpr int kSimDriversMax = 16;

class ExtSimBackend;

// A co-simulated driver process in a run: its exchanges, on the clocks of the node it runs on, and
// the requests its clients wait for. Either one client's own (on the client's node: a pause of
// the client stops it, a crash ends it) or shared by several clients, as threads of one process,
// on a node of its own: an in-memory library's one driver (like lockstep's memory store, its clock
// drifts and jumps as a server's), or one of kSimDriversMax when a run has more clients than that
// (a client's pause or crash then stops only its own calls).
class CoSimClient {
 public:
  static constexpr int kShared = -1;  // `client` of a shared driver
  // shared_name: "" for a client's own driver, else how the shared one is named ("shared",
  // "pool 3").
  CoSimClient(ExtSimBackend& backend, int client, sim::NodeId node, std::string shared_name = "");
  // Its driver goes back to the pool (reset) or is killed (services/ext/driver/sim_driver_pool.h).
  ~CoSimClient() { ext::SimDriverPool::give_back(std::move(process_)); }
  CoSimClient(const CoSimClient&) = delete;
  CoSimClient& operator=(const CoSimClient&) = delete;

  // One request from client `client`'s fiber, answered (or throws SimDriverFailed).
  ext::Response call(int client, ext::Request request);
  // The library's own validity when it reported one (node-redlock), else the TTL's from when the
  // library was called (a driver that takes one request at a time calls it after the ones before);
  // a session lock's (PostgreSQL) the session's, which outlives any TTL.
  int64_t validity_end_us(const LockSpec& spec, int64_t requested_at_us, int64_t ttl_ms) const;
  // Whether the library reported that validity (node-redlock's `expiration`, a driver's
  // valid_until_ms): the others' is the harness's assumption.
  bool reports_validity(const LockSpec& spec) const {
    return validity_end_us_.contains(spec.value);
  }
  // A failover: its connections to `from` reach `to` from now on.
  void retarget(const sim::RedisNode& from, sim::RedisNode& to) {
    for (auto& [conn, stream] : streams_) {
      if (stream.redis == nullptr || &stream.redis->target() != &from) continue;
      std::unique_ptr<sim::RedisStreamFront> front = stream.redis->moved_to(to);
      stream.redis = front.get();
      stream.bytes->set_front(std::move(front));
    }
  }
  // The `reset` fault: every connection of its process is reset now (the driver hears of each at
  // once), and for for_us more every piece written on one, those it opens to reconnect too, is
  // doomed (sim_redis_stream.h).
  void reset_connections(int64_t for_us);

 private:
  bool shared() const { return client_ == kShared; }
  ext::SimNow now() const;
  // One exchange and what follows from it. From a fiber, a failure throws; from a delivery on
  // the node (bytes, a timer), it is kept and the waiting fiber woken to throw it.
  void exchange(const std::string& fields);
  void exchange_in_callback(const std::string& fields);
  void dispatch(ext::SimExchange exchange);
  void on_bytes(int conn, const std::string& bytes);
  // A connection the driver opens (the `connect` line), to a Redis node or a PostgreSQL server.
  void open_stream(int conn, int server);
  // Its connections to a server that keeps a session for each (PostgreSQL) are closed by its
  // kernel: the process exited or died.
  void close_session_streams();
  // Whether its process would still run (its client's program, or any for a shared driver).
  bool process_lives() const;
  // The lock operation a PostgreSQL connection opened now belongs to: the request being handed
  // to the driver when it is an acquire (advisory-lock opens a session per lock), else the
  // client's one acquire in flight; none (an empty value: no lease facts) otherwise.
  sim::PgTag connection_tag() const;
  void on_reset(int conn);
  void schedule_timer(std::optional<int64_t> next_timer_ns);
  void on_timer();
  // broke_protocol: the driver broke a rule (SimDriverBroke), else its library hung (SimDriverFailed).
  void fail(std::string message, bool broke_protocol = true);
  [[noreturn]] void throw_failed() const;

  ExtSimBackend& backend_;
  sim::World& world_;
  int client_;  // kShared for a shared driver
  sim::NodeId node_;
  std::string who_;           // "ext:locco-redis c0", "ext:locco-memory shared"
  std::string stream_label_;  // its connections' prefix in the trace: "c0", "pool 3"
  std::unique_ptr<ext::SimDriverProcess> process_;
  std::optional<ext::Ready> ready_;
  bool starting_ = true;
  std::deque<std::pair<int, std::string>> start_replies_;  // handshake replies not yet delivered
  struct Stream {
    std::unique_ptr<sim::SimByteStream> bytes;
    sim::RedisStreamFront* redis = nullptr;  // its front, on a stream to a Redis node
  };
  std::map<int, Stream> streams_;  // by the driver's connection id
  // The request being handed to the driver (call(), for its exchange): client, and the request.
  std::optional<std::pair<int, ext::Request>> handing_;
  TimeUs resetting_until_us_ = 0;  // a reset window: connections opened before then are doomed
  int64_t next_id_ = 1;
  std::map<int64_t, std::optional<ext::Response>> requests_;  // outstanding, with their answers
  std::map<int64_t, sim::Waiter> waiters_;  // the fibers parked for them, by request
  // Requests whose fiber died waiting (its client crashed; a shared driver lives on): an answer
  // to one is dropped. Bounded by the requests ever made in the run.
  std::set<int64_t> abandoned_;
  std::optional<int64_t> timer_ns_;  // the deadline scheduled, on the client's monotonic clock
  // Ticks sent at one instant of true time: a driver that keeps asking for a timer that is due
  // already (next_timer_ns at or before now) makes no progress in virtual time, and would spin
  // the simulator at that instant for ever (an hour of wall time before the event bound).
  static constexpr int kTicksAtOneInstantMax = 1000;
  TimeUs last_tick_us_ = -1;
  int ticks_at_instant_ = 0;
  std::optional<sim::EventId> timer_event_;  // its event, cancelled when the driver names another
  std::string failed_;         // set once the driver failed: every later call throws it
  bool failed_broke_ = false;  // failed_ is a protocol rule broken (throw_failed)
  // Per handle: the validity the library reported, on the client's monotonic clock (us).
  std::map<std::string, int64_t> validity_end_us_;
  // Per handle, when the library reported none: when its last granting call began (the driver's
  // t0, on the client's monotonic clock, us).
  std::map<std::string, int64_t> library_called_us_;
};

// One client's LockAdapter over its driver (its own, or the shared one).
class CoSimAdapter final : public LockAdapter {
 public:
  CoSimAdapter(std::string name, CoSimClient& driver, int client, FencingSupport fencing)
      : name_(std::move(name)), driver_(driver), client_(client), fencing_(fencing) {}

  std::string_view name() const override { return name_; }
  FencingSupport fencing() const override { return fencing_; }
  bool is_whole_library() const override { return true; }
  AdapterResult create_lock(const LockSpec& spec) override;
  AdapterResult release_lock(const LockSpec& spec) override;
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override;
  AdapterResult is_valid_lock(const LockSpec& spec) override;
  int64_t validity_end_us(const LockSpec& spec, int64_t requested_at_us,
                          int64_t ttl_ms) const override {
    return driver_.validity_end_us(spec, requested_at_us, ttl_ms);
  }
  bool reports_validity(const LockSpec& spec) const override {
    return driver_.reports_validity(spec);
  }

 private:
  ext::Response call(ext::Request request) { return driver_.call(client_, std::move(request)); }
  AdapterResult owner_checked(const char* op, const ext::Response& r) const;
  AdapterResult failed(const char* op, const ext::Response& r) const;

  uint64_t token_of(const ext::Response& r) const;

  std::string name_;
  CoSimClient& driver_;
  int client_;
  FencingSupport fencing_;  // declared by the run; the driver's ready line agreed
};

class ExtSimBackend final : public Backend,
                            public sim::KeyspaceObserver,
                            public sim::PgLockObserver {
 public:
  ExtSimBackend(BackendEnv& env, ExtSimLibrary library)
      : env_(env),
        world_(*env.sim),
        library_(std::move(library)),
        node_program_(library_.command.empty() ? ext::require_node_drivers() : std::string()),
        deadline_ms_(env.options.get_int("ext_deadline_ms")),
        command_timeout_ms_(env.options.has("ext_command_timeout_ms")
                                ? env.options.get_int("ext_command_timeout_ms")
                                : 0) {
    LOCKSTEP_CHECK(env.sim != nullptr, "the co-simulated ext backend needs the sim world");
    if (library_.in_memory) {
      // The store is the shared driver's memory, on a node of its own (as lockstep's memory
      // store): started before the clients, reached without a network.
      store_node_ = world_.add_node(library_.lib);
      shared_.push_back(
          std::make_unique<CoSimClient>(*this, CoSimClient::kShared, *store_node_, "shared"));
      return;
    }
    if (env.options.has("clients") && env.options.get_int("clients") > kSimDriversMax) {
      pooled_ = true;
      world_.trace_line(fmt::format(
          "{}: {} clients share {} driver processes, as threads of one process each (leases "
          "derived from the clients)",
          library_.adapter, env.options.get_int("clients"), kSimDriversMax));
    }
    if (library_.postgres) {
      add_postgres_servers(env.options);
      return;
    }
    if (library_.etcd) {
      add_etcd_cluster(env.options);
      return;
    }
    const int64_t nodes = library_.over_nodes ? env.options.get_int("nodes") : 1;
    const std::string persistence = env.options.get("persistence");
    const sim::Persistence kept = persistence == "always"     ? sim::Persistence::always
                                  : persistence == "everysec" ? sim::Persistence::everysec
                                                              : sim::Persistence::none;
    for (int64_t i = 0; i < nodes; ++i) {
      servers_.push_back(std::make_unique<sim::RedisNode>(
          world_, sim::RedisNodeOptions{
                      .name = fmt::format("redis-{}", i), .persistence = kept, .observer = this}));
    }
    // A single Redis with an asynchronous replica to fail over to (replicas=1, an option of every
    // single-node library), as lockstep's redis backend has; leases are then the group's.
    if (!library_.over_nodes && env.options.get_int("replicas") > 0) {
      replica_ = std::make_unique<sim::RedisNode>(
          world_, sim::RedisNodeOptions{.name = "redis-1", .observer = this});
      servers_.front()->add_replica(
          *replica_, {.replication_delay_ms = env.options.get_int("replication_delay_ms")});
      leases_ = RedisLeaseEvents("", /*hash_tagged=*/false, "redis");
    }
  }

  LockAdapter& adapter_for(int client, int node) override {
    if (pooled_ && shared_.size() < static_cast<size_t>(kSimDriversMax)) {
      const std::string name = fmt::format("pool {}", shared_.size());
      const sim::NodeId pool_node =
          world_.add_node(fmt::format("{}-pool-{}", library_.lib, shared_.size()));
      shared_.push_back(
          std::make_unique<CoSimClient>(*this, CoSimClient::kShared, pool_node, name));
    }
    CoSimClient* driver = nullptr;
    if (!shared_.empty()) {  // in-memory, or pooled: clients take turns over the shared drivers
      driver = shared_[static_cast<size_t>(client) % shared_.size()].get();
    } else {
      clients_.push_back(std::make_unique<CoSimClient>(*this, client, node));
      driver = clients_.back().get();
    }
    std::vector<CoSimClient*>& on_node = drivers_by_node_[node];
    if (std::find(on_node.begin(), on_node.end(), driver) == on_node.end()) {
      on_node.push_back(driver);
    }
    adapters_.push_back(
        std::make_unique<CoSimAdapter>(library_.adapter, *driver, client, fencing_));
    return *adapters_.back();
  }

  // An in-memory library's one "server" is its shared driver's node.
  int server_count() const override {
    if (store_node_) return 1;
    if (etcd_) return etcd_->members();
    return static_cast<int>(library_.postgres ? pg_servers_.size() : servers_.size());
  }
  int64_t call_timeout_us() const override {
    return std::max<int64_t>(command_timeout_ms_, 0) * 1000;
  }
  int quorum() const override { return static_cast<int>(servers_.size() / 2 + 1); }
  // An in-memory store cannot be watched (no keyspace), and a shared Redis driver's connections
  // carry several clients' commands (a grant cannot be told whose): the clients' own records judge
  // it. A PostgreSQL library's connection belongs to the acquire it was opened in, pooled or not.
  bool records_leases() const override { return !store_node_ && (!pooled_ || library_.postgres); }

  void set_server_drift(int64_t drift_ppm) override {
    if (store_node_) world_.set_drift(*store_node_, drift_ppm);
    for (auto& server : servers_) world_.set_drift(server->node(), drift_ppm);
    if (replica_) world_.set_drift(replica_->node(), drift_ppm);
    for (auto& server : pg_servers_) world_.set_drift(server->node(), drift_ppm);
    for (int m = 0; etcd_ && m < etcd_->members(); ++m) world_.set_drift(etcd_->node(m), drift_ppm);
  }
  // The primary dies and its replica is promoted; the drivers' connections follow it, and so does
  // every later connect to server 0, as the clients of lockstep's redis backend do. Once a run.
  int64_t failover() override {
    if (library_.postgres) return postgres_failover();
    if (etcd_) return etcd_failover();
    if (!replica_) throw WorldUnsupported("failover needs a replica: --set replicas=1");
    sim::RedisNode& old_primary = *servers_.front();
    const int64_t lost =
        static_cast<int64_t>(old_primary.replication_seq() - replica_->replication_seq());
    world_.crash(old_primary.node());
    replica_->promote();
    for (auto* drivers : {&clients_, &shared_}) {
      for (auto& driver : *drivers) driver->retarget(old_primary, *replica_);
    }
    failed_primary_ = std::exchange(servers_.front(), std::move(replica_));
    return lost;
  }
  // The connections of the driver serving the client on client_node are reset. A pooled driver's
  // connections are those of every client it serves (threads of one process share them): they
  // are all reset. An in-memory library has no connection (its traits never ask for this).
  void reset_connections(int client_node, int64_t for_us) override {
    no_network_for_in_memory();
    auto it = drivers_by_node_.find(client_node);
    if (it == drivers_by_node_.end()) return;
    for (CoSimClient* driver : it->second) driver->reset_connections(for_us);
  }
  void partition(int client_node, bool two_way) override {
    for (int i = 0; i < server_count(); ++i) partition_server(client_node, i, two_way);
  }
  // A client's kernel, where it has one of its own (PostgreSQL), is cut off with it.
  void partition_server(int client_node, int server, bool two_way) override {
    const sim::NodeId node = server_node(server);
    for (const sim::NodeId client_side : client_nodes(client_node)) {
      world_.network().partition(node, client_side);
      if (two_way) world_.network().partition(client_side, node);
    }
  }
  void heal() override {
    no_network_for_in_memory();
    world_.network().heal_all();
  }
  // pg_terminate_backend of every session of the client's connections (a PostgreSQL library).
  void end_session(int client_node) override {
    if (pg_current_ == nullptr) return Backend::end_session(client_node);
    auto kernel = kernels_.find(client_node);
    const std::vector<int64_t> pids =
        kernel == kernels_.end() ? std::vector<int64_t>{} : pg_current_->pids_from(kernel->second);
    world_.trace_linef("pg {}: terminating {} session(s) of node {}", pg_current_->name(),
                       pids.size(), client_node);
    for (const int64_t pid : pids) pg_current_->terminate(pid);
  }
  void set_fixed_latency(int64_t latency_us) override {
    no_network_for_in_memory();
    world_.network().set_fixed_latency(latency_us);
  }
  // A restart brings back the node its server's crash took down, also when a failover has since
  // put the promoted replica in that server's place (the replica is alive: restarting it is wrong).
  void crash_server(int server) override {
    if (etcd_) return etcd_->crash(etcd_member(server));
    const sim::NodeId node = server_node(server);
    crashed_[server] = node;
    world_.crash(node);
  }
  void restart_server(int server) override {
    if (etcd_) return etcd_->restart(etcd_member(server));
    const auto crashed = crashed_.find(server);
    const sim::NodeId node = crashed != crashed_.end() ? crashed->second : server_node(server);
    if (crashed != crashed_.end()) crashed_.erase(crashed);
    world_.restart(node);
  }
  void pause_server(int server, int64_t duration_us) override {
    world_.pause(server_node(server), duration_us, "server pause");
  }
  void jump_server_clock(int server, int64_t delta_us) override {
    if (store_node_) {
      LOCKSTEP_CHECK(server == 0, "an in-memory library has one server");
      return world_.jump_clock(*store_node_, delta_us);
    }
    world_.jump_clock(server_node(server), delta_us);
  }

  // A set with a TTL by a client with an acquire in flight is that acquire's grant: its value
  // (the library's) is named after the acquire's handle from then on, on every node.
  void on_keyspace_event(std::string_view node_name, const sim::KeyspaceEvent& e) override {
    if (pooled_) return;  // leases derived from the clients (records_leases)
    sim::KeyspaceEvent named = e;
    if (e.kind == sim::KeyspaceEvent::Kind::set && e.ttl_ms > 0 && !values_.contains(e.value)) {
      if (const std::string* handle = acquire_behind(e.client, e.key)) {
        values_.emplace(e.value, *handle);
      }
    }
    if (auto it = values_.find(e.value); it != values_.end()) named.value = it->second;
    std::optional<HistoryEvent> event = leases_.on_event(node_name, named);
    if (event) env_.recorder.record(std::move(*event));
  }

  // A PostgreSQL server's lease facts, named after the lock operation whose connection took the
  // key (services/postgres/backend/pg_lease_event.h).
  void on_lock_event(const sim::PgLockEvent& e) override {
    if (std::optional<HistoryEvent> lease = postgres_lease_event(e)) {
      env_.recorder.record(std::move(*lease));
    }
  }

  // What the clients need of their backend.
  bool postgres() const { return library_.postgres; }
  // A simulated etcd cluster's (etcd3), or nullptr.
  sim::etcd::EtcdCluster* etcd_cluster() const { return etcd_.get(); }
  uint64_t next_etcd_connection() { return ++etcd_connections_; }
  // Whether a client's process has a kernel node of its own (a server that keeps per-connection
  // state hears its connections close when the process ends).
  bool kernels() const { return library_.postgres || library_.etcd; }
  // The server new PostgreSQL connections reach (the primary), or nullptr for a Redis library.
  sim::PgServer* postgres_server() const { return pg_current_; }
  bool has_server(int index) const {
    if (library_.postgres) return index == 0;  // `sim:0`: the primary, whichever it is
    if (etcd_) return index >= 0 && index < etcd_->members();
    return index >= 0 && index < static_cast<int>(servers_.size());
  }
  uint64_t next_postgres_connection() { return ++pg_connections_; }
  // The node of the kernel of the process on client_node (made on first ask, before the run):
  // it takes a PostgreSQL server's packets while the process is paused, and answers its
  // keepalive probes.
  sim::NodeId kernel_node(sim::NodeId client_node) {
    auto it = kernels_.find(client_node);
    if (it != kernels_.end()) return it->second;
    const sim::NodeId kernel = world_.add_node(world_.node_name(client_node) + "-host");
    kernels_.emplace(client_node, kernel);
    return kernel;
  }
  // The key and handle of the client's acquire in flight, when it has exactly one.
  std::optional<std::pair<std::string, std::string>> one_acquire_in_flight(int client) const {
    auto it = acquiring_.find(client);
    if (it == acquiring_.end() || it->second.size() != 1) return std::nullopt;
    return *it->second.begin();
  }
  sim::World& world() { return world_; }
  const ExtSimLibrary& sim_library() const { return library_; }
  const std::string& node_program() const { return node_program_; }
  int64_t deadline_ms() const { return deadline_ms_; }
  int64_t command_timeout_ms() const { return command_timeout_ms_; }
  sim::RedisNode* server(int index) {
    if (index < 0 || index >= static_cast<int>(servers_.size())) return nullptr;
    return servers_[static_cast<size_t>(index)].get();
  }
  int redis_node_count() const { return static_cast<int>(servers_.size()); }
  FencingSupport fencing() const { return fencing_; }
  // A client's acquire of `key` is in flight from begin_acquire to end_acquire (one client may
  // acquire several keys at once).
  void begin_acquire(int client, const std::string& key, std::string handle) {
    if (etcd_facts_) etcd_facts_->acquiring(client, key, handle);
    acquiring_[client][key] = std::move(handle);
  }
  void end_acquire(int client, const std::string& key) {
    auto it = acquiring_.find(client);
    if (it == acquiring_.end()) return;
    it->second.erase(key);
    if (it->second.empty()) acquiring_.erase(it);
  }

 private:
  // One PostgreSQL server (postgres-0), with a streaming replica to fail over to when replicas=1
  // (postgres-1), as lockstep's postgres backend has.
  void add_postgres_servers(const Options& options) {
    pg_servers_.push_back(std::make_unique<sim::PgServer>(
        world_, sim::PgServerOptions{.name = "postgres-0", .observer = this}));
    if (options.get_int("replicas") > 0) {
      pg_servers_.push_back(std::make_unique<sim::PgServer>(
          world_,
          sim::PgServerOptions{
              .name = "postgres-1", .first_pid = 100'000, .observer = this, .replica = true}));
      pg_servers_.front()->add_replica(*pg_servers_.back(),
                                       options.get_int("replication_delay_ms"));
    }
    pg_current_ = pg_servers_.front().get();
  }
  // The primary dies and the replica is promoted: advisory locks are session state, never
  // replicated, so it holds none of them (-1: what was lost is not counted). Sessions do not
  // move: their connections to the dead primary break; new ones reach the promoted replica.
  int64_t postgres_failover() {
    if (pg_servers_.size() < 2)
      throw WorldUnsupported("failover needs a replica: --set replicas=1");
    world_.crash(pg_servers_[0]->node());
    pg_servers_[1]->promote();
    pg_current_ = pg_servers_[1].get();
    return -1;
  }
  // A simulated etcd cluster of `members` (1 or 3), as lockstep's etcd backend has, and its lease
  // facts: a lock key is lockstep/KEY/..., as the etcd3 driver names it.
  void add_etcd_cluster(const Options& options) {
    etcd_facts_ = std::make_unique<EtcdLeaseFacts>(
        env_.recorder, [this] { return world_.now_us(); }, "lockstep/");
    etcd_ = std::make_unique<sim::etcd::EtcdCluster>(
        world_,
        sim::etcd::EtcdClusterOptions{.members = static_cast<int>(options.get_int("members")),
                                      .heartbeat_ms = options.get_int("heartbeat_ms"),
                                      .election_timeout_ms = options.get_int("election_timeout_ms"),
                                      .observer = etcd_facts_.get()});
  }
  // The leader dies; the others elect a new one. Raft acknowledges a write only once a majority
  // has it: 0 lost.
  int64_t etcd_failover() {
    etcd_->crash_leader();
    return 0;
  }
  int etcd_member(int server) const { return lockstep::etcd_member(server, etcd_->members()); }
  sim::NodeId server_node(int server) {
    no_network_for_in_memory();
    LOCKSTEP_CHECK(server >= 0 && server < server_count(), "a server of this backend");
    if (etcd_) return etcd_->node(server);
    if (library_.postgres) return pg_servers_[static_cast<size_t>(server)]->node();
    return servers_[static_cast<size_t>(server)]->node();
  }
  // The client's node and its kernel's, where it has one.
  std::vector<sim::NodeId> client_nodes(sim::NodeId client_node) const {
    std::vector<sim::NodeId> nodes = {client_node};
    if (auto it = kernels_.find(client_node); it != kernels_.end()) nodes.push_back(it->second);
    return nodes;
  }
  // An in-memory library has no network and no Redis node, and its traits let no scenario ask
  // for their faults (kExtSimSharedFaults): WorldUnsupported should one do so anyway.
  void no_network_for_in_memory() const {
    if (store_node_) {
      throw WorldUnsupported(fmt::format(
          "{} keeps its store in the driver's memory: no network or server to cut off, crash or "
          "pause",
          library_.adapter));
    }
  }
  // The handle of the acquire a client's write of `server_key` grants: its one acquire in flight,
  // or, with several (other keys at once), the one whose key the library's key contains (the
  // longest such: a library may prefix or suffix it); none when that does not tell them apart.
  const std::string* acquire_behind(int client, std::string_view server_key) const {
    auto it = acquiring_.find(client);
    if (it == acquiring_.end()) return nullptr;
    if (it->second.size() == 1) return &it->second.begin()->second;
    const std::string* best = nullptr;
    size_t best_size = 0;
    bool tied = false;
    for (const auto& [key, handle] : it->second) {
      if (server_key.find(key) == std::string_view::npos) continue;
      tied = key.size() == best_size;
      if (key.size() >= best_size) {
        best = &handle;
        best_size = key.size();
      }
    }
    return tied ? nullptr : best;
  }
  BackendEnv& env_;
  sim::World& world_;
  ExtSimLibrary library_;
  std::string node_program_;
  int64_t deadline_ms_;
  int64_t command_timeout_ms_;
  FencingSupport fencing_ = declared_fencing(env_.options);  // the run's `tokens` option
  RedisLeaseEvents leases_{""};
  // client -> key -> the handle of its acquire of that key in flight
  std::map<int, std::map<std::string, std::string>> acquiring_;
  std::map<std::string, std::string> values_;  // the library's lock value -> lockstep's handle
  std::vector<std::unique_ptr<sim::RedisNode>> servers_;
  std::unique_ptr<sim::RedisNode> replica_;         // servers_[0]'s, until a failover promotes it
  std::unique_ptr<sim::RedisNode> failed_primary_;  // the primary a failover left behind, crashed
  std::map<int, sim::NodeId> crashed_;              // server -> the node its last crash took down
  // A PostgreSQL library's servers (postgres-0, and its replica), and the primary now.
  std::vector<std::unique_ptr<sim::PgServer>> pg_servers_;
  sim::PgServer* pg_current_ = nullptr;
  uint64_t pg_connections_ = 0;
  // An etcd library's cluster, and its lease facts (before it: the cluster reports to them).
  std::unique_ptr<EtcdLeaseFacts> etcd_facts_;
  std::unique_ptr<sim::etcd::EtcdCluster> etcd_;
  uint64_t etcd_connections_ = 0;
  std::map<sim::NodeId, sim::NodeId> kernels_;  // client node -> its kernel's node
  std::optional<sim::NodeId> store_node_;       // an in-memory library's shared driver runs here
  // client node -> the drivers serving its clients, in the order the clients came (no lookup by
  // address order: reset_connections walks it)
  std::map<int, std::vector<CoSimClient*>> drivers_by_node_;
  bool pooled_ = false;  // clients share kSimDriversMax drivers
  // After servers_: they go first. The adapters before the drivers they use.
  std::vector<std::unique_ptr<CoSimClient>> clients_;  // a client's own
  // Shared by the clients: an in-memory library's one, or up to kSimDriversMax when pooled_.
  std::vector<std::unique_ptr<CoSimClient>> shared_;
  std::vector<std::unique_ptr<CoSimAdapter>> adapters_;
};

CoSimClient::CoSimClient(ExtSimBackend& backend, int client, sim::NodeId node,
                         std::string shared_name)
    : backend_(backend),
      world_(backend.world()),
      client_(client),
      node_(node),
      who_(client == kShared ? fmt::format("{} {}", backend.sim_library().adapter, shared_name)
                             : fmt::format("{} c{}", backend.sim_library().adapter, client)) {
  LOCKSTEP_CHECK((client == kShared) == !shared_name.empty(), "a shared driver has a name");
  stream_label_ = shared() ? shared_name : fmt::format("c{}", client);
  std::string endpoints;
  for (int i = 0; i < backend.redis_node_count(); ++i) {
    endpoints += fmt::format("{}sim:{}", i == 0 ? "" : ",", i);
  }
  if (backend.kernels()) backend.kernel_node(node_);  // its kernel's node, before the run
  const std::vector<std::string>& command = backend.sim_library().command;
  std::string program = backend.node_program();
  std::vector<std::string> args;
  if (command.empty()) {
    args = {ext::node_driver_dir() + "/driver.js", "--sim", "--lib", backend.sim_library().lib};
  } else {  // a user's driver: its own program and arguments
    program = command.front();
    args.assign(command.begin() + 1, command.end());
    args.push_back("--sim");
  }
  if (backend.postgres()) {
    args.push_back("--postgres");
    args.push_back("sim:0");  // the primary, whichever server that is
  } else if (const sim::etcd::EtcdCluster* etcd = backend.etcd_cluster()) {
    std::string members;
    for (int m = 0; m < etcd->members(); ++m)
      members += fmt::format("{}sim:{}", m == 0 ? "" : ",", m);
    args.push_back("--etcd");
    args.push_back(members);
  } else {
    args.push_back("--redis");
    args.push_back(endpoints);
  }
  if (backend.command_timeout_ms() > 0) {
    args.push_back("--command-timeout-ms");
    args.push_back(std::to_string(backend.command_timeout_ms()));
  }
  process_ = ext::SimDriverPool::take(
      ext::SimDriverOptions{.program = program, .args = std::move(args), .name = who_});
  // Started and connected before the run, at this instant: the handshake's replies come from the
  // nodes' fronts at once, without the network. A driver that breaks the protocol here throws
  // SimDriverBroke: the run's error, naming the rule.
  const std::string seed = shared() ? fmt::format("{}:{}", world_.seed(), shared_name)
                                    : fmt::format("{}:{}", world_.seed(), client);
  exchange(nlohmann::json{{"op", "init"}, {"seed", seed}}.dump());
  for (int i = 0; i < kStartExchangesMax && !start_replies_.empty(); ++i) {
    auto [conn, bytes] = std::move(start_replies_.front());
    start_replies_.pop_front();
    exchange(
        nlohmann::json{{"op", "recv"}, {"conn", conn}, {"data", ext::base64_encode(bytes)}}.dump());
  }
  starting_ = false;
  if (!ready_) {
    throw ext::SimDriverBroke(fmt::format(
        "driver {} (pid {}) {}", who_, process_->pid(),
        ext::broke(ext::kRuleReady, "did not say ready after its connection handshake")));
  }
  if (const std::string broken = token_promise_broken(backend.fencing(), *ready_);
      !broken.empty()) {
    throw ext::SimDriverBroke(fmt::format("driver {} (pid {}) {}", who_, process_->pid(), broken));
  }
  // No pid here: the trace is the run's identity, and a pid is the machine's.
  world_.trace_line(fmt::format("driver {}: {} protocol {} (co-simulated)", who_, ready_->version,
                                ready_->protocol));
  if (shared()) return;  // its node never crashes: it is no client's
  // Its process exits with its client's program, or dies with it: its kernel closes its sockets,
  // a FIN to a server that keeps a session for one (a PostgreSQL library: Node would not exit
  // while a connection is open, but a program that ended holds nothing more).
  world_.on_program_end(node_, [this] { close_session_streams(); });
  world_.on_crash(node_, [this] {
    close_session_streams();
    if (failed_.empty()) {
      failed_ = fmt::format("driver {} was killed with its client", who_);
      failed_broke_ = false;
    }
    // Nothing more of this process reaches the run (failed_ is set): killed, or reset into the
    // pool, which is the same to the run and spares a sweep a start per crash.
    ext::SimDriverPool::give_back(std::move(process_));
    world_.trace_line(fmt::format("driver {} killed (its client crashed)", who_));
  });
}

ext::SimNow CoSimClient::now() const {
  const int64_t wall_us = world_.local_us(node_);
  return {.wall_ms = wall_us >= 0 ? wall_us / 1000 : -((-wall_us + 999) / 1000),
          .mono_ns = world_.monotonic_us(node_) * 1000};
}

void CoSimClient::fail(std::string message, bool broke_protocol) {
  if (failed_.empty()) {
    failed_ = std::move(message);
    failed_broke_ = broke_protocol;
  }
  for (const auto& [id, waiter] : waiters_) world_.wake(waiter);
}

void CoSimClient::throw_failed() const {
  if (failed_broke_) throw ext::SimDriverBroke(failed_);
  throw ext::SimDriverFailed(failed_);
}

void CoSimClient::exchange(const std::string& fields) {
  if (!failed_.empty()) throw_failed();
  ext::SimExchange result;
  try {
    result = process_->exchange(fields, now());
  } catch (const ext::SimDriverError& e) {
    fail(e.what());  // names the rule it broke (sim_driver.cc)
    throw_failed();
  }
  dispatch(std::move(result));
  if (!failed_.empty()) throw_failed();
}

void CoSimClient::exchange_in_callback(const std::string& fields) {
  if (!failed_.empty()) return;
  try {
    exchange(fields);
  } catch (const ClientProcessFailed&) {
    // kept in failed_; the fiber waiting (if any) was woken to throw it
  }
}

void CoSimClient::dispatch(ext::SimExchange result) {
  for (ext::SimLine& line : result.lines) {
    if (auto* connect = std::get_if<ext::SimConnect>(&line)) {
      if (!backend_.has_server(connect->server) || streams_.contains(connect->conn) ||
          streams_.size() >= kStreamsMax) {
        return fail(fmt::format(
            "driver {} {}", who_,
            ext::broke(ext::kRuleConnections,
                       fmt::format("opened connection {} to server {}: no such server, a "
                                   "connection id in use, or more than {} connections",
                                   connect->conn, connect->server, kStreamsMax))));
      }
      open_stream(connect->conn, connect->server);
    } else if (auto* send = std::get_if<ext::SimSend>(&line)) {
      auto it = streams_.find(send->conn);
      if (it == streams_.end()) {
        return fail(fmt::format(
            "driver {} {}", who_,
            ext::broke(ext::kRuleConnections,
                       fmt::format("wrote on connection {}, which it never opened", send->conn))));
      }
      if (starting_) {
        std::string replies = it->second.bytes->write_now(send->bytes);
        if (!replies.empty()) start_replies_.emplace_back(send->conn, std::move(replies));
      } else {
        it->second.bytes->write(std::move(send->bytes));
      }
    } else if (auto* close = std::get_if<ext::SimClose>(&line)) {
      if (auto it = streams_.find(close->conn); it != streams_.end()) it->second.bytes->close();
    } else if (auto* ready = std::get_if<ext::Ready>(&line)) {
      if (ready_) {
        return fail(fmt::format("driver {} {}", who_,
                                ext::broke(ext::kRuleReady, "wrote a second ready line")));
      }
      if (ready->protocol != 2) {
        return fail(fmt::format(
            "driver {} {}", who_,
            ext::broke(ext::kRuleReady,
                       fmt::format("speaks protocol {}; --world sim needs a co-simulated driver, "
                                   "protocol 2 (services/ext/PROTOCOL.md, \"Version 2\"), or "
                                   "run it with --world real",
                                   ready->protocol))));
      }
      ready_ = std::move(*ready);
    } else if (auto* response = std::get_if<ext::Response>(&line)) {
      if (abandoned_.erase(response->id) > 0) continue;  // its fiber is gone
      auto it = requests_.find(response->id);
      if (it == requests_.end() || it->second.has_value()) {
        return fail(fmt::format(
            "driver {} {}", who_,
            ext::broke(
                ext::kRuleOneAnswer,
                fmt::format("answered request {}, which is not waiting for one", response->id))));
      }
      const int64_t id = response->id;
      it->second = std::move(*response);
      if (auto waiter = waiters_.find(id); waiter != waiters_.end()) world_.wake(waiter->second);
    } else if (auto* event = std::get_if<ext::Event>(&line)) {
      world_.trace_line(fmt::format("{} event {} key={} handle={:.8}{}", who_, event->event,
                                    event->key, event->handle,
                                    event->err ? ": " + event->err->message : std::string()));
    }
  }
  schedule_timer(result.next_timer_ns);
}

void CoSimClient::reset_connections(int64_t for_us) {
  resetting_until_us_ = std::max(resetting_until_us_, world_.now_us() + for_us);
  world_.trace_linef("driver {}: its connections reset{}", who_,
                     for_us > 0 ? fmt::format(", and again for {}us", for_us) : "");
  for (auto& [conn, stream] : streams_) stream.bytes->reset();
}

void CoSimClient::close_session_streams() {
  for (auto& [conn, stream] : streams_) {
    if (stream.bytes->front().hears_client_end()) stream.bytes->close();
  }
}

void CoSimClient::open_stream(int conn, int server) {
  const std::string name = stream_label_ + ":" + std::to_string(conn);
  // A server that keeps a session per connection (PostgreSQL, etcd) is reached from the client's
  // kernel, which closes the connection when the process ends; a Redis stream is the process's own.
  const std::optional<sim::NodeId> kernel =
      backend_.kernels() ? std::optional<sim::NodeId>(backend_.kernel_node(node_)) : std::nullopt;
  Stream stream;
  std::unique_ptr<sim::StreamFront> front;
  if (sim::PgServer* pg = backend_.postgres_server()) {
    front = std::make_unique<sim::PgWireFront>(
        world_, *pg,
        sim::PgWireFrontOptions{.conn = backend_.next_postgres_connection(),
                                .kernel_node = *kernel,
                                .client = shared() ? -1 : client_,
                                .tag = connection_tag(),
                                .stream_name = name,
                                .process_lives = [this] { return process_lives(); }});
  } else if (sim::etcd::EtcdCluster* etcd = backend_.etcd_cluster()) {
    front = std::make_unique<sim::etcd::EtcdGrpcFront>(
        world_, *etcd,
        sim::etcd::EtcdGrpcFrontOptions{.member = server,
                                        .client = shared() ? -1 : client_,
                                        .conn = backend_.next_etcd_connection(),
                                        .stream_name = name});
  } else {
    auto redis =
        std::make_unique<sim::RedisStreamFront>(world_, *backend_.server(server), client_, name);
    stream.redis = redis.get();
    front = std::move(redis);
  }
  const sim::NodeId server_node = front->node();
  const std::string server_name(front->name());
  stream.bytes = std::make_unique<sim::SimByteStream>(
      world_, sim::ByteStreamOptions{.client_node = node_, .kernel_node = kernel, .name = name},
      std::move(front), [this, conn](std::string bytes) { on_bytes(conn, bytes); },
      [this, conn] { on_reset(conn); });
  // A session server whose process is down on a reachable host refuses the connection at once.
  if (kernel && !world_.alive(server_node) && world_.network().link_up(*kernel, server_node)) {
    world_.trace_linef("stream {} to {} refused: the server is down", name, server_name);
    stream.bytes->reset();
  }
  // A reconnect during a reset window is reset too.
  if (world_.now_us() < resetting_until_us_) {
    stream.bytes->reset_writes_until(resetting_until_us_);
  }
  streams_.emplace(conn, std::move(stream));
}

bool CoSimClient::process_lives() const {
  const std::vector<sim::NodeId> busy = world_.unfinished_fiber_nodes();
  if (shared()) return !busy.empty();
  return world_.alive(node_) && std::find(busy.begin(), busy.end(), node_) != busy.end();
}

sim::PgTag CoSimClient::connection_tag() const {
  if (handing_ && handing_->second.op == ext::Op::acquire) {
    return {
        .client = handing_->first, .value = handing_->second.handle, .key = handing_->second.key};
  }
  if (!shared()) {
    if (const auto acquire = backend_.one_acquire_in_flight(client_)) {
      return {.client = client_, .value = acquire->second, .key = acquire->first};
    }
  }
  return {.client = client_};
}

void CoSimClient::on_bytes(int conn, const std::string& bytes) {
  exchange_in_callback(
      nlohmann::json{{"op", "recv"}, {"conn", conn}, {"data", ext::base64_encode(bytes)}}.dump());
}

void CoSimClient::on_reset(int conn) {
  exchange_in_callback(nlohmann::json{{"op", "closed"}, {"conn", conn}}.dump());
}

void CoSimClient::schedule_timer(std::optional<int64_t> next_timer_ns) {
  if (next_timer_ns == timer_ns_) return;  // that one is scheduled already (or none is wanted)
  if (timer_event_) world_.scheduler().cancel(*std::exchange(timer_event_, std::nullopt));
  timer_ns_ = next_timer_ns;
  if (!next_timer_ns) return;
  const int64_t ahead_ns = *next_timer_ns - world_.monotonic_us(node_) * 1000;
  const int64_t ahead_us = ahead_ns <= 0 ? 0 : (ahead_ns + 999) / 1000;
  const TimeUs at_us = world_.now_us() + world_.node_clock(node_).true_duration_for(ahead_us);
  // A scheduler event (cancellable) that hands over to a delivery on the node at once: that one
  // waits out a pause of the client and is dropped once it crashed.
  timer_event_ = world_.scheduler().at(at_us, [this] {
    timer_event_.reset();
    world_.deliver_at(node_, world_.incarnation(node_), world_.now_us(), [this] { on_timer(); });
  });
}

void CoSimClient::on_timer() {
  if (!timer_ns_ || timer_event_ || !failed_.empty()) return;  // superseded meanwhile
  // The client's program is over: its process would have exited, and its library's timers
  // (redis-semaphore refreshes a held lock for ever) with it; ticking on would never let the
  // run's queue empty.
  // A shared driver's process lives while any client's program runs.
  const std::vector<sim::NodeId> busy = world_.unfinished_fiber_nodes();
  if (shared() ? busy.empty() : std::find(busy.begin(), busy.end(), node_) == busy.end()) {
    // Its process is left idle, not killed: ticks stop here, and the pool may reuse it.
    failed_ = fmt::format("driver {} exited with its client's program", who_);
    failed_broke_ = false;
    world_.trace_line(fmt::format("driver {} stopped: its client's program is over", who_));
    return;
  }
  // The node's oscillator may have been slowed since this was scheduled: not yet, then later.
  if (world_.monotonic_us(node_) * 1000 < *timer_ns_) {
    const std::optional<int64_t> deadline = std::exchange(timer_ns_, std::nullopt);
    schedule_timer(deadline);
    return;
  }
  timer_ns_.reset();
  if (world_.now_us() != last_tick_us_) {
    last_tick_us_ = world_.now_us();
    ticks_at_instant_ = 0;
  }
  if (++ticks_at_instant_ > kTicksAtOneInstantMax) {
    return fail(fmt::format(
        "driver {} asked for more than {} timers at one instant ({}us): it makes no progress in "
        "virtual time",
        who_, kTicksAtOneInstantMax, last_tick_us_));
  }
  exchange_in_callback(R"({"op":"tick"})");
}

ext::Response CoSimClient::call(int client, ext::Request request) {
  if (!failed_.empty()) throw_failed();
  const int64_t id = next_id_++;
  request.id = id;
  // A shared driver keeps each client's handles apart (version 1's `client`).
  if (shared()) request.client = client;
  const std::string caller =
      shared() ? fmt::format("{} c{}", backend_.sim_library().adapter, client) : who_;
  requests_.emplace(id, std::nullopt);
  if (request.op == ext::Op::acquire) backend_.begin_acquire(client, request.key, request.handle);
  const TimeUs sent_us = world_.now_us();
  handing_.emplace(client, request);
  try {
    exchange(ext::encode(request));
  } catch (...) {
    handing_.reset();
    throw;
  }
  handing_.reset();
  if (!requests_.at(id)) {
    const sim::Waiter waiter = world_.prepare_park();
    waiters_.emplace(id, waiter);
    const TimeUs deadline_us = world_.now_us() + backend_.deadline_ms() * 1000;
    try {
      world_.park(waiter, deadline_us);  // ProcessKilled when the client crashes meanwhile
    } catch (...) {
      waiters_.erase(id);
      if (!requests_.at(id)) abandoned_.insert(id);
      requests_.erase(id);
      if (request.op == ext::Op::acquire) backend_.end_acquire(client, request.key);
      throw;
    }
    waiters_.erase(id);
  }
  if (request.op == ext::Op::acquire) backend_.end_acquire(client, request.key);
  if (!failed_.empty()) throw_failed();
  std::optional<ext::Response> answer = std::move(requests_.at(id));
  requests_.erase(id);
  if (!answer) {
    // The driver kept the protocol (each exchange ended idle); its library never settled the call:
    // what the library did until then is judged.
    fail(fmt::format("driver {}: its library gave no answer to {} within {} ms of simulated time "
                     "(ext_deadline_ms)",
                     who_, to_string(request.op), backend_.deadline_ms()),
         false);
    throw_failed();
  }
  const ext::Response& r = *answer;
  world_.trace_line(
      fmt::format("{} {} {} {}{}{} (library {} us, {} us)", caller, to_string(request.op),
                  request.key.empty() ? request.handle.substr(0, 8) : request.key,
                  to_string(r.status), r.token.empty() ? "" : " token=" + r.token.substr(0, 12),
                  r.err ? fmt::format(" {}: {:.120}", r.err->name, r.err->message) : std::string(),
                  (r.t1_ns - r.t0_ns) / 1000, world_.now_us() - sent_us));
  if (request.op == ext::Op::release) {  // bounded
    validity_end_us_.erase(request.handle);
    library_called_us_.erase(request.handle);
  }
  // (A shared driver's clocks are not its clients': a validity it reported is not converted.)
  if (!shared() && r.status == ext::Status::ok && r.valid_until_ms != 0) {
    // Its wall-clock end, as far ahead of the client's wall clock now as it is of the oscillator.
    validity_end_us_[request.handle] =
        world_.monotonic_us(node_) + (r.valid_until_ms * 1000 - world_.local_us(node_));
  } else if (!shared() && r.status == ext::Status::ok && r.t0_ns > 0 &&
             (request.op == ext::Op::acquire || request.op == ext::Op::extend)) {
    // The driver's monotonic clock is the client's oscillator (now(), mono_ns).
    library_called_us_[request.handle] = r.t0_ns / 1000;
  }
  if (r.status == ext::Status::bad_request) {
    fail(
        fmt::format("driver {} {}", who_,
                    ext::broke(ext::kRuleRequests,
                               fmt::format("refused a request as bad: {}",
                                           r.err ? r.err->message : std::string("(no message)")))));
    throw_failed();
  }
  return std::move(*answer);
}

AdapterResult CoSimAdapter::create_lock(const LockSpec& spec) {
  const ext::Response r =
      call({.op = ext::Op::acquire, .handle = spec.value, .key = spec.key, .ttl_ms = spec.ttl_ms});
  switch (r.status) {
    case ext::Status::ok: return {.fencing_token = token_of(r)};
    case ext::Status::contended: return {.status = AdapterStatus::contended};
    default: return failed("acquire", r);
  }
}

uint64_t CoSimAdapter::token_of(const ext::Response& r) const {
  if (fencing_ != FencingSupport::monotonic) return 0;
  if (const std::optional<uint64_t> token = decimal_token(r.token)) return *token;
  throw ext::SimDriverBroke(fmt::format("driver {} {}", name_, token_not_decimal(r.token)));
}

AdapterResult CoSimAdapter::release_lock(const LockSpec& spec) {
  const ext::Response r = call({.op = ext::Op::release, .handle = spec.value});
  if (r.status == ext::Status::unknown) {
    return {.status = AdapterStatus::backend_error,
            .message = "the library's release does not say whether it removed the lock"};
  }
  return owner_checked("release", r);
}

AdapterResult CoSimAdapter::extend_lock(const LockSpec& spec, int64_t ttl_ms) {
  return owner_checked("extend",
                       call({.op = ext::Op::extend, .handle = spec.value, .ttl_ms = ttl_ms}));
}

AdapterResult CoSimAdapter::is_valid_lock(const LockSpec& spec) {
  return owner_checked("is_locked", call({.op = ext::Op::is_locked, .handle = spec.value}));
}

int64_t CoSimClient::validity_end_us(const LockSpec& spec, int64_t requested_at_us,
                                     int64_t ttl_ms) const {
  auto it = validity_end_us_.find(spec.value);
  if (it != validity_end_us_.end()) return it->second;
  auto called = library_called_us_.find(spec.value);
  const int64_t from_us = called == library_called_us_.end()
                              ? requested_at_us
                              : std::max(requested_at_us, called->second);
  if (backend_.postgres()) return from_us + session_lock_validity_us();  // no TTL: the session's
  return from_us + ttl_ms * 1000;
}

AdapterResult CoSimAdapter::owner_checked(const char* op, const ext::Response& r) const {
  switch (r.status) {
    case ext::Status::ok: return {};
    case ext::Status::not_owner: return {.status = AdapterStatus::not_owner};
    default: return failed(op, r);
  }
}

AdapterResult CoSimAdapter::failed(const char* op, const ext::Response& r) const {
  std::string message = r.status == ext::Status::unsupported
                            ? fmt::format("the library offers no {}", op)
                            : fmt::format("{} {}", op, to_string(r.status));
  if (r.err) message += fmt::format(": {}: {}", r.err->name, r.err->message);
  return {.status = AdapterStatus::backend_error, .message = std::move(message)};
}

}  // namespace

std::unique_ptr<Backend> make_ext_sim_backend(BackendEnv& env, const ExtSimLibrary& library) {
  return std::make_unique<ExtSimBackend>(env, library);
}

}  // namespace lockstep
