// The engine that runs every scenario spec (harness/spec_engine.h), end to end in the simulator:
// what each piece of a spec's data makes happen, seen in the history alone.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "harness/spec_engine.h"
#include "run/runner.h"

namespace lockstep {
namespace {

// A scenario whose spec is `spec`, for every lease lock, in the simulator (and the real world,
// where `real` says).
Scenario spec_scenario(ScenarioSpec spec, bool real = false) {
  std::vector<WorldKind> worlds = {WorldKind::sim};
  if (real) worlds.push_back(WorldKind::real);
  return {.name = "test-spec",
          .description = "a spec under test",
          .worlds = worlds,
          .expected = [](const AdapterTraits&, const Options&, bool) { return Expectation{}; },
          .spec = [spec](const Options&, const AdapterEntry&, WorldKind) { return spec; }};
}

RunReport run_spec_scenario(ScenarioSpec spec, const std::string& adapter = "memory") {
  return run_scenario(spec_scenario(std::move(spec)), {.adapter = adapter});
}

std::vector<HistoryEvent> events_of(const RunReport& r, int client, EventKind kind) {
  std::vector<HistoryEvent> out;
  for (const HistoryEvent& e : r.history.events()) {
    if (e.client == client && e.kind == kind) out.push_back(e);
  }
  return out;
}

std::vector<HistoryEvent> completions(const RunReport& r, int client, Op op) {
  std::vector<HistoryEvent> out;
  for (const HistoryEvent& e : events_of(r, client, EventKind::complete)) {
    if (e.op == op) out.push_back(e);
  }
  return out;
}

const HistoryEvent* fault_named(const RunReport& r, const std::string& what) {
  for (const HistoryEvent& e : r.history.events()) {
    if (e.kind == EventKind::fault && e.detail == what) return &e;
  }
  return nullptr;
}

// A holds `resource` from 0 for hold_ms.
int a_holds(ScenarioSpec& spec, int64_t hold_ms) {
  const int a = spec.add_client("a");
  spec.start(a, 0, take_work_release_steps(1000, hold_ms, std::nullopt));
  return a;
}

}  // namespace

TEST_CASE("a refused acquire ends the program, or lets it go on without the lock's steps",
          "[spec][engine]") {
  for (const bool end_if_refused : {true, false}) {
    ScenarioSpec spec;
    a_holds(spec, 300);
    SpecStep first = acquire_step(1000);  // one attempt, while A holds
    first.end_if_refused = end_if_refused;
    std::vector<SpecStep> b = {
        first,
        step(StepKind::increment, 10),
        step(StepKind::release),
        acquire_step(1000, RetrySettings{.retry_delay_ms = 50, .retry_times = 20}),
        step(StepKind::increment, 10),
        step(StepKind::release)};
    spec.start(spec.add_client("b"), 10, b);
    const RunReport r = run_spec_scenario(spec);
    INFO("end_if_refused " << end_if_refused);
    const std::vector<HistoryEvent> acquires = completions(r, 1, Op::acquire);
    REQUIRE_FALSE(acquires.empty());
    CHECK(acquires[0].outcome != Outcome::ok);
    if (end_if_refused) {
      CHECK(acquires.size() == 1);
      CHECK(completions(r, 1, Op::release).empty());
    } else {
      // Its increment and release skipped; the second acquire got the key once A let it go.
      REQUIRE(acquires.size() == 2);
      CHECK(acquires[1].outcome == Outcome::ok);
      CHECK(completions(r, 1, Op::release).size() == 1);
      CHECK(events_of(r, 1, EventKind::cs_enter).size() == 1);
    }
  }
}

TEST_CASE("a program repeats its steps", "[spec][engine]") {
  ScenarioSpec spec;
  spec.start(spec.add_client("a"), 0, take_work_release_steps(1000, 5, std::nullopt), 0, 3);
  const RunReport r = run_spec_scenario(spec);
  CHECK(completions(r, 0, Op::acquire).size() == 3);
  CHECK(completions(r, 0, Op::release).size() == 3);
}

TEST_CASE("an anchored fault and start wait for the step, and for nothing that never came",
          "[spec][engine]") {
  for (const bool a_gets_in : {true, false}) {
    ScenarioSpec spec;
    if (!a_gets_in) a_holds(spec, 500);  // then A's one attempt is refused and its program ends
    const int a = spec.add_client("a2");
    spec.start(a, 10, take_work_release_steps(1000, 100, std::nullopt));
    spec.strike({.action = SpecAction::none, .at_us = 5000, .what = "anchored"});
    spec.anchor_last(a, 0);
    spec.start(spec.add_client("b"), 50, take_work_release_steps(1000, 1, std::nullopt));
    spec.anchor_last(a, 0);
    const RunReport r = run_spec_scenario(spec);
    INFO("a gets in " << a_gets_in);
    const std::vector<HistoryEvent> a_acquires = completions(r, a, Op::acquire);
    REQUIRE(a_acquires.size() == 1);
    const HistoryEvent* anchored = fault_named(r, "anchored");
    const std::vector<HistoryEvent> b_invokes = events_of(r, a + 1, EventKind::invoke);
    if (!a_gets_in) {
      CHECK(a_acquires[0].outcome != Outcome::ok);
      CHECK(anchored == nullptr);
      CHECK(b_invokes.empty());
      continue;
    }
    const TimeUs granted_us = a_acquires[0].time_us;
    REQUIRE(anchored != nullptr);
    CHECK(anchored->time_us == granted_us + 5000);
    REQUIRE_FALSE(b_invokes.empty());
    // B starts at the anchor's millisecond plus 50 (no jitter): within a millisecond of it.
    CHECK(b_invokes[0].time_us >= granted_us + 49'000);
    CHECK(b_invokes[0].time_us <= granted_us + 50'000);
  }
}

TEST_CASE("a fault timed from a client's grant strikes that long after the server granted",
          "[spec][engine]") {
  ScenarioSpec spec;
  const int a = a_holds(spec, 50);
  spec.strike({.action = SpecAction::none, .at_us = 700, .after_grant_of = a, .what = "granted"});
  const RunReport r = run_spec_scenario(spec, "redis");
  const std::vector<HistoryEvent> grants = events_of(r, a, EventKind::grant);
  REQUIRE_FALSE(grants.empty());
  const HistoryEvent* fault = fault_named(r, "granted");
  REQUIRE(fault != nullptr);
  CHECK(fault->time_us == grants[0].time_us + 700);
}

TEST_CASE("a fault's further actions strike with it, and an unrecorded one leaves no event",
          "[spec][engine]") {
  for (const bool then_pause : {true, false}) {
    ScenarioSpec spec;
    const int a = a_holds(spec, 50);
    SpecFault heal{.action = SpecAction::none, .at_us = 10'000, .what = "several"};
    if (then_pause) {
      heal.then.push_back({.action = SpecAction::pause_client, .client = a, .amount = 100'000});
    }
    spec.strike(heal);
    spec.strike({.action = SpecAction::none, .at_us = 20'000, .what = "silent", .recorded = false});
    const RunReport r = run_spec_scenario(spec);
    INFO("then pause " << then_pause);
    CHECK(fault_named(r, "several") != nullptr);
    CHECK(fault_named(r, "silent") == nullptr);
    const std::vector<HistoryEvent> releases = completions(r, a, Op::release);
    REQUIRE(releases.size() == 1);
    // A's 50 ms of work, stopped from 10 ms to 110 ms by the pause that struck with the fault.
    if (then_pause) {
      CHECK(releases[0].time_us >= 110'000);
    } else {
      CHECK(releases[0].time_us < 100'000);
    }
  }
}

TEST_CASE("a paired restart brings its server back only if no later crash took it down",
          "[spec][engine]") {
  for (const bool paired : {true, false}) {
    ScenarioSpec spec;
    auto crash = [&](int64_t at_ms, int pair) {
      spec.strike({.action = SpecAction::crash_server,
                   .at_us = at_ms * 1000,
                   .server = 0,
                   .tag = {.kind = FaultKind::server_crash, .server = "0"},
                   .what = "crash",
                   .crash_pair = pair});
    };
    crash(10, paired ? 0 : -1);
    crash(20, paired ? 1 : -1);
    spec.strike({.action = SpecAction::restart_server,
                 .at_us = 30'000,
                 .server = 0,
                 .tag = {.kind = FaultKind::server_restart, .server = "0"},
                 .what = "restart of the first crash",
                 .crash_pair = paired ? 0 : -1});
    // Unpaired, the first restart brings the server back (a second one would restart a live
    // server); paired, the second crash's own restart does.
    if (paired) {
      spec.strike({.action = SpecAction::restart_server,
                   .at_us = 2'000'000,
                   .server = 0,
                   .tag = {.kind = FaultKind::server_restart, .server = "0"},
                   .what = "restart of the second crash",
                   .crash_pair = 1});
    }
    spec.start(spec.add_client("b"), 40, take_work_release_steps(1000, 1, std::nullopt));
    spec.start(spec.add_client("c"), 2100, take_work_release_steps(1000, 1, std::nullopt));
    const RunReport r = run_spec_scenario(spec, "redis");
    INFO("paired " << paired);
    const std::vector<HistoryEvent> b_acquires = completions(r, 0, Op::acquire);
    REQUIRE(b_acquires.size() == 1);
    // Paired, the server stays down until the second crash's restart: B's one attempt fails.
    CHECK((b_acquires[0].outcome == Outcome::ok) == !paired);
    const std::vector<HistoryEvent> c_acquires = completions(r, 1, Op::acquire);
    REQUIRE(c_acquires.size() == 1);
    CHECK(c_acquires[0].outcome == Outcome::ok);
  }
}

TEST_CASE("a spec that starts a client once the run is under way refuses the real world",
          "[spec][engine]") {
  ScenarioSpec spec;
  const int a = spec.add_client("a");
  spec.start(a, 0, take_work_release_steps(1000, 1, std::nullopt));
  spec.start(spec.add_client("b"), 0, take_work_release_steps(1000, 1, std::nullopt));
  spec.anchor_last(a, 0);
  CHECK_THROWS_WITH(run_scenario(spec_scenario(spec, /*real=*/true),
                                 {.adapter = "memory", .world = WorldKind::real}),
                    Catch::Contains("waits for a step of another"));
}

TEST_CASE("every catalogue scenario's spec is valid with its defaults, shown as JSON",
          "[spec][catalogue]") {
  for (const Scenario& scenario : scenarios()) {
    const AdapterEntry* fitting = nullptr;
    for (const AdapterEntry& adapter : adapters()) {
      if (scenario.applies_to(adapter) && scenario.runs_in(WorldKind::sim) &&
          std::find(adapter.worlds.begin(), adapter.worlds.end(), WorldKind::sim) !=
              adapter.worlds.end()) {
        fitting = &adapter;
        break;
      }
    }
    INFO(scenario.name);
    REQUIRE(fitting != nullptr);
    const ScenarioSpec spec = scenario_spec({.scenario = scenario.name, .adapter = fitting->name});
    CHECK(spec.client_count() >= 1);
    const nlohmann::ordered_json shown = to_json(spec);
    CHECK(shown["timeline"].size() == spec.entries.size());
  }
}

}  // namespace lockstep
