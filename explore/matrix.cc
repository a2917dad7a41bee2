#include "explore/matrix.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/check.h"
#include "explore/worker_pool.h"
#include "lockstep/registry.h"
#include "report/report.h"
#include "services/keep_warm.h"

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
  const bool write_runs = !config.runs_dir.empty();
  // The run the cell's pages show (write_runs): its rank, 0 the first that differed, 1 the first
  // finding, 2 the first seed.
  std::optional<RunReport> shown;
  int shown_rank = 3;
  for (int i = 0; i < config.seeds; ++i) {
    // A cell reports verdicts and replay lines, no hash; the first seed keeps its trace when the
    // cell's run is written (it is the one shown unless a later seed differs).
    const bool keep = write_runs && i == 0;
    RunConfig run{.scenario = scenario.name,
                  .adapter = adapter.name,
                  .world = config.world,
                  .seed = config.first_seed + static_cast<uint64_t>(i),
                  .fencing_on = fencing_on,
                  .sets = config.sets,
                  .keep_trace = keep,
                  .hash_trace = keep};
    RunReport report;
    try {
      report = run_scenario(run);
    } catch (const WorldUnsupportedError& e) {
      cell.not_applicable = e.what();
      return cell;
    }
    if (write_runs) {
      const int rank = report.matches_expectation() ? 2 : report.finding.empty() ? 0 : 1;
      if (rank < shown_rank) {
        shown_rank = rank;
        if (keep) {
          shown = report;
        } else {  // the same run again, with its trace (a simulated run is a pure function)
          run.keep_trace = run.hash_trace = true;
          shown = run_scenario(run);
        }
      }
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
  if (shown) {
    try {
      cell.run_report = write_report(*shown, config.runs_dir).string();
    } catch (const std::runtime_error& e) {
      cell.run_report_error = e.what();  // the command's to report (exit 3), not a cell's verdict
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
                        {"not_applicable", c.not_applicable},
                        {"run_report", c.run_report},
                        {"run_report_error", c.run_report_error}}
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
          .not_applicable = j.at("not_applicable").get<std::string>(),
          .run_report = j.at("run_report").get<std::string>(),
          .run_report_error = j.at("run_report_error").get<std::string>()};
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
                     {"not_applicable", c.not_applicable},
                     {"run_report", c.run_report}});
  }
  return {{"verdict", result.all_match() ? "ok" : "violation"}, {"cells", cells}};
}

MatrixCounts count_cells(const MatrixResult& result) {
  MatrixCounts n{.cells = result.cells.size()};
  for (const MatrixCell& c : result.cells) {
    const std::string status = cell_status(c);
    if (status == "expected") ++n.as_expected;
    if (status == "finding") ++n.findings;
    if (status == "differs") ++n.differ;
    if (status == "na") ++n.not_applicable;
  }
  return n;
}

std::string counts_line(const MatrixCounts& n) {
  return fmt::format(
      "{} cells: {} as expected, {} documented finding{}, {} differ{}, {} not "
      "applicable",
      n.cells, n.as_expected, n.findings, n.findings == 1 ? "" : "s", n.differ,
      n.differ == 1 ? "s" : "", n.not_applicable);
}

std::string cell_status(const MatrixCell& c) {
  if (!c.not_applicable.empty()) return "na";
  if (!c.matches) return "differs";
  return c.finding.empty() ? "expected" : "finding";
}

std::pair<std::string, std::string> MatrixGrid::names(size_t row, size_t column) const {
  if (corner == "scenario") return {rows[row], columns[column]};
  return {columns[column], rows[row]};
}

