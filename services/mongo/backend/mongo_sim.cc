#include "services/mongo/backend/mongo_backend.h"

#include <fmt/format.h>

#include "base/check.h"
#include "services/mongo/adapter/mongo_adapter.h"
#include "services/mongo/sim/replica_set.h"
#include "services/mongo/sim/sim_mongo_connection.h"
#include "sim/world.h"

namespace lockstep {

namespace {

constexpr int64_t kUsPerMs = 1000;

// "auto" leaves it to the adapter: majority reads exactly when writes are majority.
std::optional<bool> read_majority(const std::string& option) {
  if (option == "auto") return std::nullopt;
  return option == "on";
}
// The shortest election timeout: heartbeats every 10 ms, a fifth of it.
constexpr int64_t kElectionTimeoutMinMs = 50;

// The production adapter's layout (the known-bad variant shares it).
std::string lock_namespace() {
  const MongoAdapterOptions defaults;
  return defaults.database + "." + defaults.collection;
}

std::string fencing_namespace() {
  const MongoAdapterOptions defaults;
  return defaults.database + "." + defaults.fencing_collection;
}

std::string string_field(const MongoDocument& doc, const char* name) {
  if (!doc.is_object() || !doc.contains(name) || !doc[name].is_string()) return {};
  return doc[name].get<std::string>();
}

// The lease a lock document promises, by the executing member's clock: expire_at - now.
int64_t lease_us(const MongoDocument& doc, int64_t now_ms) {
  if (!doc.is_object() || !doc.contains("expire_at") || !is_mongo_date(doc["expire_at"])) return 0;
  return std::max<int64_t>(0, mongo_date_ms(doc["expire_at"]) - now_ms) * kUsPerMs;
}

// Lease facts from the primary's writes to the lock collection: a document taking a new owner
// (inserted, or an expired one taken over) is a grant; the same owner's new expiry is an extend;
// a client's delete is a revoke. TTL-monitor deletes end nothing (the lease had run out by the
// member's clock), and the token written by the confirming update is not a lease fact. An update
// that changed nothing is the owner's extend to the same instant: an extend, timed anew.
std::optional<HistoryEvent> lease_event_from(std::string_view member,
                                             const sim::MongoWriteEvent& e) {
  HistoryEvent event{.client = e.client, .server = std::string(member)};
  switch (e.kind) {
    case sim::MongoWriteEvent::Kind::insert:
      event.kind = EventKind::grant;
      event.key = string_field(e.after, "key");
      event.value = string_field(e.after, "value");
      event.ttl_us = lease_us(e.after, e.now_ms);
      return event;
    case sim::MongoWriteEvent::Kind::update: {
      event.key = string_field(e.after, "key");
      event.value = string_field(e.after, "value");
      const bool new_owner = event.value != string_field(e.before, "value");
      const bool new_expiry = e.before.value("expire_at", MongoDocument()) !=
                              e.after.value("expire_at", MongoDocument());
      if (!new_owner && !new_expiry) return std::nullopt;
      event.kind = new_owner ? EventKind::grant : EventKind::extend;
      event.ttl_us = lease_us(e.after, e.now_ms);
      return event;
    }
    case sim::MongoWriteEvent::Kind::remove:
      event.kind = EventKind::revoke;
      event.key = string_field(e.before, "key");
      event.value = string_field(e.before, "value");
      event.detail = "delete";
      return event;
    case sim::MongoWriteEvent::Kind::ttl_remove: return std::nullopt;
    case sim::MongoWriteEvent::Kind::unchanged:
      // An update that matched the document and left it as it was: an extend to the same
      // expire_at (the member's clock went back since it wrote it). The member read the lease as
      // its owner's, to end at that expire_at by its clock as it is now.
      event.key = string_field(e.after, "key");
      event.value = string_field(e.after, "value");
      if (event.key.empty() || event.value.empty()) return std::nullopt;
      event.kind = EventKind::extend;
      event.ttl_us = lease_us(e.after, e.now_ms);
      return event;
  }
  return std::nullopt;
}

// What lease events name as their server: the replica set, whichever member is primary.
constexpr std::string_view kReplicaSet = "mongo";

class MongoSimBackend final : public Backend, public sim::MongoObserver {
 public:
  MongoSimBackend(BackendEnv& env, MongoAdapterFactory make_adapter)
      : world_(*env.sim),
        recorder_(env.recorder),
        options_(env.options),
        make_adapter_(std::move(make_adapter)),
        lock_ns_(lock_namespace()) {
    LOCKSTEP_CHECK(env.sim != nullptr, "the simulated mongod needs the sim world");
    replica_set_ = std::make_unique<sim::MongoReplicaSet>(
        world_, sim::MongoReplicaSetOptions{
                    .replication_delay_ms = options_.get_int("replication_delay_ms"),
                    .election_timeout_ms = options_.get_int("election_timeout_ms"),
                    .heartbeat_interval_ms =
                        sim::heartbeat_interval_for(options_.get_int("election_timeout_ms")),
                    .ttl_monitor_period_ms = options_.get_int("ttl_monitor_period_ms"),
                    .observer = this,
                });
  }

