// Swarm sweeps: the generator's determinism, shrinking, replay of shrunk reports, shards and their
// merge, --faults validation, the progress line, and the command's exit codes.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "known_bad/known_bad.h"
#include "scenarios/explore/calibrate.h"
#include "scenarios/explore/replay.h"
#include "scenarios/explore/sweep.h"
#include "scenarios/report/report.h"
#include "tests/cli_support.h"

namespace lockstep {
namespace {

using lockstep::testing::CommandResult;

CommandResult lockstep_cli(const std::string& args) {
  return lockstep::testing::run_lockstep(args);
}

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("lockstep-sweep-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  return dir;
}

// The first violating seed of a known-bad adapter in [1, 1000].
SeedOutcome first_violation(const SweepConfig& config) {
  const SwarmCapabilities caps = swarm_capabilities(config.adapter);
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    SeedOutcome o = run_sweep_seed(config, caps, seed);
    if (o.violates()) return o;
  }
  FAIL("no violation within 1000 seeds");
  return {};
}

}  // namespace

TEST_CASE("the same seed draws the same spec and gives the same trace hash", "[sweep]") {
  for (const char* adapter : {"memory", "redis"}) {
    const SwarmCapabilities caps = swarm_capabilities(adapter);
    for (uint64_t seed : {1u, 7u, 42u}) {
      const SwarmSpec a = draw_swarm_spec(caps, seed);
      const SwarmSpec b = draw_swarm_spec(caps, seed);
      CHECK(to_json(a) == to_json(b));
      const SeedOutcome ra = run_swarm_spec(adapter, a, seed, true);
      const SeedOutcome rb = run_swarm_spec(adapter, b, seed, true);
      CHECK(ra.report.trace_hash == rb.report.trace_hash);
      CHECK(swarm_spec_from_json(to_json(a)).step_count() == a.step_count());
    }
    CHECK(to_json(draw_swarm_spec(caps, 1)) != to_json(draw_swarm_spec(caps, 2)));
  }
}

TEST_CASE("every drawn parameter is a param line at the start of the trace", "[sweep]") {
  const SwarmCapabilities caps = swarm_capabilities("redis");
  const SwarmSpec spec = draw_swarm_spec(caps, 3);
  const SeedOutcome o = run_swarm_spec("redis", spec, 3, true, /*keep_trace=*/true);
  for (const std::string& line : describe_params(spec)) {
    bool found = false;
    for (const std::string& t : o.report.trace)
      found |= t.find("param " + line) != std::string::npos;
    CHECK(found);
  }
}

TEST_CASE("careful clients: latency alone no longer excuses mutual exclusion", "[sweep][careful]") {
  SwarmSpec spec;
  spec.clients = {SwarmClient{.steps = {SwarmStep{}}}};
  spec.faults = {SwarmFault{.kind = FaultKind::latency, .duration_ms = 10, .amount = 50'000}};
  CHECK(tolerated_violations(spec).count(Invariant::mutual_exclusion) == 1);
  spec.careful = true;
  CHECK(tolerated_violations(spec).count(Invariant::mutual_exclusion) == 0);
  spec.faults.push_back(SwarmFault{.kind = FaultKind::pause, .duration_ms = 10});
  CHECK(tolerated_violations(spec).count(Invariant::mutual_exclusion) ==
        1);  // a paused holder cannot know

  // careful round-trips, and a spec saved before careful clients reads as not careful.
  nlohmann::json j = to_json(spec);
  CHECK(swarm_spec_from_json(j).careful);
  j.erase("careful");
  CHECK_FALSE(swarm_spec_from_json(j).careful);
}

TEST_CASE("careful seeds are drawn, without pauses or client clock faults", "[sweep][careful]") {
  const SwarmCapabilities caps = swarm_capabilities("redlock");
  int careful = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    const SwarmSpec spec = draw_swarm_spec(caps, seed);
    if (!spec.careful) continue;
    ++careful;
    CHECK_FALSE(spec.has_fault(FaultKind::pause));
    CHECK_FALSE(spec.has_fault(FaultKind::clock_drift));
    CHECK_FALSE(spec.has_fault(FaultKind::clock_jump));
  }
  CHECK(careful > 20);
  CHECK(careful < 80);
}

TEST_CASE("careful clients catch a Redlock that ignores the time spent acquiring",
          "[sweep][careful][shrink]") {
  register_known_bad_adapters();
  const auto dir = fresh_dir("no-elapsed");
  const SweepConfig config{.adapter = "bad-redlock-no-elapsed", .report_dir = dir.string()};
  const SeedOutcome original = first_violation(config);
  CHECK(original.spec.careful);
  CHECK(original.target() == "mutual_exclusion");
  const Counterexample cx = shrink_counterexample(config, original);
  CHECK(cx.shrunk_ops <= 20);
  REQUIRE_FALSE(cx.replay_file.empty());
  const ReplaySpec replay = read_replay_spec(cx.replay_file);
  CHECK(replay_run(replay).trace_hash == replay.trace_hash);
  // The production Redlock on the same spec keeps exclusion.
  CHECK_FALSE(run_swarm_spec("redlock", original.spec, original.seed, true).violates());
  std::filesystem::remove_all(dir);
}

TEST_CASE("a fault list restricts the kinds a spec draws", "[sweep]") {
  const SwarmCapabilities caps = swarm_capabilities("redis");
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    const SwarmSpec spec = draw_swarm_spec(caps, seed, {.faults = {FaultKind::partition}});
    for (FaultKind k : all_fault_kinds()) {
      if (k != FaultKind::partition) CHECK_FALSE(spec.has_fault(k));
    }
  }
  CHECK(parse_fault_list("pause,crash") ==
        std::vector<FaultKind>{FaultKind::pause, FaultKind::crash});
  CHECK_THROWS_WITH(parse_fault_list("pause,meteor"), Catch::Contains("valid kinds: pause, crash"));
}

