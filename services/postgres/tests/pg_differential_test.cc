// Differential test: the same random operation sequences, run by several sessions on the
// simulated server (PgServer, driven directly: no network) and on a private PostgreSQL 15
// cluster, must give the same result for every operation: session and transaction-level
// advisory locks (try and blocking, with lock_timeout), unlocks, transaction blocks and their
// aborted state, nextval and the adapters' lock-and-token statements, pg_terminate_backend of
// another session, of itself and of no backend, sessions closed, and server crashes (after which
// sequences resume from their last logged value). Backend pids differ between the two, so each
// known session's pid is written as PID<slot> before comparing.
//
// The real server ends a closed or terminated session's backend asynchronously: the test polls
// (pg_stat_activity and pg_locks through an admin session) until it is gone, as the simulated
// server ends it at once.
#include <chrono>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "lockstep/random.h"
#include "services/postgres/adapter/libpq_connection.h"
#include "services/postgres/sim/pg_server.h"
#include "services/postgres/tests/pg_test_support.h"
#include "sim/world.h"

namespace lockstep {
namespace {

constexpr int kSlots = 4;
constexpr int kKeys = 3;
constexpr int64_t kLockTimeoutMs = 20;
const PgSettings kSessionSettings{{"lock_timeout", std::to_string(kLockTimeoutMs)}};

// One operation, abstract: each side renders its SQL with its own pids.
struct Op {
  enum class Kind { open, close, statement, restart };
  Kind kind = Kind::statement;
  int slot = 0;
  std::string sql;  // "{target}" stands for the pid of slot `target`
  int target = -1;
};

// What a sequence of operations draws from: every statement the adapters and the simulated server
// know, with crashes; or only locks, on keys of both forms (one bigint, or two int4: (0, K) is
// another lock than K), and transaction blocks.
enum class Draws { everything, two_key_locks };

class OpGenerator {
 public:
  OpGenerator(uint64_t seed, Draws draws) : prng_(seed), draws_(draws) {}

  Op next(const std::vector<bool>& open, bool any_block) {
    if (draws_ == Draws::everything && !any_block && prng_.chance(1, 300)) {
      return Op{.kind = Op::Kind::restart};
    }
    const int slot = static_cast<int>(prng_.below(kSlots));
    if (!open[static_cast<size_t>(slot)]) return Op{.kind = Op::Kind::open, .slot = slot};
    if (prng_.chance(1, 40)) return Op{.kind = Op::Kind::close, .slot = slot};
    const std::string sql = draws_ == Draws::everything ? statement() : lock_statement();
    return Op{.kind = Op::Kind::statement, .slot = slot, .sql = sql, .target = target_};
  }

 private:
  std::string lock_statement() {
    target_ = -1;
    const std::string number = std::to_string(prng_.below(kKeys));
    const std::string k = prng_.chance(1, 2) ? "0, " + number : number;
    switch (prng_.below(10)) {
      case 0:
      case 1: return "SELECT pg_try_advisory_lock(" + k + ")";
      case 2: return "SELECT pg_advisory_lock(" + k + ")";
      case 3:
      case 4: return "SELECT pg_advisory_unlock(" + k + ")";
      case 5: return "SELECT pg_try_advisory_xact_lock(" + k + ")";
      case 6: return "SELECT pg_advisory_unlock_all()";
      case 7: return "BEGIN";
      case 8: return "COMMIT";
      default: return "ROLLBACK";
    }
  }

  std::string statement() {
    target_ = -1;
    const std::string k = std::to_string(prng_.below(kKeys));
    switch (prng_.below(19)) {
      case 0:
      case 1: return "SELECT pg_try_advisory_lock(" + k + ")";
      case 2: return "SELECT pg_advisory_lock(" + k + ")";
      case 3:
      case 4: return "SELECT pg_advisory_unlock(" + k + ")";
      case 5: return "SELECT pg_advisory_unlock_all()";
      case 6: return "SELECT pg_try_advisory_xact_lock(" + k + ")";
      case 7: return "SELECT pg_advisory_xact_lock(" + k + ")";
      case 8: return "BEGIN";
      case 9: return "COMMIT";
      case 10: return "ROLLBACK";
      case 11: return "SELECT nextval('lockstep_fencing')";
      case 12:
        return "SELECT CASE WHEN pg_try_advisory_lock(" + k +
               ") THEN nextval('lockstep_fencing') END";
      case 13: return "SELECT nextval('lockstep_fencing') FROM pg_advisory_lock(" + k + ")";
      case 14:
        return "SELECT CASE WHEN pg_try_advisory_xact_lock(" + k +
               ") THEN nextval('lockstep_fencing') END";
      case 15:
        target_ = static_cast<int>(prng_.below(kSlots));
        return prng_.chance(1, 2) ? "SELECT pg_terminate_backend({target}, 5000)"
                                  : "SELECT pg_terminate_backend({target})";
      case 16: return "SELECT pg_terminate_backend(1)";  // pid 1 is never a backend
      case 17: return "SELECT pg_backend_pid()";
      default: return "SELECT nextval('no_such_sequence')";
    }
  }