  LockAdapter& adapter_for(int client, int node) override {
    connections_.push_back(std::make_unique<sim::SimMongoConnection>(
        world_, node, *replica_set_, client,
        sim::SimMongoConnectionOptions{.command_timeout_us =
                                           options_.get_int("command_timeout_ms") * kUsPerMs}));
    adapters_.push_back(make_adapter_(*connections_.back(), world_.clock(node), options_));
    return *adapters_.back();
  }

  int server_count() const override { return replica_set_->members(); }
  int64_t call_timeout_us() const override {
    return options_.get_int("command_timeout_ms") * kUsPerMs;
  }
  // A secondary stands after the election timeout plus up to 15% jitter and one heartbeat; a
  // second round (votes split, or a lagging candidate refused) takes as long again.
  int64_t election_us() const override {
    return 3 * options_.get_int("election_timeout_ms") * kUsPerMs;
  }
  bool records_leases() const override { return true; }

  // The primary dies; the others elect a new one after the election timeout. Its writes that had
  // not reached them are gone from the new primary (and rolled back if it comes back). With a
  // short election timeout the set may be between primaries at that instant: there is nothing to
  // crash, the trace says so and the run goes on (any timeout the option accepts is a valid run).
  int64_t failover() override {
    const int primary = replica_set_->primary();
    if (primary < 0) {
      world_.trace_line(
          "failover: the replica set has no primary now (an election is under way): "
          "nothing to crash");
      return 0;
    }
    // The entries the best-placed survivor lacks: whoever is elected has no more than it (and
    // the rest are rolled back if the old primary returns).
    const auto oplog_size = [this](int member) {
      return static_cast<int64_t>(replica_set_->oplog(member).size());
    };
    int64_t survivor_max = 0;
    for (int m = 0; m < replica_set_->members(); ++m) {
      if (m != primary && replica_set_->alive(m))
        survivor_max = std::max(survivor_max, oplog_size(m));
    }
    const int64_t lost = std::max<int64_t>(oplog_size(primary) - survivor_max, 0);
    replica_set_->crash(primary);
    return lost;
  }

  void set_server_drift(int64_t drift_ppm) override {
    for (int m = 0; m < replica_set_->members(); ++m)
      world_.set_drift(replica_set_->node(m), drift_ppm);
  }

  void reset_connections(int client_node, int64_t for_us) override {
    for (auto& connection : connections_) {
      if (connection->client_node() == client_node) connection->reset(for_us);
    }
  }

  // The client is cut off from whichever member is primary now.
  void partition(int client_node, bool two_way) override {
    const int primary = replica_set_->primary();
    if (primary < 0) return;
    partition_server(client_node, primary, two_way);
  }

  void heal() override { world_.network().heal_all(); }

  void set_fixed_latency(int64_t latency_us) override {
    world_.network().set_fixed_latency(latency_us);
  }

  void crash_server(int server) override { replica_set_->crash(checked(server)); }
  void restart_server(int server) override { replica_set_->restart(checked(server)); }
  void pause_server(int server, int64_t duration_us) override {
    world_.pause(replica_set_->node(checked(server)), duration_us, "pause mongod");
  }
  void jump_server_clock(int server, int64_t delta_us) override {
    world_.jump_clock(replica_set_->node(checked(server)), delta_us);
  }
  void partition_server(int client_node, int server, bool two_way) override {
    const sim::NodeId node = replica_set_->node(checked(server));
    world_.network().partition(node, client_node);
    if (two_way) world_.network().partition(client_node, node);
  }

  void on_mongo_write(std::string_view member, const sim::MongoWriteEvent& e) override {
    if (e.ns == fencing_ns_) {
      if (e.kind != sim::MongoWriteEvent::Kind::unchanged) record_token_issue(e);
      return;
    }
    if (e.ns != lock_ns_) return;
    // Leases follow the lock, not the member: the replica set is one replication group, so a
    // release or extend on a newly elected primary closes or lengthens the lease it inherited.
    if (std::optional<HistoryEvent> event = lease_event_from(kReplicaSet, e)) {
      event->detail = event->detail.empty() ? std::string(member)
                                            : fmt::format("{} on {}", event->detail, member);
      recorder_.record(std::move(*event));
    }
  }