TEST_CASE(
    "shrinking gives a smaller spec that still violates, and its replay file reproduces the hash",
    "[sweep][shrink]") {
  register_known_bad_adapters();
  const auto dir = fresh_dir("shrink");
  const SweepConfig config{.adapter = "bad-del-release", .report_dir = dir.string()};
  const SeedOutcome original = first_violation(config);
  const Counterexample cx = shrink_counterexample(config, original);
  CHECK(cx.invariant == original.target());
  CHECK(cx.shrunk_ops <= cx.ops);
  CHECK(cx.shrunk.step_count() + cx.shrunk.faults.size() <=
        original.spec.step_count() + original.spec.faults.size());
  CHECK(cx.shrunk_ops <= 20);
  const SeedOutcome again = run_swarm_spec(config.adapter, cx.shrunk, cx.seed, true);
  CHECK(again.violates());
  CHECK(again.target() == cx.invariant);

  REQUIRE_FALSE(cx.replay_file.empty());
  const ReplaySpec replay = read_replay_spec(cx.replay_file);
  REQUIRE_FALSE(replay.workload.is_null());
  CHECK(replay_run(replay).trace_hash == replay.trace_hash);
  CHECK(replay.trace_hash == cx.shrunk_trace_hash);
  std::filesystem::remove_all(dir);
}

TEST_CASE("shrink stops within its run budget and never grows a spec", "[shrink]") {
  const SwarmSpec spec = draw_swarm_spec(swarm_capabilities("memory"), 11);
  int calls = 0;
  const ShrinkResult r =
      shrink(spec, [&](const SwarmSpec&) { return ++calls % 2 == 0; }, {.runs_max = 30});
  CHECK(r.runs <= 30);
  CHECK(calls == r.runs);
  CHECK(r.spec.clients.size() <= spec.clients.size());
  for (const SwarmSpec& c : shrink_candidates(spec)) CHECK_NOTHROW(c.validate());
}

TEST_CASE("shards cover every seed exactly once and the merge adds them up", "[sweep][shard]") {
  for (int count = 1; count <= 5; ++count) {
    for (uint64_t seed = 10; seed < 60; ++seed) {
      int owners = 0;
      for (int i = 0; i < count; ++i) owners += seed_in_shard(seed, 10, i, count) ? 1 : 0;
      CHECK(owners == 1);
    }
  }
  SweepConfig config{
      .adapter = "memory", .first_seed = 5, .seeds = 30, .keep_going = true, .report_dir = ""};
  const SweepResult whole = run_sweep(config);
  std::vector<nlohmann::json> shards;
  int seeds = 0;
  for (int i = 0; i < 3; ++i) {
    config.shard_index = i;
    config.shard_count = 3;
    const SweepResult part = run_sweep(config);
    seeds += part.seeds_run;
    shards.push_back(to_json(part));
  }
  CHECK(seeds == 30);
  const nlohmann::json merged = merge_sweeps(shards);
  CHECK(merged.at("seeds_run") == whole.seeds_run);
  CHECK(merged.at("violating_seeds") == whole.violating_seeds);
  CHECK(merged.at("stats").at("ops") == whole.ops);
  CHECK(merged.at("tolerated") == to_json(whole).at("tolerated"));
  CHECK_THROWS_WITH(merge_sweeps({shards[0], shards[2]}), Catch::Contains("missing shards: 1/3"));
  CHECK_THROWS_WITH(merge_sweeps({shards[0], shards[0], shards[1], shards[2]}),
                    Catch::Contains("given twice"));
  CHECK(parse_shard("2/4") == std::pair<int, int>{2, 4});
  CHECK_THROWS_AS(parse_shard("4/4"), UsageError);
  CHECK_THROWS_AS(parse_shard("x"), UsageError);
}

