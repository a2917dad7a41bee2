#include "explore/calibrate.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include <fmt/format.h>

#include "checkers/checkers.h"
#include "explore/worker_pool.h"
#include "lockstep/registry.h"
#include "services/keep_warm.h"

namespace lockstep {

namespace {

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  const double m = values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
  if (m == std::numeric_limits<double>::infinity()) return std::nullopt;
  return m;
}

std::string maybe(const std::optional<double>& v, const char* format_spec_unused, double scale,
                  const char* unit) {
  (void)format_spec_unused;
  return v ? fmt::format("{:.1f}{}", *v / scale, unit) : std::string("never");
}

}  // namespace

FirstCatch median_first_catch(const std::vector<bool>& caught,
                              const std::vector<int64_t>& wall_us) {
  const size_t n = caught.size();
  std::vector<double> seeds(n, std::numeric_limits<double>::infinity());
  std::vector<double> times(n, std::numeric_limits<double>::infinity());
  // Walk backwards: the next catch at or after each start, and the time spent up to it.
  std::optional<size_t> next;
  double time_to_next = 0;
  for (size_t k = n; k-- > 0;) {
    if (caught[k]) {
      next = k;
      time_to_next = 0;
    }
    time_to_next += static_cast<double>(wall_us[k]);
    if (next) {
      seeds[k] = static_cast<double>(*next - k + 1);
      times[k] = time_to_next;
    }
  }
  return {.median_seeds = median(seeds), .median_time_us = median(times)};
}

SeedCatch seed_catch(const SeedOutcome& outcome, const std::string& breaks) {
  const std::optional<Invariant> invariant = invariant_from_string(breaks);
  return {.any = outcome.violates(),
          .on_breaks = invariant.has_value() && outcome.untolerated.contains(*invariant)};
}

double CalibrationRow::share_on_breaks() const {
  return seeds_run > 0 ? static_cast<double>(caught_on_breaks) / seeds_run : 0.0;
}

double CalibrationRow::share_any() const {
  return seeds_run > 0 ? static_cast<double>(caught) / seeds_run : 0.0;
}

bool CalibrationRow::share_judged(const CalibrateConfig& config) const {
  return catch_share_min > 0 && config.seeds >= kShareSeedsMin && seeds_run == config.seeds;
}

bool CalibrationRow::share_met(const CalibrateConfig& config) const {
  return !share_judged(config) || share_on_breaks() >= catch_share_min;
}

bool CalibrationRow::meets_targets(const CalibrateConfig& config) const {
  const bool fast_enough =
      !config.judge_time ||
      (median_time_us && *median_time_us < static_cast<double>(config.target_median_us));
  return caught_on_breaks > 0 && share_met(config) && fast_enough && first &&
         first->shrunk_ops <= config.target_shrunk_ops;
}

bool CalibrationRow::judged(const CalibrateConfig& config) const {
  return seeds_run == config.seeds || (caught_on_breaks > 0 && first.has_value());
}

bool CalibrationResult::all_meet_targets() const {
  return std::all_of(rows.begin(), rows.end(),
                     [this](const CalibrationRow& r) { return r.meets_targets(config); });
}

std::string CalibrationResult::verdict() const {
  if (all_meet_targets()) return "ok";
  const bool missed = std::any_of(rows.begin(), rows.end(), [this](const CalibrationRow& r) {
    return r.judged(config) && !r.meets_targets(config);
  });
  return missed ? "missed" : "incomplete";
}

namespace {

int64_t wall_us_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

SweepConfig sweep_config(const CalibrateConfig& config, const std::string& adapter) {
  return {.adapter = adapter,
          .first_seed = config.first_seed,
          .seeds = config.seeds,
          .report_dir = config.report_dir};
}

// A shrunk counterexample crosses a worker's pipe as JSON, every field.
std::string encode(const Counterexample& cx) {
  return nlohmann::json{{"seed", cx.seed},
                        {"invariant", cx.invariant},
                        {"trace_hash", cx.trace_hash},
                        {"ops", cx.ops},
                        {"shrunk_ops", cx.shrunk_ops},
                        {"shrunk_trace_hash", cx.shrunk_trace_hash},
                        {"shrink_runs", cx.shrink_runs},
                        {"shrink_wall_us", cx.shrink_wall_us},
                        {"shrunk", to_json(cx.shrunk)},
                        {"replay_file", cx.replay_file}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);  // a path's bytes
}

Counterexample decode_counterexample(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  return {.seed = j.at("seed").get<uint64_t>(),
          .invariant = j.at("invariant").get<std::string>(),
          .trace_hash = j.at("trace_hash").get<std::string>(),
          .ops = j.at("ops").get<uint64_t>(),
          .shrunk_ops = j.at("shrunk_ops").get<uint64_t>(),
          .shrunk_trace_hash = j.at("shrunk_trace_hash").get<std::string>(),
          .shrink_runs = j.at("shrink_runs").get<int>(),
          .shrink_wall_us = j.at("shrink_wall_us").get<int64_t>(),
          .shrunk = swarm_spec_from_json(j.at("shrunk")),
          .replay_file = j.at("replay_file").get<std::string>()};
}

}  // namespace