 private:
  // The counter's write is the token's issue ({_id: key, n}), in the order the primary made them.
  void record_token_issue(const sim::MongoWriteEvent& e) {
    if (e.client < 0 || !e.after.is_object() || !e.after.contains("n") ||
        !e.after["n"].is_number_integer() || e.after["n"].get<int64_t>() <= 0) {
      return;
    }
    recorder_.record({.kind = EventKind::token,
                      .client = e.client,
                      .key = string_field(e.after, "_id"),
                      .has_token = true,
                      .token = static_cast<uint64_t>(e.after["n"].get<int64_t>()),
                      .server = std::string(kReplicaSet)});
  }

  int checked(int server) const {
    if (server < 0 || server >= replica_set_->members()) {
      throw WorldUnsupported(
          fmt::format("no mongod {} (the replica set has {})", server, replica_set_->members()));
    }
    return server;
  }

  sim::World& world_;
  Recorder& recorder_;
  const Options& options_;
  MongoAdapterFactory make_adapter_;
  std::string lock_ns_;
  std::string fencing_ns_ = fencing_namespace();
  std::unique_ptr<sim::MongoReplicaSet> replica_set_;
  std::vector<std::unique_ptr<sim::SimMongoConnection>> connections_;
  std::vector<std::unique_ptr<LockAdapter>> adapters_;
};

}  // namespace

std::vector<OptionSpec> mongo_backend_options() {
  return {
      {.name = "time_source",
       .default_value = "server",
       .help = "where `now` comes from: the server's $$NOW, or the client's clock (locco)",
       .choices = {"server", "client"}},
      {.name = "write_concern",
       .default_value = "majority",
       .help = "write concern of every lock write",
       .choices = {"majority", "1"}},
      {.name = "read_majority",
       .default_value = "auto",
       .help = "is_locked reads at readConcern majority; auto: exactly when write_concern is "
               "majority, as the adapter ships",
       .choices = {"auto", "off", "on"}},
      // The adapter's shipped settings: libmongoc's socket timeout (10 s) outlasts the wtimeout
      // (5 s), so a majority that cannot be reached is answered by a writeConcernError, not by a
      // client that gave up first (check_mongo_options refuses the opposite).
      {.name = "command_timeout_ms",
       .default_value = "10000",
       .help = "client socket timeout per command (longer than wtimeout_ms under w:majority)",
       .min = 1,
       .max = 600'000},
      {.name = "wtimeout_ms",
       .default_value = "5000",
       .help = "w:majority wait before a write-concern error",
       .min = 1,
       .max = 600'000},
      {.name = "replication_delay_ms",
       .default_value = "0",
       .help = "secondaries' apply lag (sim)",
       .min = 0,
       .max = 600'000},
      {.name = "election_timeout_ms",
       .default_value = "10000",
       .help = "replica set election timeout (sim; heartbeats every fifth of it, as mongod's "
               "defaults)",
       .min = kElectionTimeoutMinMs,
       .max = 600'000},
      {.name = "ttl_monitor_period_ms",
       .default_value = "60000",
       .help = "TTL monitor pass period (sim)",
       .min = 1,
       .max = 86'400'000},
  };
}

AdapterTraits mongo_traits(AdapterTraits declared, const Options& options) {
  declared.envelope.failover =
      declared.envelope.failover && options.get("write_concern") == "majority";
  const bool client_time = options.get("time_source") == "client";
  declared.envelope.client_wall_clock = declared.envelope.client_wall_clock && !client_time;
  if (client_time) declared.server_expiry = ExpiryClock::client_wall;
  return declared;
}

void check_mongo_options(const Options& options) {
  if (options.get("write_concern") != "majority") return;
  const int64_t command_timeout_ms = options.get_int("command_timeout_ms");
  const int64_t wtimeout_ms = options.get_int("wtimeout_ms");
  if (command_timeout_ms > wtimeout_ms) return;
  throw OptionError(fmt::format(
      "command_timeout_ms ({}) must exceed wtimeout_ms ({}) under write_concern=majority: the "
      "client would give up on a write before the server can answer it with a write concern error",
      command_timeout_ms, wtimeout_ms));
}

MongoAdapterFactory production_mongo_adapter() {
  return [](MongoConnection& connection, Clock& clock,
            const Options& options) -> std::unique_ptr<LockAdapter> {
    return std::make_unique<MongoAdapter>(MongoAdapterOptions{
        .connection = &connection,
        .clock = &clock,
        .time_source = options.get("time_source") == "client" ? MongoTimeSource::client
                                                              : MongoTimeSource::server,
        .write_concern = options.get("write_concern") == "1" ? MongoWriteConcern::one
                                                             : MongoWriteConcern::majority,
        .write_concern_timeout_ms = options.get_int("wtimeout_ms"),
        .read_majority = read_majority(options.get("read_majority")),
    });
  };
}

std::unique_ptr<Backend> make_mongo_sim_backend(BackendEnv& env, MongoAdapterFactory make_adapter) {
  return std::make_unique<MongoSimBackend>(env, std::move(make_adapter));
}

}  // namespace lockstep