  Prng prng_;
  Draws draws_;
  int target_ = -1;
};

// What both sides do; every result comes back as PgResult.
class Side {
 public:
  virtual ~Side() = default;
  virtual PgResult open(int slot) = 0;
  virtual void close(int slot) = 0;
  virtual PgResult execute(int slot, const std::string& sql) = 0;
  virtual void restart() = 0;
  // The pid slot had last (0: never opened).
  int64_t pid(int slot) const { return pids_.at(static_cast<size_t>(slot)); }

  std::string render(const Op& op) const {
    std::string sql = op.sql;
    const size_t at = sql.find("{target}");
    if (at != std::string::npos) {
      const int64_t target = pid(op.target);
      sql.replace(at, 8, std::to_string(target != 0 ? target : 1));
    }
    return sql;
  }

  // The result with every known pid written as PID<slot>.
  std::string normalized(const PgResult& result) const {
    std::string out = fmt::format("{} [{}] tag={} rows=", to_string(result.status), result.sqlstate,
                                  result.command_tag);
    for (const auto& row : result.rows) {
      for (const auto& value : row) out += (value ? "'" + *value + "'" : "NULL") + ",";
    }
    // A connection the server closed carries whatever it said as it went: an immediate shutdown
    // (the real side's crash, SIGQUIT) warns, a killed one does not. Not compared.
    out += " notices=";
    if (result.status == IoStatus::ok) {
      for (const std::string& notice : result.notices) out += notice + ";";
    }
    for (int slot = 0; slot < kSlots; ++slot) {
      const int64_t p = pid(slot);
      if (p == 0) continue;
      const std::string text = std::to_string(p);
      for (size_t at = out.find(text); at != std::string::npos; at = out.find(text, at)) {
        const bool whole = (at == 0 || !std::isdigit(static_cast<unsigned char>(out[at - 1]))) &&
                           (at + text.size() >= out.size() ||
                            !std::isdigit(static_cast<unsigned char>(out[at + text.size()])));
        if (!whole) {
          at += text.size();
          continue;
        }
        out.replace(at, text.size(), fmt::format("PID{}", slot));
      }
    }
    return out;
  }

 protected:
  std::vector<int64_t> pids_ = std::vector<int64_t>(kSlots, 0);
};

// A host whose sockets are always open: the differential test drives the server directly.
class AlwaysOpenPeer final : public sim::PgPeer {
 public:
  explicit AlwaysOpenPeer(sim::NodeId node) : node_(node) {}
  sim::NodeId node() const override { return node_; }
  int client() const override { return -1; }
  bool socket_open(uint64_t) const override { return true; }
  void closed_by_server(uint64_t conn, PgResult why) override { closing[conn] = std::move(why); }

  std::map<uint64_t, PgResult> closing;  // what the server said as it closed a connection

 private:
  sim::NodeId node_;
};

class SimSide final : public Side {
 public:
  explicit SimSide(uint64_t seed)
      : world_({.seed = seed}),
        server_(world_, {.name = "postgres-0"}),
        peer_(std::make_shared<AlwaysOpenPeer>(world_.add_node("test-host"))) {
    server_.engine().create_sequence("lockstep_fencing");
  }

