#include "explore/matrix.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/check.h"
#include "explore/worker_pool.h"
#include "services/keep_warm.h"
#include "services/registry.h"

namespace lockstep {

namespace {

bool chosen(const std::vector<std::string>& names, const std::string& name) {
  return names.empty() || std::find(names.begin(), names.end(), name) != names.end();
}

std::vector<const AdapterEntry*> selected_adapters(const MatrixConfig& config) {
  std::vector<const AdapterEntry*> out;
  for (const AdapterEntry& entry : adapters()) {
    const bool runs_here =
        std::find(entry.worlds.begin(), entry.worlds.end(), config.world) != entry.worlds.end();
    const bool named = std::find(config.adapters.begin(), config.adapters.end(), entry.name) !=
                       config.adapters.end();
    if (entry.needs_user_option && !named) continue;
    if (runs_here && chosen(config.adapters, entry.name)) out.push_back(&entry);
  }
  return out;
}

void check_names(const MatrixConfig& config) {
  for (const std::string& name : config.adapters) {
    if (find_adapter(name) == nullptr) {
      throw UsageError(
          fmt::format("unknown adapter \"{}\"; valid adapters: {}", name, adapter_names()));
    }
  }
  for (const std::string& name : config.scenarios) {
    if (find_scenario(name) == nullptr) {
      throw UsageError(
          fmt::format("unknown scenario \"{}\"; valid scenarios: {}", name, scenario_names()));
    }
  }
}

MatrixCell run_cell(const MatrixConfig& config, const Scenario& scenario,
                    const AdapterEntry& adapter, bool fencing_on) {
  MatrixCell cell{.scenario = scenario.name, .adapter = adapter.name, .fencing_on = fencing_on};
  for (int i = 0; i < config.seeds; ++i) {
    RunConfig run{.scenario = scenario.name,
                  .adapter = adapter.name,
                  .world = config.world,
                  .seed = config.first_seed + static_cast<uint64_t>(i),
                  .fencing_on = fencing_on,
                  .sets = config.sets,
                  .keep_trace = false,
                  .hash_trace = false};  // a cell reports verdicts and replay lines, no hash
    RunReport report;
    try {
      report = run_scenario(run);
    } catch (const WorldUnsupportedError& e) {
      cell.not_applicable = e.what();
      return cell;
    }
    cell.expected = report.expected;
    const Expectation observed = report.violated();
    cell.observed.insert(observed.begin(), observed.end());
    ++cell.seeds_run;
    cell.wall_time_us += report.stats.wall_time_us;
    if (report.end != RunEnd::complete) ++cell.error_runs;
    if (report.matches_expectation()) continue;
    if (!report.finding.empty()) {
      if (cell.finding.empty()) cell.first_finding = report.replay_command();
      cell.finding = report.finding;
      continue;
    }
    if (cell.matches) {
      cell.matches = false;
      cell.first_mismatch = report.replay_command();
    }
  }
  return cell;
}

std::vector<std::string> names_of(const Expectation& e) {
  std::vector<std::string> names;
  for (Invariant i : e) names.emplace_back(to_string(i));
  return names;
}

Expectation expectation_of(const nlohmann::json& names) {
  Expectation e;
  for (const auto& name : names) {
    const std::optional<Invariant> i = invariant_from_string(name.get<std::string>());
    LOCKSTEP_CHECK(i.has_value(), "a worker names invariants this build knows");
    e.insert(*i);
  }
  return e;
}

// A cell crosses a worker's pipe as JSON: every field, so the parent's cell is the worker's.
std::string encode(const MatrixCell& c) {
  return nlohmann::json{{"scenario", c.scenario},
                        {"adapter", c.adapter},
                        {"fencing_on", c.fencing_on},
                        {"expected", names_of(c.expected)},
                        {"observed", names_of(c.observed)},
                        {"matches", c.matches},
                        {"seeds_run", c.seeds_run},
                        {"first_mismatch", c.first_mismatch},
                        {"finding", c.finding},
                        {"first_finding", c.first_finding},
                        {"error_runs", c.error_runs},
                        {"wall_time_us", c.wall_time_us},
                        {"not_applicable", c.not_applicable}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);  // a driver's bytes
}

MatrixCell decode(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  return {.scenario = j.at("scenario").get<std::string>(),
          .adapter = j.at("adapter").get<std::string>(),
          .fencing_on = j.at("fencing_on").get<bool>(),
          .expected = expectation_of(j.at("expected")),
          .observed = expectation_of(j.at("observed")),
          .matches = j.at("matches").get<bool>(),
          .finding = j.at("finding").get<std::string>(),
          .first_finding = j.at("first_finding").get<std::string>(),
          .seeds_run = j.at("seeds_run").get<int>(),
          .first_mismatch = j.at("first_mismatch").get<std::string>(),
          .error_runs = j.at("error_runs").get<int>(),
          .wall_time_us = j.at("wall_time_us").get<int64_t>(),
          .not_applicable = j.at("not_applicable").get<std::string>()};
}

}  // namespace

std::string describe(const Expectation& e) {
  if (e.empty()) return "safe";
  std::vector<std::string> names;
  for (Invariant i : e) names.emplace_back(to_string(i));
  return fmt::format("violation: {}", fmt::join(names, ", "));
}

bool MatrixResult::all_match() const {
  return std::all_of(cells.begin(), cells.end(), [](const MatrixCell& c) { return c.matches; });
}

bool MatrixResult::only_errors_differ() const {
  return std::all_of(cells.begin(), cells.end(),
                     [](const MatrixCell& c) { return c.matches || c.error_runs > 0; });
}

MatrixResult run_matrix(const MatrixConfig& config,
                        const std::function<void(size_t, size_t)>& progress) {
  if (config.seeds < 1) throw UsageError("--seeds must be at least 1");
  check_names(config);
  const KeepBackendsWarm warm;  // co-simulated drivers serve run after run (keep_warm.h)
  std::vector<std::pair<const Scenario*, const AdapterEntry*>> plan;
  for (const Scenario& scenario : scenarios()) {
    if (!chosen(config.scenarios, scenario.name)) continue;
    for (const AdapterEntry* adapter : selected_adapters(config)) {
      if (scenario.judges_in_matrix(*adapter) && scenario.runs_in(config.world))
        plan.emplace_back(&scenario, adapter);
    }
  }
  MatrixResult result;
  // Cell i: plan[i / per_pair]; with both, fencing on when i is odd.
  const size_t per_pair = config.fencing == FencingChoice::both ? 2 : 1;
  const size_t total = plan.size() * per_pair;
  const auto cell = [&](size_t i) {
    const auto& [scenario, adapter] = plan[i / per_pair];
    const bool fencing_on = per_pair == 2 ? i % 2 == 1 : config.fencing == FencingChoice::on;
    return run_cell(config, *scenario, *adapter, fencing_on);
  };
  // A simulated cell is a pure function of its inputs, so it may run in any worker; real runs stay
  // one at a time, in this process.
  const int jobs = config.world == WorldKind::sim ? config.jobs : 1;
  run_in_order(
      total, jobs, [&](size_t i) { return encode(cell(i)); },
      [&](size_t, const std::string& encoded) {
        result.cells.push_back(decode(encoded));
        if (progress) progress(result.cells.size(), total);
        return true;
      });
  return result;
}

nlohmann::json to_json(const MatrixResult& result) {
  nlohmann::json cells = nlohmann::json::array();
  for (const MatrixCell& c : result.cells) {
    cells.push_back({{"scenario", c.scenario},
                     {"adapter", c.adapter},
                     {"fencing", c.fencing_on ? "on" : "off"},
                     {"expected", describe(c.expected)},
                     {"observed", describe(c.observed)},
                     {"matches", c.matches},
                     {"seeds", c.seeds_run},
                     {"first_mismatch", c.first_mismatch},
                     {"finding", c.finding},
                     {"first_finding", c.first_finding},
                     {"not_applicable", c.not_applicable}});
  }
  return {{"verdict", result.all_match() ? "ok" : "violation"}, {"cells", cells}};
}

std::string to_text(const MatrixResult& result) {
  std::string out = fmt::format("{:<22} {:<28} {:<8} {:<44} {}\n", "scenario", "adapter", "fencing",
                                "observed", "");
  for (const MatrixCell& c : result.cells) {
    if (!c.not_applicable.empty()) {
      out += fmt::format("{:<22} {:<28} {:<8} {:<44} {}\n", c.scenario, c.adapter,
                         c.fencing_on ? "on" : "off", "n/a", "(this world lacks the fault)");
      continue;
    }
    out += fmt::format("{:<22} {:<28} {:<8} {:<44} {}\n", c.scenario, c.adapter,
                       c.fencing_on ? "on" : "off", describe(c.observed),
                       !c.matches          ? "EXPECTED " + describe(c.expected)
                       : c.finding.empty() ? "as expected"
                                           : "FINDING (documented)");
    if (!c.matches) out += fmt::format("    replay: {}\n", c.first_mismatch);
    if (c.matches && !c.finding.empty()) {
      out += fmt::format("    {}; expected {}\n    replay: {}\n", c.finding, describe(c.expected),
                         c.first_finding);
    }
  }
  const size_t matched = static_cast<size_t>(std::count_if(
      result.cells.begin(), result.cells.end(), [](const MatrixCell& c) { return c.matches; }));
  const size_t not_applicable = static_cast<size_t>(
      std::count_if(result.cells.begin(), result.cells.end(),
                    [](const MatrixCell& c) { return !c.not_applicable.empty(); }));
  const size_t findings = static_cast<size_t>(
      std::count_if(result.cells.begin(), result.cells.end(),
                    [](const MatrixCell& c) { return c.matches && !c.finding.empty(); }));
  out += fmt::format("{} of {} cells as expected", matched - not_applicable,
                     result.cells.size() - not_applicable);
  if (findings > 0) out += fmt::format(" ({} of them documented findings)", findings);
  out += not_applicable > 0 ? fmt::format(" ({} not applicable in this world)\n", not_applicable)
                            : "\n";
  return out;
}

std::string to_markdown(const MatrixResult& result) {
  std::string out =
      "| scenario | adapter | fencing | observed | expected | matches "
      "|\n|---|---|---|---|---|---|\n";
  for (const MatrixCell& c : result.cells) {
    const bool applies = c.not_applicable.empty();
    out += fmt::format(
        "| {} | {} | {} | {} | {} | {} |\n", c.scenario, c.adapter, c.fencing_on ? "on" : "off",
        applies ? describe(c.observed) : "n/a", describe(c.expected),
        !applies            ? "n/a"
        : !c.matches        ? "**no**"
        : c.finding.empty() ? "yes"
                            : fmt::format("finding: {} (`{}`)", c.finding, c.first_finding));
  }
  return out;
}

}  // namespace lockstep
