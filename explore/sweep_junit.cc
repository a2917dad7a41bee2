#include "explore/sweep_junit.h"

#include <fmt/format.h>

#include "report/report.h"

namespace lockstep {

namespace {

std::string stop_text(const std::string& stopped_by, int64_t budget_us) {
  if (stopped_by == "time")
    return fmt::format("stopped at its time budget ({}s)", static_cast<double>(budget_us) / 1e6);
  if (stopped_by == "violation") return "stopped at the first violating seed";
  if (!stopped_by.empty()) return fmt::format("interrupted by {}: a partial report", stopped_by);
  return "every seed ran";
}

std::string replay_line(const Counterexample& cx) {
  return cx.replay_file.empty() ? std::string("(no replay file saved)")
                                : replay_file_command(cx.replay_file);
}

}  // namespace

std::vector<JUnitCase> junit_cases(const SweepResult& r) {
  const SweepConfig& c = r.config;
  const std::string classname = "sweep " + c.adapter;
  std::string name =
      fmt::format("seeds{}-{}/{}", c.first_seed, c.first_seed + static_cast<uint64_t>(c.seeds) - 1,
                  fencing_name(c.fencing_on));
  if (c.shard_count > 1) name += fmt::format("/shard{}of{}", c.shard_index, c.shard_count);
  const std::string ran =
      fmt::format("{} of {} seeds run, {} violating; {}", r.seeds_run, r.seeds_in_shard,
                  r.violating_seeds, stop_text(r.stopped_by, c.stop.time_budget_us));
  JUnitCase summary{.name = name,
                    .classname = classname,
                    .passed = r.ok(),
                    .time_s = static_cast<double>(r.wall_time_us) / 1e6,
                    .system_out = ran + "\n"};
  if (!r.ok()) {
    std::string invariants;
    for (const auto& [invariant, seeds] : r.violations)
      invariants +=
          fmt::format("{}{} ({} seeds)", invariants.empty() ? "" : ", ", invariant, seeds);
    summary.failure_message = fmt::format("{} violating seeds: {}", r.violating_seeds, invariants);
    summary.failure_text = to_text(r);
  } else if (r.stopped_by != "" && r.stopped_by != "time" && r.stopped_by != "violation") {
    summary.skipped = true;  // a signal: nothing found, but not every seed was judged either
    summary.skipped_message = ran;
  }
  std::vector<JUnitCase> cases = {summary};
  for (const Counterexample& cx : r.counterexamples) {
    JUnitCase k{.name = fmt::format("seed{}/{}", cx.seed, cx.invariant),
                .classname = classname,
                .passed = false,
                .time_s = static_cast<double>(cx.shrink_wall_us) / 1e6};
    k.failure_message = fmt::format("seed {} breaks {}: {} ops, shrunk to {} ops", cx.seed,
                                    cx.invariant, cx.ops, cx.shrunk_ops);
    k.failure_text = fmt::format("{}\nreplay: {}\n", k.failure_message, replay_line(cx));
    cases.push_back(std::move(k));
  }
  return cases;
}

std::vector<JUnitCase> junit_cases(const CalibrationResult& result) {
  const CalibrateConfig& config = result.config;
  std::vector<JUnitCase> cases;
  for (const CalibrationRow& r : result.rows) {
    JUnitCase c{.name = r.adapter,
                .classname = "calibrate",
                .passed = r.meets_targets(config),
                .time_s = static_cast<double>(r.wall_time_us) / 1e6};
    const std::string seen = fmt::format(
        "{} of {} seeds run, {} caught on {} (target {:.1f}%), {} on any invariant; median seeds "
        "to the first {}; first counterexample {}",
        r.seeds_run, config.seeds, r.caught_on_breaks, r.breaks, 100.0 * r.catch_share_min,
        r.caught, r.median_seeds ? fmt::format("{:.1f}", *r.median_seeds) : std::string("never"),
        r.first ? fmt::format("{} ops shrunk to {}", r.first->ops, r.first->shrunk_ops)
                : std::string("none"));
    c.system_out = seen + "\n";
    if (c.passed) {
      cases.push_back(std::move(c));
      continue;
    }
    if (!r.judged(config)) {
      c.skipped = true;
      c.skipped_message = fmt::format(
          "not judged: {} ({})", stop_text(result.stopped_by, config.stop.time_budget_us), seen);
      cases.push_back(std::move(c));
      continue;
    }
    std::string missed;
    if (r.caught_on_breaks == 0) {
      missed = r.caught == 0 ? "never caught" : fmt::format("never caught on {}", r.breaks);
    } else if (!r.share_met(config)) {
      missed = fmt::format("caught on {} in {:.1f}% of seeds, under its {:.1f}%", r.breaks,
                           100.0 * r.share_on_breaks(), 100.0 * r.catch_share_min);
    }
    if (r.first && r.first->shrunk_ops > config.target_shrunk_ops) {
      missed += fmt::format("{}shrunk to {} ops, more than {}", missed.empty() ? "" : "; ",
                            r.first->shrunk_ops, config.target_shrunk_ops);
    }
    if (config.judge_time && r.caught_on_breaks > 0 &&
        !(r.median_time_us && *r.median_time_us < static_cast<double>(config.target_median_us))) {
      missed += fmt::format("{}median time to the first catch not under {:.1f}s",
                            missed.empty() ? "" : "; ",
                            static_cast<double>(config.target_median_us) / 1e6);
    }
    if (missed.empty()) missed = "caught, but no counterexample was shrunk";
    c.failure_message = fmt::format("{} (breaks {}): {}", r.adapter, r.breaks, missed);
    c.failure_text = c.failure_message + "\n" + seen + "\n";
    if (r.first && !r.first->replay_file.empty())
      c.failure_text += fmt::format("replay: {}\n", replay_line(*r.first));
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace lockstep