CalibrationResult run_calibration(const CalibrateConfig& config) {
  CalibrationResult result{.config = config};
  const StopClock clock(config.stop);
  const KeepBackendsWarm warm;  // co-simulated drivers serve run after run (keep_warm.h)
  std::vector<const AdapterEntry*> chosen;
  for (const AdapterEntry& entry : adapters()) {
    if (!entry.known_bad ||
        std::find(entry.worlds.begin(), entry.worlds.end(), WorldKind::sim) == entry.worlds.end())
      continue;
    if (!config.adapters.empty() && std::find(config.adapters.begin(), config.adapters.end(),
                                              entry.name) == config.adapters.end()) {
      continue;
    }
    chosen.push_back(&entry);
    result.rows.push_back(
        {.adapter = entry.name, .breaks = entry.breaks, .catch_share_min = entry.catch_share_min});
  }
  std::vector<SwarmCapabilities> caps;
  for (const AdapterEntry* entry : chosen) caps.push_back(swarm_capabilities(entry->name));
  // Every (adapter, seed) in one pool, so a short list of adapters still fills the workers: item
  // k is adapter k % adapters, seed first_seed + k / adapters, so each adapter's seeds are taken
  // in order and a stop leaves every adapter a share. A worker sends whether the seed caught the
  // adapter (at all, and on the invariant it is meant to break) and how long its run took.
  const size_t per_row = static_cast<size_t>(config.seeds);
  const size_t row_count = chosen.size();
  std::vector<std::vector<bool>> caught(chosen.size());
  std::vector<std::vector<bool>> on_breaks(chosen.size());
  std::vector<std::vector<int64_t>> wall_us(chosen.size());
  run_in_order(
      row_count * per_row, config.jobs,
      [&](size_t k) {
        const size_t row = k % row_count;
        const auto start = std::chrono::steady_clock::now();
        const SeedOutcome o =
            run_sweep_seed(sweep_config(config, chosen[row]->name), caps[row],
                           config.first_seed + static_cast<uint64_t>(k / row_count), false);
        const SeedCatch c = seed_catch(o, chosen[row]->breaks);
        return nlohmann::json{
            {"caught", c.any}, {"on_breaks", c.on_breaks}, {"wall_us", wall_us_since(start)}}
            .dump();
      },
      [&](size_t k, const std::string& encoded) {
        const nlohmann::json j = nlohmann::json::parse(encoded);
        const size_t row = k % row_count;
        caught[row].push_back(j.at("caught").get<bool>());
        on_breaks[row].push_back(j.at("on_breaks").get<bool>());
        wall_us[row].push_back(j.at("wall_us").get<int64_t>());
        return true;
      },
      [&clock] { return clock.stop_seeds(); });
  size_t taken = 0;
  for (const std::vector<bool>& row : caught) taken += row.size();
  if (taken < row_count * per_row) result.stopped_by = clock.reason();
  for (size_t row = 0; row < chosen.size(); ++row) {
    CalibrationRow& r = result.rows[row];
    r.seeds_run = static_cast<int>(caught[row].size());
    r.caught = static_cast<int>(std::count(caught[row].begin(), caught[row].end(), true));
    r.caught_on_breaks =
        static_cast<int>(std::count(on_breaks[row].begin(), on_breaks[row].end(), true));
    const FirstCatch fc = median_first_catch(caught[row], wall_us[row]);
    r.median_seeds = fc.median_seeds;
    r.median_time_us = fc.median_time_us;
    for (int64_t us : wall_us[row]) r.wall_time_us += us;
  }
  // Then each caught adapter's first counterexample is run again (a pure function of its seed)
  // and shrunk, one adapter per item: the first seed caught on `breaks`, else the first caught.
  run_in_order(
      chosen.size(), config.jobs,
      [&](size_t row) -> std::string {
        auto first = std::find(on_breaks[row].begin(), on_breaks[row].end(), true);
        size_t index = static_cast<size_t>(first - on_breaks[row].begin());
        if (first == on_breaks[row].end()) {
          const auto any = std::find(caught[row].begin(), caught[row].end(), true);
          if (any == caught[row].end()) return "";
          index = static_cast<size_t>(any - caught[row].begin());
        }
        const SweepConfig sweep = sweep_config(config, chosen[row]->name);
        const uint64_t seed = config.first_seed + static_cast<uint64_t>(index);
        return encode(shrink_counterexample(sweep, run_sweep_seed(sweep, caps[row], seed), &clock));
      },
      [&](size_t row, const std::string& encoded) {
        if (encoded.empty()) return true;
        Counterexample cx = decode_counterexample(encoded);
        // A signal that broke its final run left no hashed run: not a counterexample to show.
        if (cx.shrunk_trace_hash.empty()) return true;
        result.rows[row].first = std::move(cx);
        result.rows[row].wall_time_us += result.rows[row].first->shrink_wall_us;
        return true;
      },
      [&clock] { return clock.signal() != 0; });
  return result;
}

