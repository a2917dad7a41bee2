// Sweeps and calibrations cut short (explore/stop.h): by a time budget or a signal the command
// line caught. What ran is reported as a prefix of the whole run, and says why it stopped; JUnit
// cases say the same (explore/sweep_junit.h).
#include <catch2/catch.hpp>

#include <csignal>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "explore/calibrate.h"
#include "explore/shrink.h"
#include "explore/sweep.h"
#include "explore/sweep_junit.h"
#include "services/known_bad.h"

namespace lockstep {
namespace {

// A "signal" that arrives once the sweep has asked this many times (the sweep asks before each
// seed it takes): a stand-in for the command line's handler, with no process-wide state but this.
int g_asked = 0;
int g_arrives_after = 0;
int signal_after_some_seeds() { return ++g_asked > g_arrives_after ? SIGTERM : 0; }

TEST_CASE("a signal stops a sweep between seeds, and what ran is the whole sweep's prefix",
          "[sweep][stop]") {
  g_asked = 0;
  g_arrives_after = 40;
  SweepConfig config{.adapter = "memory", .seeds = 1000, .keep_going = true, .report_dir = ""};
  config.stop.signal_caught = &signal_after_some_seeds;
  const SweepResult cut = run_sweep(config);
  CHECK(cut.stopped_by == "SIGTERM");
  CHECK(cut.seeds_run > 0);
  CHECK(cut.seeds_run < 1000);
  const nlohmann::json j = to_json(cut);
  CHECK(j.at("stopped_by") == "SIGTERM");
  CHECK(to_text(cut).find("interrupted by SIGTERM after") != std::string::npos);

  // The seeds it ran are the first seeds_run of the sweep, judged as a sweep of that many judges
  // them: a cut changes nothing a seed's run does.
  const SweepResult prefix = run_sweep(
      {.adapter = "memory", .seeds = cut.seeds_run, .keep_going = true, .report_dir = ""});
  CHECK(prefix.stopped_by.empty());
  CHECK(prefix.ops == cut.ops);
  CHECK(prefix.events == cut.events);
  CHECK(to_json(prefix).at("tolerated") == j.at("tolerated"));

  // Its JUnit: not a pass (not every seed was judged), not a failure (nothing violated).
  const std::vector<JUnitCase> cases = junit_cases(cut);
  REQUIRE(cases.size() == 1);
  CHECK(cases[0].skipped);
  CHECK(cases[0].skipped_message.find("interrupted by SIGTERM") != std::string::npos);
}

TEST_CASE("a time budget stops a sweep and says so, a sweep within it says nothing",
          "[sweep][stop]") {
  SweepConfig config{
      .adapter = "memory", .seeds = 10'000'000, .keep_going = true, .report_dir = ""};
  config.stop.time_budget_us = 1000;  // 1 ms: far fewer than ten million seeds
  const SweepResult cut = run_sweep(config);
  CHECK(cut.stopped_by == "time");
  CHECK(cut.seeds_run < cut.seeds_in_shard);
  const nlohmann::json j = to_json(cut);
  CHECK(j.at("time_budget_s") == 0.001);
  CHECK(to_text(cut).find("stopped at its time budget (0.001s) after") != std::string::npos);
  const std::vector<JUnitCase> cases = junit_cases(cut);
  REQUIRE(cases.size() == 1);
  CHECK(cases[0].passed);
  CHECK_FALSE(cases[0].skipped);
  CHECK(cases[0].system_out.find("stopped at its time budget") != std::string::npos);

  config.seeds = 5;
  config.stop.time_budget_us = 3'600'000'000;  // an hour: five seeds finish long before
  const SweepResult whole = run_sweep(config);
  CHECK(whole.stopped_by.empty());
  CHECK(whole.seeds_run == 5);
  CHECK(to_text(whole).find("stopped") == std::string::npos);
}

TEST_CASE("a sweep that stops at its first violation says so, and JUnit fails with the replay",
          "[sweep][stop]") {
  register_known_bad_adapters();
  const SweepResult r =
      run_sweep({.adapter = "bad-memory-no-owner-check", .seeds = 1000, .report_dir = ""});
  REQUIRE_FALSE(r.ok());
  CHECK(r.stopped_by == "violation");
  const std::vector<JUnitCase> cases = junit_cases(r);
  REQUIRE(cases.size() == 2);  // the seeds run, and the one counterexample shrunk
  CHECK_FALSE(cases[0].passed);
  // Its stolen release shows as the second holder's overlap or as the removed lease.
  const std::string invariant = r.counterexamples[0].invariant;
  CHECK((invariant == "ownership" || invariant == "mutual_exclusion"));
  CHECK(cases[1].name == "seed" + std::to_string(r.counterexamples[0].seed) + "/" + invariant);
  CHECK_FALSE(cases[1].passed);
  CHECK(to_junit_xml("lockstep sweep", cases).find("failures=\"2\"") != std::string::npos);
}

TEST_CASE("shrinking told to stop keeps the smallest failing spec so far", "[shrink][stop]") {
  const SwarmSpec spec = draw_swarm_spec(swarm_capabilities("memory"), 11);
  int calls = 0;
  const ShrinkResult r = shrink(spec, [&](const SwarmSpec&) { return ++calls % 2 == 0; },
                                {.runs_max = 400, .stop = [&] { return calls >= 5; }});
  CHECK(r.cut_short);
  CHECK(r.runs == 5);
  CHECK(r.spec.clients.size() <= spec.clients.size());
  const ShrinkResult whole =
      shrink(spec, [](const SwarmSpec&) { return false; }, {.stop = [] { return false; }});
  CHECK_FALSE(whole.cut_short);
}

TEST_CASE("a calibration cut short judges only the adapters it caught", "[calibrate][stop]") {
  CalibrateConfig config{.seeds = 1000, .judge_time = false};
  CalibrationResult r{.config = config, .stopped_by = "time"};
  // Caught and shrunk before the budget ran out: judged on the seeds it ran.
  CalibrationRow caught{.adapter = "bad-a",
                        .breaks = "ownership",
                        .catch_share_min = 0.5,
                        .seeds_run = 40,
                        .caught = 2,
                        .caught_on_breaks = 2};
  caught.first = Counterexample{.seed = 7, .invariant = "ownership", .shrunk_ops = 4};
  // Not caught in the seeds it ran: neither met nor missed.
  const CalibrationRow cut{.adapter = "bad-b", .breaks = "liveness", .seeds_run = 40};
  r.rows = {caught, cut};
  CHECK(r.rows[0].judged(config));
  CHECK_FALSE(r.rows[0].share_judged(config));  // 2 of 40 is under 0.5, but the range was cut
  CHECK(r.rows[0].meets_targets(config));
  CHECK_FALSE(r.rows[1].judged(config));
  CHECK(r.verdict() == "incomplete");
  const nlohmann::json j = to_json(r);
  CHECK(j.at("verdict") == "incomplete");
  CHECK(j.at("stopped_by") == "time");
  CHECK(j.at("adapters").at(1).at("judged") == false);
  CHECK(to_text(r).find("not judged") != std::string::npos);
  const std::vector<JUnitCase> cases = junit_cases(r);
  REQUIRE(cases.size() == 2);
  CHECK(cases[0].passed);
  CHECK(cases[1].skipped);
  CHECK(cases[1].skipped_message.find("not judged") != std::string::npos);
  // A judged miss outweighs what was not judged.
  r.rows[0].first->shrunk_ops = config.target_shrunk_ops + 1;
  CHECK(r.verdict() == "missed");
  CHECK_FALSE(junit_cases(r)[0].passed);
  CHECK(junit_cases(r)[0].failure_message.find("shrunk to 21 ops") != std::string::npos);
  // Every seed ran and nothing caught it: judged, and missed.
  r.rows = {CalibrationRow{.adapter = "bad-b", .seeds_run = 1000}};
  CHECK(r.rows[0].judged(config));
  CHECK(r.verdict() == "missed");
}

TEST_CASE("run_calibration stops at its budget with every adapter's seeds cut short",
          "[calibrate][stop]") {
  register_known_bad_adapters();
  CalibrateConfig config{.adapters = {"bad-del-release", "bad-memory-no-owner-check"},
                         .seeds = 1'000'000,
                         .judge_time = false};
  config.stop.time_budget_us = 1000;  // 1 ms: nowhere near two million seeds
  const CalibrationResult r = run_calibration(config);
  CHECK(r.stopped_by == "time");
  REQUIRE(r.rows.size() == 2);
  for (const CalibrationRow& row : r.rows) CHECK(row.seeds_run < config.seeds);
  // Seeds are taken round-robin: neither adapter waits for the other's million.
  CHECK(std::abs(r.rows[0].seeds_run - r.rows[1].seeds_run) <= 1);
}

}  // namespace
}  // namespace lockstep
