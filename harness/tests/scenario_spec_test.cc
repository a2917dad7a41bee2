// A scenario spec's own rules (harness/scenario_spec.h): what validate() refuses, naming why, and
// the JSON a spec is shown as.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "harness/scenario_spec.h"

namespace lockstep {
namespace {

ScenarioSpec two_clients() {
  ScenarioSpec spec;
  const int a = spec.add_client("a");
  spec.start(a, 0, take_work_release_steps(1000, 10, std::nullopt));
  spec.start(spec.add_client("b"), 20, take_work_release_steps(1000, 10, std::nullopt), 200);
  return spec;
}

}  // namespace

TEST_CASE("a spec of added, started and struck clients is valid", "[spec]") {
  ScenarioSpec spec = two_clients();
  spec.strike(pause_client_fault(0, 5000, 100'000, "pause a"));
  spec.strike(partition_fault(1, 30, 100, true, "cut b"));
  spec.strike(heal_fault(130, "heal"));
  CHECK_NOTHROW(spec.validate());
  CHECK(spec.client_count() == 2);
}

TEST_CASE("validate() refuses what the engine could not run, naming it", "[spec]") {
  SECTION("a program of a client not added yet") {
    ScenarioSpec spec;
    spec.start(0, 0, {step(StepKind::sleep, 1)});
    CHECK_THROWS_WITH(spec.validate(), Catch::Contains("a program names client 0, of 0 added"));
  }
  SECTION("a fault on a client that does not exist") {
    ScenarioSpec spec = two_clients();
    spec.strike(pause_client_fault(2, 0, 1000, "pause nobody"));
    CHECK_THROWS_WITH(spec.validate(), Catch::Contains("a fault names client 2"));
  }
  SECTION("a fault on a client that names none") {
    ScenarioSpec spec = two_clients();
    spec.strike({.action = SpecAction::kill_client, .what = "kill whom?"});
    CHECK_THROWS_WITH(spec.validate(), Catch::Contains("a fault names client -1"));
  }
  SECTION("a fault on a server that names none") {
    ScenarioSpec spec = two_clients();
    spec.strike({.action = SpecAction::pause_server, .amount = 1000, .what = "pause which?"});
    CHECK_THROWS_WITH(spec.validate(), Catch::Contains("names its server"));
  }
  SECTION("an added client that waits for an anchor") {
    ScenarioSpec spec = two_clients();
    spec.add_client("c");
    spec.anchor_last(0, 0);
    CHECK_THROWS_WITH(spec.validate(), Catch::Contains("only a start or a fault waits"));
  }
  SECTION("a negative time") {
    ScenarioSpec spec = two_clients();
    spec.strike(heal_fault(-1, "heal before the start"));
    CHECK_THROWS_WITH(spec.validate(), Catch::Contains("not negative"));
  }
  SECTION("a step's negative duration") {
    ScenarioSpec spec = two_clients();
    spec.start(0, 0, {step(StepKind::sleep, -5)});
    CHECK_THROWS_WITH(spec.validate(), Catch::Contains("a step's times are not negative"));
  }
  SECTION("too many steps") {
    ScenarioSpec spec = two_clients();
    spec.start(0, 0, std::vector<SpecStep>(ScenarioSpec::kStepsMax + 1, step(StepKind::sleep, 1)));
    CHECK_THROWS_WITH(spec.validate(), Catch::Contains("at most 64 steps"));
  }
  SECTION("a repeat of none") {
    ScenarioSpec spec = two_clients();
    spec.start(0, 0, {step(StepKind::sleep, 1)}, 0, 0);
    CHECK_THROWS_WITH(spec.validate(), Catch::Contains("repeats 1 to"));
  }
  SECTION("a further action with further actions of its own") {
    ScenarioSpec spec = two_clients();
    SpecFault inner{.action = SpecAction::heal};
    inner.then.push_back({.action = SpecAction::heal});
    SpecFault outer{.action = SpecAction::none, .what = "nested"};
    outer.then.push_back(inner);
    spec.strike(outer);
    CHECK_THROWS_WITH(spec.validate(), Catch::Contains("none of their own"));
  }
}

TEST_CASE("a spec is shown as its timeline, in build order", "[spec]") {
  ScenarioSpec spec = two_clients();
  spec.strike(partition_fault(1, 30, 100, false, "cut b's replies"));
  spec.anchor_last(0, 1);
  spec.liveness_bound_us = 5000;
  const nlohmann::ordered_json j = to_json(spec);
  const nlohmann::ordered_json& timeline = j["timeline"];
  REQUIRE(timeline.size() == 5);
  CHECK(timeline[0]["add"] == "a");
  CHECK(timeline[1]["start"] == 0);
  CHECK(timeline[1]["steps"][0]["step"] == "acquire");
  CHECK(timeline[1]["steps"][0]["key"] == "resource");
  CHECK(timeline[1]["steps"][1]["step"] == "increment");
  CHECK(timeline[1]["steps"][1]["ms"] == 10);
  CHECK(timeline[3]["jitter_us"] == 200);
  CHECK(timeline[4]["fault"]["action"] == "partition-client");
  CHECK_FALSE(timeline[4]["fault"].contains("amount"));  // 0, one-way: a zero is not shown
  CHECK(timeline[4]["fault"]["duration_us"] == 100'000);
  CHECK(timeline[4]["after"]["client"] == 0);
  CHECK(timeline[4]["after"]["step"] == 1);
  CHECK(j["liveness_bound_us"] == 5000);
}

}  // namespace lockstep
