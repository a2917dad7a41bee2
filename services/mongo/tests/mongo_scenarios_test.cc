// The Mongo lock end to end in the simulator: what it promises (client clock ahead with
// client and server time, failover with w:1 and w:majority), the lock scenarios that apply to it,
// the known-bad variant without the unique index, and determinism.
#include <catch2/catch.hpp>

#include "explore/swarm.h"
#include "explore/sweep.h"
#include "lockstep/clock.h"
#include "lockstep/registry.h"
#include "report/report.h"
#include "run/runner.h"
#include "services/known_bad.h"
#include "services/mongo/backend/mongo_backend.h"

namespace lockstep {
namespace {

RunReport run(const std::string& scenario, const std::string& adapter,
              std::vector<std::string> sets = {}, bool fencing_on = false, uint64_t seed = 1) {
  return run_scenario({.scenario = scenario,
                       .adapter = adapter,
                       .seed = seed,
                       .fencing_on = fencing_on,
                       .sets = std::move(sets)});
}

bool violates(const RunReport& r, Invariant invariant) {
  return r.violated().count(invariant) != 0;
}

// Answers every command with ok and an empty cursor, and keeps what it was sent.
class RecordingConnection final : public MongoConnection {
 public:
  MongoResult run_command(const std::string&, MongoDocument command) override {
    sent.push_back(std::move(command));
    return {.reply = MongoDocument::parse(R"({"ok": 1, "cursor": {"firstBatch": [], "id": 0}})")};
  }
  std::string endpoint() const override { return "recording:0"; }
  std::vector<MongoDocument> sent;
};

// Whether is_valid of the adapter the Mongo runs build under these options reads at majority.
bool reads_majority(const std::vector<std::string>& sets) {
  Options options(mongo_backend_options());
  for (const std::string& set : sets) options.set(set);
  RecordingConnection connection;
  SystemClock clock;
  const auto adapter = production_mongo_adapter()(connection, clock, options);
  adapter->is_valid_lock({.key = "k", .value = "v", .ttl_ms = 1000});
  for (const MongoDocument& command : connection.sent) {
    if (command.contains("find")) return command.contains("readConcern");
  }
  FAIL("is_valid sent no find");
  return false;
}

}  // namespace

TEST_CASE("sequential: the Mongo lock is taken and released twice, with server and client time",
          "[mongo]") {
  // What `lockstep run sequential --adapter mongo` does. A simulated mongod that refuses what
  // mongod refuses (no $expr in an upsert's query) must still grant the lock in either time mode.
  for (const char* time_source : {"time_source=server", "time_source=client"}) {
    const RunReport r = run("sequential", "mongo", {time_source});
    INFO(time_source << "\n" << to_text(r));
    CHECK(r.end == RunEnd::complete);
    CHECK(r.violated().empty());
    CHECK(r.stats.acquisitions == 2);
    CHECK(r.ok());
  }
}

TEST_CASE("client-clock-ahead: client time takes over a live lock, the server's $$NOW does not",
          "[mongo]") {
  const RunReport client = run("client-clock-ahead", "mongo", {"time_source=client"});
  INFO(to_text(client));
  CHECK(client.end == RunEnd::complete);
  CHECK(violates(client, Invariant::mutual_exclusion));
  CHECK(violates(client, Invariant::lease_exclusion));
  CHECK(client.matches_expectation());

  const RunReport server = run("client-clock-ahead", "mongo", {"time_source=server"});
  INFO(to_text(server));
  CHECK(server.end == RunEnd::complete);
  CHECK(server.violated().empty());
  CHECK(server.stats.acquisitions == 2);  // B gets in once A has released
}

TEST_CASE("failover: w:1 loses the lock in the rollback, w:majority keeps it", "[mongo]") {
  const RunReport one = run("failover", "mongo", {"write_concern=1"});
  INFO(to_text(one));
  CHECK(one.end == RunEnd::complete);
  CHECK(violates(one, Invariant::mutual_exclusion));
  CHECK(one.matches_expectation());

  const RunReport majority = run("failover", "mongo", {"write_concern=majority"});
  INFO(to_text(majority));
  CHECK(majority.end == RunEnd::complete);
  CHECK(majority.violated().empty());
  CHECK(majority.stats.acquisitions >= 1);
}

TEST_CASE("every scenario for mongo matches its expectation, fencing off and on", "[mongo]") {
  for (const Scenario& scenario : scenarios()) {
    if (!scenario.applies_to(*find_adapter("mongo"))) continue;
    for (bool fencing_on : {false, true}) {
      const RunReport r = run(scenario.name, "mongo", {}, fencing_on);
      INFO(to_text(r));
      CHECK(r.end == RunEnd::complete);
      CHECK(r.matches_expectation());
    }
  }
}

TEST_CASE(
    "extend-after-expiry holds whether the TTL monitor or the next holder's release deleted the "
    "document",
    "[mongo]") {
  // By default the monitor (60 s) never runs in this scenario: B's release deletes the document.
  const RunReport released = run("extend-after-expiry", "mongo");
  INFO(to_text(released));
  CHECK(released.violated().empty());
  // A monitor pass every 5 ms deletes A's expired document before B (at TTL + 10 ms) even asks.
  const RunReport swept = run("extend-after-expiry", "mongo", {"ttl_monitor_period_ms=5"});
  INFO(to_text(swept));
  CHECK(swept.violated().empty());
}

TEST_CASE("the known-bad Mongo lock without a unique index is caught by concurrent-race",
          "[mongo][known-bad]") {
  register_known_bad_adapters();
  const RunReport bad = run("concurrent-race", "bad-mongo-no-unique");
  INFO(to_text(bad));
  CHECK(violates(bad, Invariant::mutual_exclusion));
  CHECK(bad.matches_expectation());
  CHECK(run("concurrent-race", "mongo").violated().empty());
}

TEST_CASE("a mongo run is a function of its seed", "[mongo][determinism]") {
  for (const char* scenario : {"failover", "client-clock-ahead", "retry-storm"}) {
    const RunReport first = run(scenario, "mongo", {"write_concern=1"}, false, 7);
    const RunReport again = run(scenario, "mongo", {"write_concern=1"}, false, 7);
    INFO(scenario);
    CHECK(first.trace_hash == again.trace_hash);
    CHECK(run(scenario, "mongo", {"write_concern=1"}, false, 8).trace_hash != first.trace_hash);
  }
}

TEST_CASE("Mongo runs use the adapter as it ships: its read concern rule and its timeouts",
          "[mongo]") {
  // read_majority=auto leaves the choice to the adapter: majority reads exactly under w:majority.
  CHECK(reads_majority({}));
  CHECK_FALSE(reads_majority({"write_concern=1"}));
  CHECK_FALSE(reads_majority({"read_majority=off"}));
  CHECK(reads_majority({"write_concern=1", "read_majority=on"}));

  // The client waits longer than the server's wtimeout, so a lost majority is a writeConcernError.
  const Options defaults(mongo_backend_options());
  CHECK(defaults.get_int("command_timeout_ms") > defaults.get_int("wtimeout_ms"));
  for (const std::string adapter : {"mongo", "bad-mongo-no-unique"}) {
    register_known_bad_adapters();
    CHECK_THROWS_WITH(run("sequential", adapter, {"command_timeout_ms=100"}),
                      Catch::Contains("must exceed wtimeout_ms"));
  }
  CHECK(run("sequential", "mongo", {"command_timeout_ms=100", "write_concern=1"}).ok());
}

TEST_CASE("an extend that rewrote the same expiry after a server clock went back is a lease fact",
          "[mongo]") {
  // Sweep seed 1112 under server clock jumps: the member's clock went back 500 ms during c1's
  // lease, and about 500 ms later c1 extended it to the very expire_at it had: a no-op update,
  // which mongod leaves out of its oplog. The member still held the lease by its clock, but no
  // lease fact said so, and valid_on_return reported an extend that no server backed.
  SweepConfig config{.adapter = "mongo", .first_seed = 1112, .seeds = 1};
  config.faults = {FaultKind::server_clock_jump};
  config.faults_named = true;
  const SeedOutcome outcome = run_sweep_seed(config, swarm_capabilities("mongo"), 1112);
  INFO(to_text(outcome.report));
  CHECK(outcome.report.end == RunEnd::complete);
  CHECK_FALSE(outcome.violates());
}

}  // namespace lockstep
