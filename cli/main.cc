// The `lockstep` command. Its flags, JSON fields and exit codes are a contract (DESIGN.md):
//   0 every invariant held (matrix: every cell matched its expectation)
//   1 a violation (matrix: a cell differed; replay: the trace differed)
//   2 bad usage or input, with one line naming what was wrong and the valid choices
//   3 the environment lacks something, with what and how to get it
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "property_tests/known_bad.h"
#include "scenarios/backend.h"
#include "scenarios/matrix.h"
#include "scenarios/real/server_errors.h"
#include "scenarios/report.h"
#include "scenarios/runner.h"

namespace lockstep {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitViolation = 1;
constexpr int kExitUsage = 2;

struct RunFlags {
  std::string scenario;
  std::string adapter;
  std::string world = "sim";
  uint64_t seed = 1;
  std::string fencing = "off";
  std::vector<std::string> sets;
  std::string report_dir;
  bool json = false;
};

struct MatrixFlags {
  std::string world = "sim";
  int seeds = 1;
  uint64_t first_seed = 1;
  std::string report_dir;
  bool json = false;
};

struct ReplayFlags {
  std::string report;
  bool json = false;
};

nlohmann::json list_json() {
  nlohmann::json out = {{"adapters", nlohmann::json::array()}, {"scenarios", nlohmann::json::array()}};
  for (const AdapterEntry& a : adapters()) {
    nlohmann::json options = nlohmann::json::object();
    for (const OptionSpec& spec : a.options) options[spec.name] = spec.default_value;
    out["adapters"].push_back({{"name", a.name},
                               {"description", a.description},
                               {"worlds", a.worlds},
                               {"known_bad", a.known_bad},
                               {"options", options}});
  }
  for (const Scenario& s : scenarios()) {
    nlohmann::json options = nlohmann::json::object();
    for (const OptionSpec& spec : s.options) options[spec.name] = spec.default_value;
    out["scenarios"].push_back({{"name", s.name},
                                {"description", s.description},
                                {"options", options},
                                {"worlds", s.worlds},
                                {"adapters", s.adapters}});
  }
  return out;
}

int cmd_list(bool json) {
  if (json) {
    fmt::print("{}\n", list_json().dump(2));
    return kExitOk;
  }
  fmt::print("adapters:\n");
  for (const AdapterEntry& a : adapters()) {
    fmt::print("  {:<28} [{}] {}\n", a.name, fmt::join(a.worlds, ","), a.description);
    if (a.known_bad) continue;  // its options are its production sibling's
    for (const OptionSpec& spec : a.options) {
      fmt::print("  {:<28}   --set {}={}  ({})\n", "", spec.name, spec.default_value, spec.help);
    }
  }
  fmt::print("scenarios:\n");
  for (const Scenario& s : scenarios()) {
    fmt::print("  {:<22} [{}] {}\n", s.name, fmt::join(s.worlds, ","), s.description);
    for (const OptionSpec& spec : s.options) {
      fmt::print("  {:<22}   --set {}={}  ({})\n", "", spec.name, spec.default_value, spec.help);
    }
  }
  return kExitOk;
}

int print_run(const RunReport& report, bool json, const std::string& report_dir) {
  if (!report_dir.empty()) {
    const auto path = write_report(report, report_dir);
    fmt::print(stderr, "report: {}\n", path.string());
  }
  if (json) {
    fmt::print("{}\n", to_json(report).dump(2));
  } else {
    fmt::print("{}", to_text(report));
  }
  return report.ok() ? kExitOk : kExitViolation;
}

int cmd_run(const RunFlags& flags) {
  RunConfig config{.scenario = flags.scenario,
                   .adapter = flags.adapter,
                   .world = flags.world,
                   .seed = flags.seed,
                   .fencing_on = flags.fencing == "on",
                   .sets = flags.sets};
  return print_run(run_scenario(config), flags.json, flags.report_dir);
}

int cmd_replay(const ReplayFlags& flags) {
  const ReplaySpec spec = read_replay_spec(flags.report);
  const RunReport report = run_scenario(spec.config);
  const int code = print_run(report, flags.json, "");
  if (report.trace_hash != spec.trace_hash) {
    fmt::print(stderr, "replay: NOT reproduced: trace_hash {} differs from the report's {} (another build?)\n",
               report.trace_hash, spec.trace_hash);
    return kExitViolation;
  }
  fmt::print(stderr, "replay: reproduced: trace_hash {} matches the report\n", report.trace_hash);
  return code;
}

int cmd_matrix(const MatrixFlags& flags) {
  const bool show_progress = isatty(fileno(stderr)) != 0;
  MatrixResult result = run_matrix({.world = flags.world, .seeds = flags.seeds, .first_seed = flags.first_seed},
                                   [show_progress](size_t done, size_t total) {
                                     if (show_progress) fmt::print(stderr, "\rmatrix: {}/{} cells", done, total);
                                   });
  if (show_progress) fmt::print(stderr, "\n");
  if (!flags.report_dir.empty()) {
    std::filesystem::create_directories(flags.report_dir);
    std::ofstream(std::filesystem::path(flags.report_dir) / "matrix.md") << to_markdown(result);
    std::ofstream(std::filesystem::path(flags.report_dir) / "matrix.json") << to_json(result).dump(2) << "\n";
    fmt::print(stderr, "report: {}/matrix.md, matrix.json\n", flags.report_dir);
  }
  if (flags.json) {
    fmt::print("{}\n", to_json(result).dump(2));
  } else {
    fmt::print("{}", to_text(result));
  }
  return result.all_match() ? kExitOk : kExitViolation;
}

int run_cli(int argc, char** argv) {
  CLI::App app{"lockstep: tests lock algorithms under the faults that break them"};
  app.require_subcommand(1, 1);
  app.set_version_flag("--version", "lockstep 0.1.0");

  bool list_as_json = false;
  CLI::App* list = app.add_subcommand("list", "list adapters and scenarios with their options");
  list->add_flag("--json", list_as_json, "print JSON");

  RunFlags run;
  CLI::App* run_cmd = app.add_subcommand("run", "run one scenario with one adapter");
  run_cmd->add_option("SCENARIO", run.scenario, "scenario name (see `lockstep list`)")->required();
  run_cmd->add_option("--adapter", run.adapter, "adapter name (see `lockstep list`)")->required();
  run_cmd->add_option("--world", run.world, "sim or real")->check(CLI::IsMember({"sim", "real"}));
  run_cmd->add_option("--seed", run.seed, "seed of the run");
  run_cmd->add_option("--fencing", run.fencing, "on or off")->check(CLI::IsMember({"on", "off"}));
  run_cmd->add_option("--set", run.sets, "KEY=VALUE: override a scenario or adapter option");
  run_cmd->add_option("--report", run.report_dir, "write the JSON report and trace here");
  run_cmd->add_flag("--json", run.json, "print JSON");

  MatrixFlags matrix;
  CLI::App* matrix_cmd = app.add_subcommand("matrix", "every adapter against every scenario that applies");
  matrix_cmd->add_option("--world", matrix.world, "sim or real")->check(CLI::IsMember({"sim", "real"}));
  matrix_cmd->add_option("--seeds", matrix.seeds, "seeds per cell")->check(CLI::Range(1, 100000));
  matrix_cmd->add_option("--first-seed", matrix.first_seed, "first seed of each cell");
  matrix_cmd->add_option("--report", matrix.report_dir, "write matrix.md and matrix.json here");
  matrix_cmd->add_flag("--json", matrix.json, "print JSON");

  ReplayFlags replay;
  CLI::App* replay_cmd = app.add_subcommand("replay", "rerun the run a report describes and compare its trace");
  replay_cmd->add_option("REPORT", replay.report, "a report JSON written with --report")->required();
  replay_cmd->add_flag("--json", replay.json, "print JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    fmt::print(stderr, "lockstep: {} (try --help)\n", e.what());
    return kExitUsage;
  }

  if (list->parsed()) return cmd_list(list_as_json);
  if (run_cmd->parsed()) return cmd_run(run);
  if (matrix_cmd->parsed()) return cmd_matrix(matrix);
  return cmd_replay(replay);
}

}  // namespace
}  // namespace lockstep

int main(int argc, char** argv) {
  lockstep::register_known_bad_adapters();
  try {
    return lockstep::run_cli(argc, argv);
  } catch (const lockstep::UsageError& e) {
    fmt::print(stderr, "lockstep: {}\n", e.what());
    return lockstep::kExitUsage;
  } catch (const lockstep::real::ServerUnavailable& e) {
    fmt::print(stderr, "lockstep: {}\n", e.what());  // names what is missing and how to get it
    return 3;
  } catch (const lockstep::real::ServerStartError& e) {
    fmt::print(stderr, "lockstep: a server would not start: {}\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    fmt::print(stderr, "lockstep: internal error: {}\n", e.what());
    return 70;
  }
}