std::vector<MatrixGrid> matrix_grids(const MatrixResult& result) {
  MatrixGrid locks{.title = "Lock adapters", .corner = "scenario"};
  MatrixGrid bad{.title = "Known-bad adapters (each must show its bug)",
                 .corner = "known-bad adapter"};
  const auto index = [](std::vector<std::string>& names, const std::string& name) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it != names.end()) return static_cast<size_t>(it - names.begin());
    names.push_back(name);
    return names.size() - 1;
  };
  for (const MatrixCell& c : result.cells) {
    const AdapterEntry* entry = find_adapter(c.adapter);
    if (entry != nullptr && entry->known_bad) {
      bad.at[{index(bad.rows, c.adapter), index(bad.columns, c.scenario)}].push_back(&c);
    } else {
      locks.at[{index(locks.rows, c.scenario), index(locks.columns, c.adapter)}].push_back(&c);
    }
  }
  std::vector<MatrixGrid> out;
  for (MatrixGrid* g : {&locks, &bad}) {
    if (!g->at.empty()) out.push_back(std::move(*g));
  }
  return out;
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
  const MatrixCounts n = count_cells(result);
  const size_t applicable = n.cells - n.not_applicable;
  out += fmt::format("{} of {} cells as expected", n.as_expected + n.findings, applicable);
  if (n.findings > 0) out += fmt::format(" ({} of them documented findings)", n.findings);
  out += n.not_applicable > 0
             ? fmt::format(" ({} not applicable in this world)\n", n.not_applicable)
             : "\n";
  return out;
}

namespace {

// One cell in a markdown grid: a mark per fencing cell, off then on.
std::string markdown_marks(const std::vector<const MatrixCell*>& cells) {
  std::string out;
  for (const MatrixCell* c : cells) {
    const std::string status = cell_status(*c);
    const char* mark = status == "expected"  ? "✓"
                       : status == "finding" ? "⚑"
                       : status == "differs" ? "**✗**"
                                             : "–";
    out += (out.empty() ? "" : " ") + std::string(mark);
  }
  return out;
}

std::string where(const MatrixCell& c) {
  return fmt::format("{} / {} / fencing {}", c.scenario, c.adapter, c.fencing_on ? "on" : "off");
}

// "[timeline](runs/NAME.html)" for a cell whose run was written, relative to the matrix's files.
std::string timeline_link(const MatrixCell& c) {
  if (c.run_report.empty()) return "";
  const std::filesystem::path json(c.run_report);
  return fmt::format(" ([timeline](runs/{}))", json.filename().replace_extension(".html").string());
}

}  // namespace

std::string to_markdown(const MatrixResult& result) {
  const MatrixCounts n = count_cells(result);
  std::string out = fmt::format("# lockstep matrix\n\n**{}.**\n\n", counts_line(n));
  out +=
      "✓ as expected · **✗** differs · ⚑ documented finding · – not applicable; two marks: fencing "
      "off, then on.\n\n";
  for (const MatrixGrid& g : matrix_grids(result)) {
    out += fmt::format("## {}\n\n| {} |", g.title, g.corner);
    for (const std::string& column : g.columns) out += fmt::format(" {} |", column);
    out += "\n|---|";
    for (size_t i = 0; i < g.columns.size(); ++i) out += "---|";
    out += "\n";
    for (size_t r = 0; r < g.rows.size(); ++r) {
      out += fmt::format("| {} |", g.rows[r]);
      for (size_t k = 0; k < g.columns.size(); ++k) {
        const auto it = g.at.find({r, k});
        out += fmt::format(" {} |", it == g.at.end() ? "–" : markdown_marks(it->second));
      }
      out += "\n";
    }
    out += "\n";
  }
  if (n.differ > 0) {
    out += "## Cells that differ\n\n";
    for (const MatrixCell& c : result.cells) {
      if (cell_status(c) != "differs") continue;
      out += fmt::format("- {}: observed {}, expected {}{}: `{}`\n", where(c), describe(c.observed),
                         describe(c.expected), timeline_link(c), c.first_mismatch);
    }
    out += "\n";
  }
  if (n.findings > 0) {
    out += "## Documented findings\n\n";
    for (const MatrixCell& c : result.cells) {
      if (cell_status(c) != "finding") continue;
      out += fmt::format("- {}: {}; observed {}, expected {}{}: `{}`\n", where(c), c.finding,
                         describe(c.observed), describe(c.expected), timeline_link(c),
                         c.first_finding);
    }
    out += "\n";
  }
  out +=
      "## Every cell\n\n| scenario | adapter | fencing | observed | expected | matches "
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