TEST_CASE("median seeds and time to the first counterexample", "[calibrate]") {
  // Caught at 1 and 3 (0-based) of 4: starts 0..3 need 2, 1, 2, 1 seeds and 30, 20, 70, 40 us.
  const FirstCatch fc = median_first_catch({false, true, false, true}, {10, 20, 30, 40});
  REQUIRE(fc.median_seeds);
  CHECK(*fc.median_seeds == Approx(1.5));
  REQUIRE(fc.median_time_us);
  CHECK(*fc.median_time_us == Approx((30 + 40) / 2.0));
  CHECK_FALSE(median_first_catch({false, false, false}, {1, 1, 1}).median_seeds);
}

TEST_CASE("calibrate judges the median time only when asked to", "[calibrate]") {
  // A row that is caught and shrinks small, but slowly (on a busy machine, say).
  CalibrationRow slow{.caught = 3, .median_time_us = 5e6};
  slow.first = Counterexample{.shrunk_ops = 4};
  CalibrateConfig by_hand;
  CHECK_FALSE(slow.meets_targets(by_hand));
  CalibrateConfig ci{.judge_time = false};  // ctest: what does not depend on speed
  CHECK(slow.meets_targets(ci));
  slow.first->shrunk_ops = ci.target_shrunk_ops + 1;
  CHECK_FALSE(slow.meets_targets(ci));  // the shrunk size is still judged
  CHECK(to_json(CalibrationResult{.config = ci})["targets"]["median_time_to_first_us"].is_null());
}

TEST_CASE("sweep exit codes: 0 no violation, 1 violation with a replay line, 2 bad usage",
          "[sweep][cli]") {
  const auto dir = fresh_dir("cli");
  const CommandResult ok = lockstep_cli("sweep --adapter memory --seeds 20");
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find("0 violating") != std::string::npos);

  const CommandResult bad = lockstep_cli(
      "sweep --adapter bad-memory-no-owner-check --seeds 1000 --report " + dir.string());
  CHECK(bad.exit_code == 1);
  const size_t at = bad.out.find("replay: lockstep replay ");
  REQUIRE(at != std::string::npos);
  const std::string file = bad.out.substr(at + 24, bad.out.find('\n', at) - at - 24);
  const CommandResult replay = lockstep_cli("replay " + file);
  CHECK(replay.err.find("reproduced") != std::string::npos);
  CHECK(replay.err.find("NOT reproduced") == std::string::npos);

  const CommandResult faults = lockstep_cli("sweep --adapter memory --faults pause,meteor");
  CHECK(faults.exit_code == 2);
  CHECK(faults.err.find("valid kinds: pause, crash") != std::string::npos);
  CHECK(lockstep_cli("sweep --adapter nosuch").exit_code == 2);
  CHECK(lockstep_cli("sweep --adapter memory --shard 3/3").exit_code == 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("no progress line when stderr is not a terminal", "[sweep][cli]") {
  const CommandResult r = lockstep_cli("sweep --adapter memory --seeds 50");
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("seeds/s") == std::string::npos);
  CHECK(r.err.find('\r') == std::string::npos);
}

TEST_CASE("sweep-merge of shard reports written by the command", "[sweep][cli]") {
  const auto dir = fresh_dir("merge");
  for (int i = 0; i < 2; ++i) {
    const CommandResult r = lockstep_cli("sweep --adapter memory --seeds 20 --shard " +
                                         std::to_string(i) + "/2 --report " + dir.string());
    REQUIRE(r.exit_code == 0);
  }
  const CommandResult merged = lockstep_cli("sweep-merge " + dir.string() + " --json");
  REQUIRE(merged.exit_code == 0);
  CHECK(nlohmann::json::parse(merged.out).at("seeds_run") == 20);
  std::filesystem::remove(dir / "sweep.memory.seeds1-20.shard1of2.json");
  CHECK(lockstep_cli("sweep-merge " + dir.string()).exit_code == 2);
  std::filesystem::remove_all(dir);
}

}  // namespace lockstep