namespace {

// "met", "missed", or "not judged" (too few seeds, or a range cut short): the share target alone.
std::string share_verdict(const CalibrationRow& r, const CalibrateConfig& config) {
  if (!r.share_judged(config)) return "not judged";
  return r.share_met(config) ? "met" : "missed";
}

}  // namespace

nlohmann::json to_json(const CalibrationResult& result) {
  nlohmann::json rows = nlohmann::json::array();
  for (const CalibrationRow& r : result.rows) {
    nlohmann::json row = {
        {"adapter", r.adapter},
        {"breaks", r.breaks},
        {"seeds_run", r.seeds_run},
        {"caught", r.caught},
        {"caught_on_breaks", r.caught_on_breaks},
        {"detection_rate", r.share_any()},
        {"share_on_breaks", r.share_on_breaks()},
        {"catch_share_min", r.catch_share_min},
        {"share", share_verdict(r, result.config)},
        {"median_seeds_to_first", r.median_seeds ? nlohmann::json(*r.median_seeds) : nullptr},
        {"median_time_to_first_us", r.median_time_us ? nlohmann::json(*r.median_time_us) : nullptr},
        {"wall_time_us", r.wall_time_us},
        {"meets_targets", r.meets_targets(result.config)},
        {"judged", r.judged(result.config)}};
    if (r.first) {
      row["first_counterexample"] = {{"seed", r.first->seed},
                                     {"invariant", r.first->invariant},
                                     {"ops", r.first->ops},
                                     {"shrunk_ops", r.first->shrunk_ops},
                                     {"shrink_runs", r.first->shrink_runs},
                                     {"replay_file", r.first->replay_file}};
    }
    rows.push_back(std::move(row));
  }
  return {{"kind", "calibration"},
          {"verdict", result.verdict()},
          {"stopped_by", result.stopped_by},
          {"time_budget_s",
           result.config.stop.time_budget_us > 0
               ? nlohmann::json(static_cast<double>(result.config.stop.time_budget_us) / 1e6)
               : nlohmann::json()},
          {"first_seed", result.config.first_seed},
          {"seeds", result.config.seeds},
          {"targets",
           {{"median_time_to_first_us",
             result.config.judge_time ? nlohmann::json(result.config.target_median_us) : nullptr},
            {"shrunk_ops", result.config.target_shrunk_ops},
            {"share_seeds_min", kShareSeedsMin}}},
          {"adapters", rows}};
}

std::string to_text(const CalibrationResult& result) {
  const CalibrateConfig& config = result.config;
  const std::string time_target =
      config.judge_time
          ? fmt::format("median time < {:.1f}s", static_cast<double>(config.target_median_us) / 1e6)
          : std::string("median time not judged");
  std::string out = fmt::format(
      "calibration over seeds {}..{} (targets: caught on its invariant in at least its target "
      "share of seeds, {}, shrunk <= {} ops)\n",
      config.first_seed, config.first_seed + static_cast<uint64_t>(config.seeds) - 1, time_target,
      config.target_shrunk_ops);
  if (config.seeds < kShareSeedsMin) {
    out += fmt::format(
        "  shares not judged under {} seeds: only caught on its invariant at least once\n",
        kShareSeedsMin);
  }
  if (result.stopped_by == "time") {
    out += fmt::format(
        "  stopped at its time budget ({}s): adapters cut short before a catch are "
        "not judged, and no share is\n",
        static_cast<double>(config.stop.time_budget_us) / 1e6);
  } else if (!result.stopped_by.empty()) {
    out += fmt::format(
        "  interrupted by {}: a partial report; adapters cut short before a catch "
        "are not judged, and no share is\n",
        result.stopped_by);
  }
  out += fmt::format("  {:<28} {:<18} {:>7} {:>7} {:>7} {:<10} {:>9} {:>9} {:>7} {:>6}  {}\n",
                     "adapter", "breaks", "on it", "any", "target", "share", "med.seeds",
                     "med.time", "shrunk", "orig", "verdict");
  for (const CalibrationRow& r : result.rows) {
    out += fmt::format(
        "  {:<28} {:<18} {:>6.1f}% {:>6.1f}% {:>6.1f}% {:<10} {:>9} {:>9} {:>7} {:>6}  {}\n",
        r.adapter, r.breaks, 100.0 * r.share_on_breaks(), 100.0 * r.share_any(),
        100.0 * r.catch_share_min, share_verdict(r, config), maybe(r.median_seeds, "", 1, ""),
        maybe(r.median_time_us, "", 1000, "ms"),
        r.first ? fmt::format("{} ops", r.first->shrunk_ops) : "-",
        r.first ? fmt::format("{}", r.first->ops) : "-",
        r.meets_targets(config) ? "ok"
        : r.judged(config)      ? "MISSED"
                                : "not judged");
    if (r.first && r.first->invariant != r.breaks) {
      out += fmt::format("      its counterexample (seed {}) breaks {}, not {}\n", r.first->seed,
                         r.first->invariant, r.breaks);
    }
    if (r.first && !r.first->replay_file.empty())
      out += fmt::format("      replay: {}\n", replay_file_command(r.first->replay_file));
  }
  return out;
}

}  // namespace lockstep