  PgResult open(int slot) override {
    const uint64_t conn = ++next_conn_;
    conns_[slot] = conn;
    incarnations_[slot] = world_.incarnation(server_.node());
    PgResult result = wait_for([&](sim::PgServer::Reply reply) {
      server_.startup(conn, peer_, kSessionSettings, std::move(reply));
    });
    pids_[static_cast<size_t>(slot)] = std::stoll(*result.scalar());
    return PgResult{.command_tag = "OPEN"};
  }
  void close(int slot) override { server_.client_closed(conns_.at(slot)); }
  PgResult execute(int slot, const std::string& sql) override {
    auto closed = peer_->closing.find(conns_.at(slot));
    if (closed != peer_->closing.end()) {  // read before anything else, as libpq does
      PgResult why = std::move(closed->second);
      peer_->closing.erase(closed);
      return why;
    }
    if (incarnations_.at(slot) != world_.incarnation(server_.node())) {
      return PgResult{.status = IoStatus::connection_lost, .message = "reset"};
    }
    return wait_for([&](sim::PgServer::Reply reply) {
      server_.query(conns_.at(slot), sql, {}, std::move(reply));
    });
  }
  void restart() override {
    // The WAL writer's 200 ms pass first, as the real side flushes before its crash.
    world_.scheduler().run_until(world_.now_us() + 300'000);
    world_.crash(server_.node());
    world_.restart(server_.node());
  }

 private:
  template <typename Send>
  PgResult wait_for(Send send) {
    auto result = std::make_shared<std::optional<PgResult>>();
    send([result](PgResult r) { *result = std::move(r); });
    for (int step = 0; step < 100 && !result->has_value(); ++step) {
      world_.scheduler().run_until(world_.now_us() + 10'000);  // a lock_timeout runs out
    }
    REQUIRE(result->has_value());
    world_.scheduler().run_until(world_.now_us() + 2'000);  // what it sent to clients arrives
    return std::move(**result);
  }

  sim::World world_;
  sim::PgServer server_;
  std::shared_ptr<AlwaysOpenPeer> peer_;
  uint64_t next_conn_ = 0;
  std::map<int, uint64_t> conns_;
  std::map<int, uint64_t> incarnations_;
};

class RealSide final : public Side {
 public:
  explicit RealSide(real::PgServerProcess& server) : server_(server) {
    connect_admin();
    testing::must(*admin_, "CREATE SEQUENCE lockstep_fencing");
  }

  PgResult open(int slot) override {
    auto& connection = conns_[slot];
    connection = std::make_unique<LibpqConnection>(LibpqOptions{
        .port = server_.port(), .command_timeout_ms = 10'000, .settings = kSessionSettings});
    PgResult opened = connection->open();
    REQUIRE(opened.ok());
    pids_[static_cast<size_t>(slot)] = connection->session_pid();
    return opened;
  }
  void close(int slot) override {
    conns_.at(slot)->close();
    wait_gone(pid(slot));
  }
  PgResult execute(int slot, const std::string& sql) override {
    PgResult result = conns_.at(slot)->execute(sql);
    if (result.status != IoStatus::ok) wait_gone(pid(slot));
    for (int other = 0; other < kSlots && result.scalar() == "t"; ++other) {
      if (sql.find("pg_terminate_backend(" + std::to_string(pid(other)) + ")") !=
          std::string::npos) {
        wait_gone(pid(other));  // without a timeout the call does not wait for the end
      }
    }
    return result;
  }
  void restart() override {
    testing::must(*admin_, "SELECT txid_current()");  // a commit flushes every WAL record
    server_.crash();
    server_.restart();
    connect_admin();
  }

 private:
  void connect_admin() {
    admin_ = std::make_unique<LibpqConnection>(LibpqOptions{.port = server_.port()});
    REQUIRE(admin_->open().ok());
  }
  // Polls until the backend of pid is gone and holds no lock.
  void wait_gone(int64_t pid) {
    const std::string sql = fmt::format(
        "SELECT (SELECT count(*) FROM pg_stat_activity WHERE pid = {0}) + "
        "(SELECT count(*) FROM pg_locks WHERE pid = {0})",
        pid);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (testing::must(*admin_, sql).scalar() != "0") {
      INFO("waiting for the backend of pid "
           << pid << " to end: "
           << describe(admin_->execute(fmt::format("SELECT state, backend_type, query FROM "
                                                   "pg_stat_activity WHERE pid = {}",
                                                   pid))));
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // polling a bounded deadline
    }
  }

  real::PgServerProcess& server_;
  std::unique_ptr<LibpqConnection> admin_;
  std::map<int, std::unique_ptr<LibpqConnection>> conns_;
};

// Runs `sequences` sequences of ops_per_sequence operations on both sides, failing at the first
// disagreement with the operations before it; returns the edges they reached.
std::map<std::string, int> compare_sides(Draws draws, int sequences, int ops_per_sequence) {
  std::map<std::string, int> reached;
  int compared = 0;
  for (uint64_t seed = 1; seed <= static_cast<uint64_t>(sequences); ++seed) {
    real::PgServerProcess server;
    RealSide real_side(server);
    SimSide sim_side(seed);
    OpGenerator generator(seed, draws);
    std::vector<bool> open(kSlots, false);
    std::vector<bool> in_block(kSlots, false);
    std::vector<std::string> log;
    for (int i = 0; i < ops_per_sequence; ++i) {
      const bool any_block = std::find(in_block.begin(), in_block.end(), true) != in_block.end();
      const Op op = generator.next(open, any_block);
      std::string real_text;
      std::string sim_text;
      std::string shown;
      switch (op.kind) {
        case Op::Kind::open:
          real_text = real_side.normalized(real_side.open(op.slot));
          sim_text = sim_side.normalized(sim_side.open(op.slot));
          open[static_cast<size_t>(op.slot)] = true;
          shown = fmt::format("s{} open", op.slot);
          break;
        case Op::Kind::close:
          real_side.close(op.slot);
          sim_side.close(op.slot);
          open[static_cast<size_t>(op.slot)] = false;
          in_block[static_cast<size_t>(op.slot)] = false;
          shown = fmt::format("s{} close", op.slot);
          break;
        case Op::Kind::restart:
          real_side.restart();
          sim_side.restart();
          ++reached["restart"];
          shown = "server crash and restart";
          break;
        case Op::Kind::statement: {
          const PgResult real_result = real_side.execute(op.slot, real_side.render(op));
          const PgResult sim_result = sim_side.execute(op.slot, sim_side.render(op));
          real_text = real_side.normalized(real_result);
          sim_text = sim_side.normalized(sim_result);
          shown = fmt::format("s{} {}", op.slot, op.sql);
          if (real_result.status != IoStatus::ok) {
            open[static_cast<size_t>(op.slot)] = false;
            in_block[static_cast<size_t>(op.slot)] = false;
            ++reached["session gone"];
          }
          if (real_result.command_tag == "BEGIN") in_block[static_cast<size_t>(op.slot)] = true;
          if (real_result.command_tag == "COMMIT" || real_result.command_tag == "ROLLBACK") {
            in_block[static_cast<size_t>(op.slot)] = false;
          }
          // A terminated session's slot learns it at its next statement, as its client does.
          if (!real_result.sqlstate.empty()) ++reached[real_result.sqlstate];
          if (!real_result.notices.empty()) ++reached["warning"];
          break;
        }
      }
      ++compared;
      log.push_back(fmt::format("{} -> {}", shown, real_text));
      if (real_text != sim_text) {
        std::string context;
        const size_t from = log.size() > 40 ? log.size() - 40 : 0;
        for (size_t l = from; l < log.size(); ++l) context += "  " + log[l] + "\n";
        FAIL(fmt::format("seed {} op {}: {}\n  real: {}\n  sim:  {}\nthe last operations:\n{}",
                         seed, i, shown, real_text, sim_text, context));
      }
    }
  }
  CHECK(compared == sequences * ops_per_sequence);
  std::string edges;
  for (const auto& [edge, count] : reached) edges += fmt::format(" {}={}", edge, count);
  WARN(fmt::format("{} operations compared, 0 disagreements; edges reached:{}", compared, edges));
  return reached;
}

TEST_CASE("the simulated server answers like PostgreSQL 15", "[postgres][real][differential]") {
  testing::require_postgres();
  // 10,000 operations in all.
  std::map<std::string, int> reached = compare_sides(Draws::everything, 20, 500);
  // The sequences reached what they are about: lock timeouts, aborted blocks, terminations (the
  // victim's FATAL and the caller's own), missing relations, warnings and crashes.
  for (const char* edge : {"55P03", "25P02", "57P01", "42P01", "session gone", "warning"}) {
    INFO(edge);
    CHECK(reached[edge] >= 20);
  }
  CHECK(reached["restart"] >= 10);
}

// advisory-lock (npm) and others lock (k1, k2), two int4 halves of a hash: a lock apart from the
// bigint key K, which pg_advisory_unlock_all releases with the rest.
TEST_CASE("the simulated server's two-key advisory locks answer like PostgreSQL 15",
          "[postgres][real][differential]") {
  testing::require_postgres();
  std::map<std::string, int> reached = compare_sides(Draws::two_key_locks, 4, 500);
  CHECK(reached["55P03"] >= 10);    // a blocking lock on a held key, of either form
  CHECK(reached["warning"] >= 20);  // an unlock of a lock not held
}

}  // namespace
}  // namespace lockstep
