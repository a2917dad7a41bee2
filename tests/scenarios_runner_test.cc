// The runner end to end in the simulator: every catalogue scenario against the in-memory adapter,
// determinism of trace hashes, the docs/DESIGN.md "done when" of gc-pause, reports and option
// errors.
#include <catch2/catch.hpp>

#include <filesystem>

#include "cli/exit_codes.h"
#include "explore/sweep.h"
#include "history/history_rules.h"
#include "lockstep/registry.h"
#include "report/report.h"
#include "run/runner.h"
#include "services/keyed/backend/keyed_backend.h"
#include "services/known_bad.h"

namespace lockstep {
namespace {

RunReport run(const std::string& scenario, const std::string& adapter, uint64_t seed = 1,
              bool fencing_on = false, std::vector<std::string> sets = {}) {
  return run_scenario({.scenario = scenario,
                       .adapter = adapter,
                       .seed = seed,
                       .fencing_on = fencing_on,
                       .sets = std::move(sets)});
}

bool violates(const RunReport& r, Invariant invariant) {
  return r.violated().count(invariant) != 0;
}

}  // namespace

TEST_CASE("every catalogue scenario matches its expectation for memory, fencing off and on",
          "[runner]") {
  for (const Scenario& scenario : scenarios()) {
    if (!scenario.applies_to(*find_adapter("memory"))) continue;
    for (bool fencing_on : {false, true}) {
      for (uint64_t seed : {1, 2, 3}) {
        RunReport r = run(scenario.name, "memory", seed, fencing_on);
        INFO(to_text(r));
        CHECK(r.end == RunEnd::complete);
        CHECK(r.matches_expectation());
        CHECK(r.stats.ops > 0);
      }
    }
  }
}

TEST_CASE("a correct lock loses only to faults outside its envelope, in every scenario",
          "[runner][envelope]") {
  // Each production adapter's violations in every named scenario it takes (sim, fencing off and
  // on) are excused by a fault outside what it claims to survive: a violation nothing excuses
  // would be a bug in the lock or a fault the history does not name.
  int judged = 0;
  for (const AdapterEntry& adapter : adapters()) {
    // Not a third party's library either (the co-simulated ext: libraries): other people's locks
    // under test, whose findings (node-redlock's slow-acquire) nothing excuses.
    if (adapter.known_bad || !adapter.make_sim || adapter.third_party) continue;
    for (const Scenario& scenario : scenarios()) {
      if (!scenario.applies_to(adapter) || !scenario.runs_in(WorldKind::sim)) continue;
      for (bool fencing_on : {false, true}) {
        const RunReport r = run(scenario.name, adapter.name, 1, fencing_on);
        // A documented finding (AdapterEntry::findings: what the lock's server does that its
        // claims do not allow, etcd's whole-second leases) is charted as such, not excused.
        if (!r.finding.empty()) continue;
        for (const ReportedViolation& rv : r.violations) {
          INFO(scenario.name << " x " << adapter.name << ": " << rv.violation.detail);
          CHECK(rv.violation.excused());
          ++judged;
        }
      }
    }
  }
  CHECK(judged > 20);  // the catalogue does break correct locks, with faults outside their claims
}

// `check` refuses a history that breaks the schema's rules (history/history_rules.h, issue 34):
// every history lockstep records must keep them, or check would refuse lockstep's own files.
TEST_CASE("every recorded history keeps the schema's rules", "[runner][history]") {
  int runs = 0;
  for (const AdapterEntry& adapter : adapters()) {
    // Not the Node drivers (the ext tests' own), nor ext without a driver to run.
    if (!adapter.make_sim || adapter.third_party || adapter.needs_user_option) continue;
    for (const Scenario& scenario : scenarios()) {
      if (!scenario.applies_to(adapter) || !scenario.runs_in(WorldKind::sim)) continue;
      const RunReport r = run(scenario.name, adapter.name, 1, true);
      const std::optional<HistoryRuleBreak> broken = first_rule_break(r.history);
      INFO(scenario.name << " x " << adapter.name << ": "
                         << (broken ? broken->rule + " at event " + std::to_string(broken->event)
                                    : std::string()));
      CHECK_FALSE(broken.has_value());
      ++runs;
    }
    const SwarmCapabilities caps = swarm_capabilities(adapter);
    for (uint64_t seed = 1; seed <= 30; ++seed) {
      const SeedOutcome o =
          run_swarm_spec(adapter.name, draw_swarm_spec(caps, seed), seed, true, false, false, {});
      const std::optional<HistoryRuleBreak> broken = first_rule_break(o.report.history);
      INFO("sweep seed " << seed << " x " << adapter.name << ": "
                         << (broken ? broken->rule : std::string()));
      CHECK_FALSE(broken.has_value());
    }
  }
  CHECK(runs > 50);  // every simulated scenario of every adapter that runs without a driver
}

TEST_CASE("the same seed gives the same trace hash, different seeds give different hashes",
          "[runner][determinism]") {
  for (const Scenario& scenario : scenarios()) {
    if (!scenario.applies_to(*find_adapter("memory"))) continue;
    INFO(scenario.name);
    const RunReport first = run(scenario.name, "memory", 7);
    const RunReport second = run(scenario.name, "memory", 7);
    CHECK(first.trace_hash == second.trace_hash);
    CHECK(first.trace == second.trace);
    CHECK(first.trace_hash.size() == 16);
    CHECK(run(scenario.name, "memory", 8).trace_hash != first.trace_hash);
  }
}

TEST_CASE("gc-pause: mutual exclusion is lost, fencing keeps the update", "[runner]") {
  const RunReport off = run("gc-pause", "memory");
  CHECK(verdict(off) == "violation");
  CHECK(violates(off, Invariant::mutual_exclusion));
  CHECK(violates(off, Invariant::no_lost_update));
  CHECK_FALSE(violates(off, Invariant::ownership));
  CHECK_FALSE(violates(off, Invariant::lease_exclusion));

  const RunReport on = run("gc-pause", "memory", 1, true);
  CHECK(violates(on, Invariant::mutual_exclusion));
  CHECK_FALSE(violates(on, Invariant::no_lost_update));
  CHECK_FALSE(violates(on, Invariant::fencing));

  // The mutual exclusion violation names both clients, the key, a time inside A's pause, and an
  // excerpt.
  const auto& v = off.violations.front();
  CHECK(v.violation.invariant == Invariant::mutual_exclusion);
  CHECK(v.violation.clients == std::vector<int>{0, 1});
  CHECK(v.violation.key == "resource");
  CHECK(v.violation.time_us > 10'000'000);
  CHECK(v.violation.time_us < 15'000'000);
  CHECK_FALSE(v.excerpt.empty());
}

TEST_CASE("a pause shorter than the TTL keeps gc-pause safe", "[runner]") {
  const RunReport r = run("gc-pause", "memory", 1, false, {"pause_ms=5000"});
  INFO(to_text(r));
  CHECK(r.ok());
  CHECK(r.matches_expectation());
}

TEST_CASE("crash-holder: another client acquires after the TTL (liveness)", "[runner]") {
  const RunReport r = run("crash-holder", "memory");
  INFO(to_text(r));
  CHECK(r.ok());
  CHECK(r.stats.acquisitions == 2);
  // A client that gives up before the TTL runs out gets contention, not an error; giving up early
  // is its own choice, not a liveness failure of the lock (it waited less than the bound).
  const RunReport impatient = run("crash-holder", "memory", 1, false, {"retry_times=2"});
  CHECK(impatient.stats.acquisitions == 1);
  CHECK_FALSE(violates(impatient, Invariant::liveness));
  bool contended = false;
  for (const HistoryEvent& e : impatient.history.events()) {
    if (e.kind == EventKind::complete && e.op == Op::acquire && e.client == 1)
      contended = e.outcome == Outcome::contended;
  }
  CHECK(contended);
}

TEST_CASE("the known-bad release without owner check is caught by stolen-lock",
          "[runner][known-bad]") {
  register_known_bad_adapters();
  const RunReport good = run("stolen-lock", "memory");
  CHECK_FALSE(violates(good, Invariant::ownership));
  const RunReport bad = run("stolen-lock", "bad-memory-no-owner-check");
  CHECK(violates(bad, Invariant::ownership));
  CHECK(bad.matches_expectation());
}

TEST_CASE("bad input is a UsageError naming the valid choices", "[runner][usage]") {
  CHECK_THROWS_WITH(run("no-such-scenario", "memory"),
                    Catch::Contains("valid scenarios") && Catch::Contains("gc-pause"));
  CHECK_THROWS_WITH(run("gc-pause", "no-such-adapter"),
                    Catch::Contains("valid adapters") && Catch::Contains("memory"));
  CHECK_THROWS_WITH(run("gc-pause", "memory", 1, false, {"bogus=1"}),
                    Catch::Contains("unknown option") && Catch::Contains("ttl_ms"));
  CHECK_THROWS_WITH(run("gc-pause", "memory", 1, false, {"ttl_ms=soon"}),
                    Catch::Contains("not a decimal integer"));
  CHECK_THROWS_WITH(run("gc-pause", "memory", 1, false, {"ttl_ms"}), Catch::Contains("KEY=VALUE"));
  register_known_bad_adapters();
  CHECK_THROWS_WITH(run_scenario({.scenario = "gc-pause",
                                  .adapter = "bad-memory-no-owner-check",
                                  .world = WorldKind::real}),
                    Catch::Contains("does not run in world"));
  CHECK_THROWS_WITH(
      run_scenario({.scenario = "slow-acquire", .adapter = "redis", .world = WorldKind::real}),
      Catch::Contains("only exist in: sim"));
}

TEST_CASE("a run whose history reaches its bound is stopped there as an error naming it",
          "[runner]") {
  RunReport r =
      run_scenario({.scenario = "retry-storm", .adapter = "memory", .history_events_max = 50});
  CHECK(r.end == RunEnd::error);
  CHECK_THAT(r.end_message, Catch::Contains("history bound: 50 events"));
  CHECK(r.history.size() <= 50);
  CHECK(run_exit_code(r) == kExitError);
  RunReport unbounded = run_scenario({.scenario = "retry-storm", .adapter = "memory"});
  CHECK(unbounded.end == RunEnd::complete);
  CHECK(unbounded.history.size() > 50);
}

TEST_CASE("a run that hits the event bound ends with an error, not a verdict of safety",
          "[runner]") {
  RunReport r = run_scenario({.scenario = "gc-pause", .adapter = "memory", .events_max = 2});
  CHECK(r.end == RunEnd::event_bound);
  CHECK(verdict(r) == "error");
  CHECK_FALSE(r.ok());
  CHECK_FALSE(r.end_message.empty());
  // Its unfinished clients may only have been slow: a bound is an error, never "stuck".
  for (const HistoryEvent& e : r.history.events()) CHECK(e.kind != EventKind::stuck);
  // An exit code of its own: neither 0 (ok) nor 1 (violation).
  CHECK(run_exit_code(r) == kExitError);
  CHECK(run_exit_code(run_scenario({.scenario = "gc-pause", .adapter = "memory"})) ==
        kExitViolation);
  // Sweeps count such a seed as "incomplete": 4 only when nothing else was found.
  const auto report = [](nlohmann::json violations, const char* verdict) {
    return nlohmann::json{{"violations", std::move(violations)}, {"verdict", verdict}};
  };
  CHECK(sweep_exit_code(report(nlohmann::json::object(), "ok")) == kExitOk);
  CHECK(sweep_exit_code(report(nlohmann::json::object(), "vacuous")) == kExitViolation);
  CHECK(sweep_exit_code(report({{"incomplete", 2}}, "violation")) == kExitError);
  CHECK(sweep_exit_code(report({{"incomplete", 2}, {"mutual_exclusion", 1}}, "violation")) ==
        kExitViolation);
}

namespace {

// keyed-rw: c0 takes k and then waits for something nobody will ever do; c1 queues for k; c2
// queues for k too and is killed by a fault while it waits; c3 works on another key and finishes.
Scenario stuck_clients_scenario() {
  return {
      .name = "test-stuck-clients",
      .description = "clients parked for good when the run ends",
      .fits = [](const AdapterTraits& t) { return t.family == LockFamily::keyed_rw; },
      .worlds = {WorldKind::sim},
      .expected = [](const AdapterTraits&, const Options&, bool) { return Expectation{}; },
      .build =
          [](ScenarioEnv& env) {
            // A hold that never ends needs the keyed-rw lock's own calls, past what scenarios use.
            KeyedSteps& steps = static_cast<KeyedSteps&>(keyed_calls(env.backend()));
            sim::World* sim = env.sim();
            env.start(env.add_client("holder"), 0, [&steps, sim](Client& c) {
              keyed::RwHandle held = steps.rw_acquire(c, "k", keyed::RwMode::exclusive);
              const sim::Waiter forever = sim->prepare_park();
              sim->park(forever);
            });
            env.start(env.add_client("waiter"), 10,
                      [&steps](Client& c) { steps.rw_hold(c, "k", keyed::RwMode::exclusive, 10); });
            Client& killed = env.add_client("killed");
            env.start(killed, 20,
                      [&steps](Client& c) { steps.rw_hold(c, "k", keyed::RwMode::shared, 10); });
            ScenarioWorld& world = env.world();
            env.schedule_client_kill_us(30'000, killed, "crash killed",
                                        [&world, node = killed.node()] { world.crash(node); });
            env.start(env.add_client("done"), 0, [&steps](Client& c) {
              steps.rw_hold(c, "other", keyed::RwMode::exclusive, 10);
            });
          },
  };
}

}  // namespace

TEST_CASE("clients parked for good when the run ends are liveness violations, named",
          "[runner][liveness][stuck]") {
  const Scenario scenario = stuck_clients_scenario();
  const RunReport r = run_scenario(scenario, {.adapter = "keyed-rw"});
  INFO(to_text(r));
  CHECK(r.end == RunEnd::complete);
  std::vector<int> stuck;
  for (const HistoryEvent& e : r.history.events()) {
    if (e.kind != EventKind::stuck) continue;
    stuck.push_back(e.client);
    CHECK(e.time_us == r.history.meta.end_us);
  }
  CHECK(stuck == std::vector<int>{0, 1});  // not the killed c2, not c3 which finished
  REQUIRE(r.violations.size() == 2);
  // Both at the end of the run; the one whose events start earlier (c1's invocation) first.
  const Violation& waiter = r.violations[0].violation;
  const Violation& holder = r.violations[1].violation;
  CHECK(holder.invariant == Invariant::liveness);
  CHECK(holder.clients == std::vector<int>{0});
  CHECK_THAT(holder.detail, Catch::StartsWith("c0 was still parked outside any lock operation"));
  CHECK(waiter.invariant == Invariant::liveness);
  CHECK(waiter.clients == std::vector<int>{1});
  CHECK(waiter.key == "k");
  CHECK_THAT(waiter.detail, Catch::StartsWith("c1 was still waiting in acquire on key k"));
  CHECK_THAT(waiter.detail, Catch::EndsWith("(nothing will ever wake it)"));
  CHECK(verdict(r) == "violation");
}

TEST_CASE("a report written to disk replays to the same trace hash", "[runner][report]") {
  const RunReport r = run("gc-pause", "memory", 42, true, {"pause_ms=12000"});
  const auto dir = std::filesystem::temp_directory_path() / "lockstep-runner-test";
  std::filesystem::remove_all(dir);
  const auto path = write_report(r, dir);
  const ReplaySpec spec = read_replay_spec(path);
  CHECK(spec.trace_hash == r.trace_hash);
  CHECK(spec.config.seed == 42);
  CHECK(spec.config.fencing_on);
  CHECK(spec.config.sets == std::vector<std::string>{"pause_ms=12000"});
  CHECK(run_scenario(spec.config).trace_hash == r.trace_hash);

  const nlohmann::json j = to_json(r);
  for (const char* field : {"verdict", "seed", "trace_hash", "violations", "stats", "replay"})
    CHECK(j.contains(field));
  for (const char* field : {"events", "ops", "acquisitions", "sim_time_us", "wall_time_us"}) {
    CHECK(j["stats"].contains(field));
  }
  CHECK(j["replay"].get<std::string>().find("--seed 42") != std::string::npos);
  CHECK(j["replay"].get<std::string>().find("--set pause_ms=12000") != std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace lockstep

namespace lockstep {

TEST_CASE("each known-bad Redis variant is caught in the simulator", "[runner][known-bad]") {
  register_known_bad_adapters();
  struct Detection {
    const char* adapter;
    const char* scenario;
    std::vector<std::string> sets;
    Invariant invariant;
  };
  for (const Detection& c :
       {Detection{"bad-del-release", "stolen-lock", {}, Invariant::ownership},
        Detection{"bad-get-del-release", "pause-in-release", {}, Invariant::ownership},
        Detection{"bad-pexpire-extend", "stolen-lock", {}, Invariant::ownership},
        Detection{"bad-setnx-expire", "crash-holder", {"crash_at=in-acquire"}, Invariant::liveness},
        Detection{"bad-random-token", "retry-storm", {}, Invariant::fencing}}) {
    INFO(c.adapter);
    const RunReport bad =
        run_scenario({.scenario = c.scenario, .adapter = c.adapter, .sets = c.sets});
    CHECK(bad.violated().count(c.invariant) == 1);
    CHECK(bad.matches_expectation());
    // The production adapter holds on the very same timeline.
    const RunReport good =
        run_scenario({.scenario = c.scenario, .adapter = "redis", .sets = c.sets});
    CHECK(good.violated().count(c.invariant) == 0);
  }
}

TEST_CASE(
    "redis in the simulator: failover violates exclusion, a paused reply never yields a held lock",
    "[runner][redis]") {
  const RunReport failover = run_scenario({.scenario = "failover", .adapter = "redis"});
  CHECK(failover.violated().count(Invariant::mutual_exclusion) == 1);
  CHECK(failover.violated().count(Invariant::lease_exclusion) == 1);
  const RunReport slow = run_scenario({.scenario = "slow-acquire", .adapter = "redis"});
  INFO(to_text(slow));
  CHECK(slow.ok());
  bool a_failed = false;
  for (const HistoryEvent& e : slow.history.events()) {
    if (e.kind == EventKind::complete && e.op == Op::acquire && e.client == 0)
      a_failed = e.outcome != Outcome::ok;
  }
  CHECK(a_failed);  // the grant arrived after its TTL: not reported as held
}

}  // namespace lockstep

namespace lockstep {
namespace {

TEST_CASE("the default matrix separates every known-bad adapter from its correct sibling",
          "[runner][known-bad]") {
  // Some cell the known-bad is charted in must expect of it something other than of the adapter
  // it copies (its declared sibling): otherwise the matrix could pass with the bug unseen.
  register_known_bad_adapters();
  int known_bad = 0;
  for (const AdapterEntry& bad : adapters()) {
    if (!bad.known_bad) continue;
    ++known_bad;
    INFO("known-bad " << bad.name << ", sibling " << bad.sibling);
    const AdapterEntry* sibling = find_adapter(bad.sibling);
    REQUIRE(sibling != nullptr);
    CHECK_FALSE(sibling->known_bad);
    bool separated = false;
    for (const Scenario& scenario : scenarios()) {
      if (!scenario.judges_in_matrix(bad) || !scenario.runs_in(WorldKind::sim)) continue;
      const Options options = resolve_options(scenario, {.adapter = bad.name});
      for (bool fencing_on : {false, true}) {
        separated = separated || scenario.expected(bad.traits, options, fencing_on) !=
                                     scenario.expected(sibling->traits, options, fencing_on);
      }
    }
    CHECK(separated);
  }
  CHECK(known_bad >= 15);
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

TEST_CASE("a run whose premise did not happen is vacuous, never a pass", "[runner][premise]") {
  // The primary dies 5 s after A's grant, long after A released: nothing was judged of a failover
  // while A held, so "safe" would prove nothing.
  const RunReport late = run("failover", "redis", 1, false, {"failover_at_ms=5000"});
  CHECK(late.end == RunEnd::vacuous);
  CHECK(late.end_message.find("A holds when the primary dies") != std::string::npos);
  CHECK_FALSE(late.ok());
  CHECK_FALSE(late.matches_expectation());  // so the matrix counts it as a failure
  CHECK(to_json(late).at("verdict") == "vacuous");
  // The default timeline keeps its premise.
  CHECK(run("failover", "redis").end == RunEnd::complete);
}

// crash-in-acquire is about a dead holder's lease. Killed at a fixed instant, A died before any
// server granted it for redis (its first call meets NOSCRIPT), mongo (the handshake still runs)
// and ext:node-redlock, and the cell passed with nothing judged. Now A dies once its lease is
// granted, with the reply on the wire, and the premise asks for that grant.
TEST_CASE("crash-in-acquire kills a holder that a server granted a lease", "[runner][premise]") {
  register_known_bad_adapters();
  for (const char* adapter : {"redis", "mongo", "redlock", "bad-setnx-expire"}) {
    INFO(adapter);
    const RunReport r = run("crash-in-acquire", adapter);
    CHECK(r.end == RunEnd::complete);
    CHECK(r.matches_expectation());
    bool granted = false;
    bool killed_after_grant = false;
    for (const HistoryEvent& e : r.history.events()) {
      if (e.client != 0) continue;
      granted = granted || e.kind == EventKind::grant;
      if (e.kind == EventKind::fault && e.kills_client) killed_after_grant = granted;
    }
    // A two-call lock (SETNX, then PEXPIRE) dies between its calls: a key with no TTL and no
    // lease fact, which liveness finds.
    if (std::string_view(adapter) == "bad-setnx-expire") {
      CHECK(r.violated().contains(Invariant::liveness));
    } else {
      CHECK(killed_after_grant);
    }
  }
}

TEST_CASE("every catalogue scenario states a premise", "[runner][premise]") {
  for (const Scenario& scenario : scenarios()) {
    INFO(scenario.name);
    CHECK_FALSE(scenario.premise.empty());
    CHECK(scenario.premise_held != nullptr);
  }
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

TEST_CASE("the scenarios whose premise is an extend apply only to locks with an extend call",
          "[runner][traits]") {
  // A lock with no extend call (redis-semaphore refreshes on a timer of its own) could only make
  // them vacuous: extend-after-expiry's A never asks to extend, lost-extension's extensions never
  // fail. So they are not charted for it.
  for (const char* name : {"extend-after-expiry", "lost-extension"}) {
    INFO(name);
    const Scenario& scenario = *find_scenario(name);
    AdapterEntry lock = *find_adapter("redis");
    CHECK(scenario.applies_to(lock));
    lock.traits.extends = false;
    CHECK_FALSE(scenario.applies_to(lock));
  }
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

// An auto-extended holder's renewals report validities, judged like an extend's: each one is in
// the history as a `renewal` of the lock's value, its validity in true time after the renewal.
TEST_CASE("an auto-extending holder's renewals are in the history with their validity",
          "[runner][renewal]") {
  const RunReport report = run_scenario({.scenario = "lost-extension", .adapter = "redis"});
  size_t renewals = 0;
  for (const HistoryEvent& e : report.history.events()) {
    if (e.kind != EventKind::renewal) continue;
    ++renewals;
    CHECK(e.client == 0);
    CHECK_FALSE(e.value.empty());
    CHECK(e.end_us > e.time_us);
    CHECK(e.local_valid_until_us > e.local_now_us);
  }
  CHECK(renewals > 0);
  for (const ReportedViolation& rv : report.violations) {
    CHECK(rv.violation.invariant != Invariant::validity_within_lease);
  }
}

}  // namespace
}  // namespace lockstep
