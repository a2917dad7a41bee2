// The `lockstep` command line (include/lockstep/cli.h).
#include "lockstep/cli.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/check_command.h"
#include "cli/exit_codes.h"
#include "cli/interrupt.h"
#include "cli/output_paths.h"
#include "cli/process_guards.h"
#include "explore/calibrate.h"
#include "explore/matrix.h"
#include "explore/matrix_report.h"
#include "explore/named_shrink.h"
#include "explore/replay.h"
#include "explore/shard_input.h"
#include "explore/sweep.h"
#include "explore/sweep_junit.h"
#include "explore/worker_pool.h"
#include "harness/option_bounds.h"
#include "harness/real_scenario_world.h"
#include "history/json_input.h"
#include "lockstep/registry.h"
#include "real/server_errors.h"
#include "report/junit.h"
#include "report/report.h"
#include "report/report_html.h"
#include "run/runner.h"
#include "services/service.h"
#include "sim/trace.h"

namespace lockstep {
namespace {

struct RunFlags {
  std::string scenario;
  std::string adapter;
  std::string world = "sim";
  uint64_t seed = 1;
  std::string fencing;  // set by add_fencing_option
  std::vector<std::string> sets;
  std::string report_dir;
  std::string junit;
  bool json = false;
  bool expect = false;  // exit by the catalogue's expectation (expectation_exit_code)
  bool shrink =
      false;  // a run that broke an invariant: its options shrunk (explore/named_shrink.h)
  bool show_spec = false;  // print the scenario's spec instead of running it
};

struct MatrixFlags {
  std::vector<std::string> adapters;
  std::vector<std::string> scenarios;
  std::string world = "sim";
  int seeds = 1;
  uint64_t first_seed = 1;
  std::string report_dir;
  std::string junit;
  bool json = false;
  int jobs = 1;  // set by add_jobs_option
  std::vector<std::string> sets;
  std::string fencing;  // set by add_fencing_option
};

struct ReplayFlags {
  std::string report;
  bool json = false;
  bool expect = false;
};

constexpr const char* kExpectHelp =
    "exit 0 when the run is what the catalogue expects of this adapter (the expected violations, "
    "or a documented finding), 1 when it differs, 4 when it ended as error";

// Numbers on the command line are strict decimal integers within [min, max]: digits only, no
// sign, hex, octal, spaces or wrap-around. Leading zeros are decimal ("010" is ten, "08" eight).
// CLI11 itself reads "010" as octal, "0x10" as hex, "-1" as 2^64-1 and saturates what overflows,
// so the check rewrites the text to its canonical digits before CLI11 converts it.
CLI::Validator decimal(uint64_t min, uint64_t max) {
  return CLI::Validator(
      [min, max](std::string& input) -> std::string {
        const std::optional<uint64_t> value = parse_decimal_unsigned(input);
        if (!value || *value < min || *value > max) {
          return fmt::format("must be a decimal integer in [{}, {}], got {}", min, max,
                             quote_value(input));
        }
        input = std::to_string(*value);
        return "";
      },
      max == UINT64_MAX ? std::string() : fmt::format("[{}-{}]", min, max), "decimal");
}

const CLI::Validator kSeed = decimal(0, UINT64_MAX);

// --jobs of sweep, matrix and calibrate: one default (every core this process may use) and one
// bound (worker_pool.h), here only.
std::vector<std::string> world_strings(const std::vector<WorldKind>& worlds) {
  std::vector<std::string> out;
  for (WorldKind world : worlds) out.emplace_back(to_string(world));
  return out;
}

// --fencing of run, sweep and matrix: one default for every command, on (the resource refuses a
// stale token, as a fenced deployment's does). The matrix also takes `both`: each cell twice, so
// its table shows what fencing changes (the main job, scripts/matrix.sh, charts both).
constexpr const char* kFencingDefault = "on";
void add_fencing_option(CLI::App& command, std::string& fencing, bool both_allowed) {
  fencing = kFencingDefault;
  if (both_allowed) {
    command
        .add_option("--fencing", fencing,
                    "on, off, or both (each cell twice); default on: the resource refuses stale "
                    "tokens")
        ->check(CLI::IsMember({"on", "off", "both"}));
  } else {
    command
        .add_option("--fencing", fencing,
                    "on or off; default on: the resource refuses stale tokens")
        ->check(CLI::IsMember({"on", "off"}));
  }
}

void add_jobs_option(CLI::App& command, int& jobs) {
  jobs = available_cores();
  command
      .add_option("--jobs", jobs,
                  "worker processes (default: every core); the result does not depend on it")
      ->transform(decimal(1, kJobsMax));
}

// A message on one line: newlines and other control characters inside it (a server's log, a
// driver's output: escape sequences included) are escaped, and it is cut at kMessageBytesMax.
constexpr size_t kMessageBytesMax = 4096;
std::string escape_lines(std::string_view text) {
  std::string out;
  if (text.size() > kMessageBytesMax) text = text.substr(0, kMessageBytesMax);
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    if (ch == '\n') {
      out += "\\n";
    } else if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += ch;
    }
  }
  return out;
}

std::string adapter_help() { return fmt::format("adapter name (see `{} list`)", program_name()); }

nlohmann::json list_json() {
  nlohmann::json out = {{"adapters", nlohmann::json::array()},
                        {"scenarios", nlohmann::json::array()}};
  for (const AdapterEntry& a : adapters()) {
    nlohmann::json options = nlohmann::json::object();
    for (const OptionSpec& spec : a.options) options[spec.name] = spec.default_value;
    out["adapters"].push_back({{"name", a.name},
                               {"description", a.description},
                               {"worlds", world_strings(a.worlds)},
                               {"known_bad", a.known_bad},
                               {"options", options}});
  }
  for (const Scenario& s : scenarios()) {
    nlohmann::json options = nlohmann::json::object();
    for (const OptionSpec& spec : s.options) options[spec.name] = spec.default_value;
    std::vector<std::string> fitting;  // the adapters of this binary it charts in the matrix
    for (const AdapterEntry& a : adapters()) {
      if (s.judges_in_matrix(a)) fitting.push_back(a.name);
    }
    out["scenarios"].push_back({{"name", s.name},
                                {"description", s.description},
                                {"options", options},
                                {"worlds", world_strings(s.worlds)},
                                {"fits", s.fits_text},
                                {"adapters", fitting}});
  }
  return out;
}

int cmd_list(bool json) {
  if (json) {
    print_out(json_text(list_json()) + "\n");
    return kExitOk;
  }
  print_out(fmt::format("adapters:\n"));
  for (const AdapterEntry& a : adapters()) {
    print_out(fmt::format("  {:<28} [{}] {}\n", a.name, world_names(a.worlds, ","), a.description));
    if (a.known_bad) continue;  // its options are its production sibling's
    for (const OptionSpec& spec : a.options) {
      print_out(fmt::format("  {:<28}   --set {}={}  ({})\n", "", spec.name, spec.default_value,
                            spec.help));
    }
  }
  print_out(fmt::format("scenarios:\n"));
  for (const Scenario& s : scenarios()) {
    print_out(fmt::format("  {:<22} [{}] {}\n", s.name, world_names(s.worlds, ","), s.description));
    for (const OptionSpec& spec : s.options) {
      print_out(fmt::format("  {:<22}   --set {}={}  ({})\n", "", spec.name, spec.default_value,
                            spec.help));
    }
  }
  return kExitOk;
}

// write_junit's failure is an unwritable path (exit 3), not an internal error.
void write_junit_checked(const std::string& file, const std::string& suite,
                         const std::vector<JUnitCase>& cases) {
  if (file.empty()) return;
  try {
    write_junit(file, suite, cases);
  } catch (const std::runtime_error& e) {
    throw OutputError(fmt::format("--junit {}: {}", file, e.what()));
  }
}

int print_run(const RunReport& report, bool json, const std::string& report_dir,
              bool expect = false) {
  if (!report_dir.empty()) {
    std::filesystem::path path;
    try {
      path = write_report(report, report_dir);
    } catch (const std::runtime_error& e) {
      throw OutputError(fmt::format("--report {}: {}", report_dir, e.what()));
    }
    fmt::print(stderr, "report: {}\n", path.string());
    fmt::print(stderr, "timeline: {}\n", timeline_path_for(path).string());
    fmt::print(stderr, "history: {}\n", history_path_for(path).string());
  }
  if (json) {
    print_out(json_text(to_json(report)) + "\n");
  } else {
    print_out(fmt::format("{}", to_text(report)));
  }
  return expect ? expectation_exit_code(report) : run_exit_code(report);
}

int cmd_run(const RunFlags& flags) {
  RunConfig config{.scenario = flags.scenario,
                   .adapter = flags.adapter,
                   .world = *world_kind_from_string(flags.world),
                   .seed = flags.seed,
                   .fencing_on = flags.fencing == "on",
                   .sets = flags.sets};
  check_output_dir("--report", flags.report_dir);
  check_output_file("--junit", flags.junit);
  if (flags.show_spec) {
    fmt::print("{}\n", to_json(scenario_spec(config)).dump(2));
    return kExitOk;
  }
  if (flags.shrink) check_shrinkable_world(config);
  RunReport report = run_scenario(config);
  const std::string unshrinkable = flags.shrink ? nothing_to_shrink(report) : std::string();
  if (!unshrinkable.empty()) {
    fmt::print(stderr, "shrink: nothing to shrink: {}\n", unshrinkable);
  } else if (flags.shrink) {
    NamedShrinkResult shrunk = shrink_named_run(config, report);
    fmt::print(stderr, "shrink: {} runs; {}\n", shrunk.runs,
               shrunk.changes.empty() ? "no smaller value still breaks it"
                                      : fmt::format("{}", fmt::join(shrunk.changes, ", ")));
    report = std::move(shrunk.report);
  }
  write_junit_checked(flags.junit, "lockstep run", {junit_case(report, flags.expect)});
  return print_run(report, flags.json, flags.report_dir, flags.expect);
}

// Exit 0 when the run reproduced (the same trace hash), whatever its verdict: replaying a report of
// a violation and seeing the violation again is success. 1 only when the trace differs.
int cmd_replay(const ReplayFlags& flags) {
  const ReplaySpec spec = read_replay_spec(flags.report);
  if (spec.config.world != WorldKind::real && spec.trace_hash_version != sim::Trace::kHashVersion) {
    throw UsageError(fmt::format(
        "replay: {} has a trace_hash of version {}, this build hashes version {} (sim/trace.h) and "
        "cannot compare them; run the report's scenario and seed again with this build for a new "
        "report",
        flags.report, spec.trace_hash_version, sim::Trace::kHashVersion));
  }
  RunReport report = replay_run(spec);  // a catalogue scenario or a generated workload
  if (!spec.workload.is_null()) report.replay_file = flags.report;  // replayed from this file
  const int judged = print_run(report, flags.json, "", flags.expect);
  if (spec.config.world == WorldKind::real) {
    // Real servers' timing is not reproducible, so neither is the trace: the run is redone and
    // its verdict compared.
    const bool same = verdict(report) == spec.verdict;
    fmt::print(stderr, "replay: real world: re-ran; verdict {} {} the report's {}\n",
               verdict(report), same ? "matches" : "differs from", spec.verdict);
    if (!same) return kExitViolation;
    return flags.expect ? judged : kExitOk;
  }
  if (report.trace_hash != spec.trace_hash) {
    fmt::print(
        stderr,
        "replay: NOT reproduced: trace_hash {} differs from the report's {} (another build?)\n",
        report.trace_hash, spec.trace_hash);
    return kExitViolation;
  }
  fmt::print(stderr, "replay: reproduced: trace_hash {} matches the report (verdict {})\n",
             report.trace_hash, verdict(report));
  return flags.expect ? judged : kExitOk;
}

int cmd_matrix(const MatrixFlags& flags) {
  check_output_dir("--report", flags.report_dir);
  check_output_file("--junit", flags.junit);
  const bool show_progress = isatty(fileno(stderr)) != 0;
  if (!flags.sets.empty() && flags.adapters.empty()) {
    throw UsageError("matrix --set sets an adapter's options: name the adapters with --adapter");
  }
  for (const std::string& adapter : flags.adapters) check_adapter_sets(adapter, flags.sets);
  MatrixResult result =
      run_matrix({.world = *world_kind_from_string(flags.world),
                  .seeds = flags.seeds,
                  .first_seed = flags.first_seed,
                  .adapters = flags.adapters,
                  .scenarios = flags.scenarios,
                  .jobs = flags.jobs,
                  .sets = flags.sets,
                  .fencing = flags.fencing == "both" ? FencingChoice::both
                             : flags.fencing == "on" ? FencingChoice::on
                                                     : FencingChoice::off,
                  // each cell's run, which matrix.html links to
                  .runs_dir = flags.report_dir.empty()
                                  ? std::string()
                                  : (std::filesystem::path(flags.report_dir) / "runs").string()},
                 [show_progress](size_t done, size_t total) {
                   if (show_progress) fmt::print(stderr, "\rmatrix: {}/{} cells", done, total);
                 });
  if (show_progress) fmt::print(stderr, "\n");
  if (result.cells.empty()) {
    // Not an error (nothing differed), but a CI job must not read it as "tested".
    fmt::print(stderr,
               "matrix: no scenario applies to the chosen adapters in the {} world: nothing ran\n",
               flags.world);
  }
  for (const MatrixCell& cell : result.cells) {
    if (!cell.run_report_error.empty())
      throw OutputError(fmt::format("--report {}: {}", flags.report_dir, cell.run_report_error));
  }
  if (!flags.report_dir.empty()) {
    const std::filesystem::path dir(flags.report_dir);
    write_output_file((dir / "matrix.md").string(), to_markdown(result));
    write_output_file((dir / "matrix.json").string(), json_text(to_json(result)) + "\n");
    write_output_file((dir / "matrix.html").string(), matrix_html(result));
    fmt::print(stderr,
               "report: {}/matrix.md, matrix.json, matrix.html (each cell's run in runs/)\n",
               flags.report_dir);
  }
  write_junit_checked(flags.junit, "lockstep matrix", junit_cases(result));
  if (flags.json) {
    print_out(json_text(to_json(result)) + "\n");
  } else {
    print_out(fmt::format("{}", to_text(result)));
  }
  if (result.all_match()) return kExitOk;
  return result.only_errors_differ() ? kExitError : kExitViolation;
}

// --- sweep, sweep-merge, calibrate (random fault schedules; explore/sweep.h) ---

struct SweepFlags {
  std::string adapter;
  int seeds = 1000;
  uint64_t first_seed = 1;
  std::string faults = "all";
  std::string shard = "0/1";
  std::string fencing;  // set by add_fencing_option
  std::string report_dir;
  bool keep_going = false;
  int shrink = 1;
  int jobs = 1;  // set by add_jobs_option
  bool json = false;
  std::vector<std::string> sets;
  std::optional<std::string> time;  // --time DURATION (cli/interrupt.h)
  std::string junit;
};

struct MergeFlags {
  std::vector<std::string> paths;
  std::string report_dir;
  bool json = false;
};

struct CalibrateFlags {
  std::vector<std::string> adapters;
  int seeds = 200;
  uint64_t first_seed = 1;
  std::string report_dir;
  bool json = false;
  bool no_time_target = false;
  int jobs = 1;                     // set by add_jobs_option
  std::optional<std::string> time;  // --time DURATION (cli/interrupt.h)
  std::string junit;
};

struct SweepCommands {
  CLI::App* sweep = nullptr;
  CLI::App* merge = nullptr;
  CLI::App* calibrate = nullptr;
  SweepFlags sweep_flags;
  MergeFlags merge_flags;
  CalibrateFlags calibrate_flags;
};

// "\rsweep memory: 120/1000 seeds, 0 violations, 850 seeds/s, 1s left" at most every 100 ms,
// only when stderr is a terminal.
class ProgressLine {
 public:
  explicit ProgressLine(std::string label)
      : label_(std::move(label)), on_(isatty(fileno(stderr)) != 0) {}
  void update(const SweepProgress& p) {
    if (!on_ || (p.elapsed_us - last_us_ < 100'000 && p.done < p.total)) return;
    last_us_ = p.elapsed_us;
    const double rate = p.elapsed_us > 0 ? p.done * 1e6 / static_cast<double>(p.elapsed_us) : 0.0;
    const double left_s = rate > 0 ? (p.total - p.done) / rate : 0.0;
    fmt::print(stderr, "\r{}: {}/{} seeds, {} violations, {:.0f} seeds/s, {:.0f}s left   ", label_,
               p.done, p.total, p.violations, rate, left_s);
    shown_ = true;
  }
  ~ProgressLine() {
    if (shown_) fmt::print(stderr, "\n");
  }

 private:
  std::string label_;
  bool on_;
  bool shown_ = false;
  int64_t last_us_ = -1'000'000;
};

int cmd_sweep(const SweepFlags& flags) {
  const AdapterEntry* adapter = find_adapter(flags.adapter);
  if (adapter == nullptr) {
    throw UsageError(
        fmt::format("unknown adapter \"{}\"; valid adapters: {}", flags.adapter, adapter_names()));
  }
  const auto [shard_index, shard_count] = parse_shard(flags.shard);
  SweepConfig config{.adapter = flags.adapter,
                     .first_seed = flags.first_seed,
                     .seeds = flags.seeds,
                     .faults = parse_fault_list(flags.faults),
                     .faults_named = !flags.faults.empty() && flags.faults != "all",
                     .shard_index = shard_index,
                     .shard_count = shard_count,
                     .fencing_on = flags.fencing == "on",
                     .keep_going = flags.keep_going,
                     .shrink_max = flags.shrink,
                     .report_dir = flags.report_dir.empty() ? "reports/sweep" : flags.report_dir,
                     .jobs = flags.jobs,
                     .sets = flags.sets};
  check_sweep_sets(flags.adapter, flags.sets);
  check_output_dir("--report", flags.report_dir);
  check_output_file("--junit", flags.junit);
  if (flags.time) config.stop.time_budget_us = parse_duration_us("--time", *flags.time);
  SweepResult result;
  {
    const InterruptWatch interrupt;  // a CI timeout's SIGTERM: the partial report is written
    config.stop.signal_caught = &InterruptWatch::caught;
    ProgressLine progress("sweep " + flags.adapter);
    result = run_sweep(config, [&progress](const SweepProgress& p) { progress.update(p); });
  }
  if (!flags.report_dir.empty()) {
    const std::filesystem::path path =
        std::filesystem::path(flags.report_dir) / sweep_report_name(config);
    write_output_file(path.string(), json_text(to_json(result)) + "\n");
    fmt::print(stderr, "report: {}\n", path.string());
  }
  if (flags.json) {
    print_out(json_text(to_json(result)) + "\n");
  } else {
    print_out(fmt::format("{}", to_text(result)));
  }
  write_junit_checked(flags.junit, "lockstep sweep", junit_cases(result));
  // Cut short by a signal with nothing found: not a pass. A violation found before it still is 1.
  const bool cut_by_signal =
      !result.stopped_by.empty() && result.stopped_by != "time" && result.stopped_by != "violation";
  if (const int signal = InterruptWatch::caught(); cut_by_signal && result.ok()) {
    fmt::print(stderr, "sweep: interrupted by {}: the report holds the {} seeds run\n",
               signal_name(signal), result.seeds_run);
    return interrupted_exit_code(signal);
  }
  return sweep_exit_code(to_json(result));
}

std::vector<std::filesystem::path> shard_reports(const std::vector<std::string>& paths) {
  std::vector<std::filesystem::path> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(p, ec)) {
      files.emplace_back(p);  // read_shard_report says what it is if it is no report
      continue;
    }
    std::vector<std::filesystem::path> in_dir;
    std::filesystem::directory_iterator entries(p, ec);
    if (ec) throw UsageError(fmt::format("sweep-merge: cannot list {}: {}", p, ec.message()));
    for (const auto& entry : entries) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("sweep.", 0) == 0 && name.find(".shard") != std::string::npos)
        in_dir.push_back(entry.path());
    }
    std::sort(in_dir.begin(), in_dir.end());  // directory order is unspecified
    files.insert(files.end(), in_dir.begin(), in_dir.end());
  }
  return files;
}

int cmd_sweep_merge(const MergeFlags& flags) {
  check_output_dir("--report", flags.report_dir);
  std::vector<nlohmann::json> shards;
  for (const std::filesystem::path& file : shard_reports(flags.paths)) {
    shards.push_back(read_shard_report(file.string()));  // checked field by field
  }
  nlohmann::json merged;
  try {
    merged = merge_sweeps(shards);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("sweep-merge: not a sweep report: {}", e.what()));
  }
  if (!flags.report_dir.empty()) {
    const auto path = std::filesystem::path(flags.report_dir) / "sweep.merged.json";
    write_output_file(path.string(), json_text(merged) + "\n");
    fmt::print(stderr, "report: {}\n", path.string());
  }
  if (flags.json) {
    print_out(json_text(merged) + "\n");
  } else {
    print_out(fmt::format("{}", merged_text(merged)));
  }
  return sweep_exit_code(merged);
}

int cmd_calibrate(const CalibrateFlags& flags) {
  for (const std::string& name : flags.adapters) {
    const AdapterEntry* entry = find_adapter(name);
    if (entry == nullptr || !entry->known_bad) {
      throw UsageError(
          fmt::format("\"{}\" is not a known-bad adapter; see `{} list`", name, program_name()));
    }
  }
  check_output_dir("--report", flags.report_dir);
  check_output_file("--junit", flags.junit);
  const int64_t budget_us = flags.time ? parse_duration_us("--time", *flags.time) : 0;
  CalibrationResult result;
  {
    const InterruptWatch interrupt;  // a CI timeout's SIGTERM: the partial report is written
    result = run_calibration(
        {.adapters = flags.adapters,
         .first_seed = flags.first_seed,
         .seeds = flags.seeds,
         .report_dir = flags.report_dir,
         .judge_time = !flags.no_time_target,
         .jobs = flags.jobs,
         .stop = {.time_budget_us = budget_us, .signal_caught = &InterruptWatch::caught}});
  }
  if (flags.json) {
    print_out(json_text(to_json(result)) + "\n");
  } else {
    print_out(fmt::format("{}", to_text(result)));
  }
  write_junit_checked(flags.junit, "lockstep calibrate", junit_cases(result));
  const std::string verdict = result.verdict();
  if (verdict == "missed") return kExitViolation;
  if (const int signal = InterruptWatch::caught(); signal != 0 && verdict != "ok")
    return interrupted_exit_code(signal);
  return verdict == "ok" ? kExitOk : kExitError;  // incomplete: adapters the budget left unjudged
}

void add_sweep_commands(CLI::App& app, SweepCommands& c) {
  SweepFlags& s = c.sweep_flags;
  c.sweep = app.add_subcommand(
      "sweep", "many seeds of random workloads and fault schedules against one adapter");
  c.sweep->add_option("--adapter", s.adapter, adapter_help())->required();
  c.sweep->add_option("--seeds", s.seeds, "how many seeds")->transform(decimal(1, kSweepSeedsMax));
  c.sweep->add_option("--first-seed", s.first_seed, "first seed")->transform(kSeed);
  c.sweep->add_option("--faults", s.faults,
                      "comma list of fault kinds to draw: " + sweep_fault_kind_names());
  c.sweep->add_option("--shard", s.shard, "I/N: run only the seeds s with (s - first) % N == I");
  add_fencing_option(*c.sweep, s.fencing, false);
  c.sweep->add_option(
      "--report", s.report_dir,
      "write the shard report and replay files here (replay files default to reports/sweep)");
  c.sweep->add_flag("--keep-going", s.keep_going,
                    "run every seed instead of stopping at the first violation");
  c.sweep->add_option("--shrink", s.shrink, "how many counterexamples to shrink and save")
      ->transform(decimal(0, kShrinkMax));
  add_jobs_option(*c.sweep, s.jobs);
  c.sweep->add_option("--set", s.sets,
                      "KEY=VALUE: an adapter option (e.g. ext's driver); the swarm draws the rest");
  c.sweep->add_flag("--json", s.json, "print JSON");
  c.sweep->add_option("--time", s.time,
                      "time budget, e.g. 30s, 5m, 1h: stop taking seeds then and report those "
                      "run (a shrink gets a tenth more)");
  c.sweep->add_option("--junit", s.junit,
                      "write a JUnit XML file (the seeds run, and each counterexample) for CI");

  MergeFlags& m = c.merge_flags;
  c.merge = app.add_subcommand("sweep-merge",
                               "add up the shard reports of one sweep (files or directories)");
  c.merge
      ->add_option("REPORTS", m.paths,
                   "shard reports written by sweep --report, or their directories")
      ->required();
  c.merge->add_option("--report", m.report_dir, "write sweep.merged.json here");
  c.merge->add_flag("--json", m.json, "print JSON");

  CalibrateFlags& k = c.calibrate_flags;
  c.calibrate = app.add_subcommand(
      "calibrate", fmt::format("how well the sweep catches each known-bad adapter; targets: "
                               "caught on the invariant it breaks in at least its share of "
                               "seeds (judged over {}+ seeds), shrunk small, median time "
                               "under 1 s",
                               kShareSeedsMin));
  c.calibrate->add_option("--adapter", k.adapters,
                          "known-bad adapters to calibrate (default: all)");
  c.calibrate->add_option("--seeds", k.seeds, "seeds per adapter")
      ->transform(decimal(1, kCalibrateSeedsMax));
  c.calibrate->add_option("--first-seed", k.first_seed, "first seed")->transform(kSeed);
  c.calibrate->add_option("--report", k.report_dir,
                          "write the shrunk counterexamples' replay files here");
  c.calibrate->add_flag("--json", k.json, "print JSON");
  c.calibrate->add_flag(
      "--no-time-target", k.no_time_target,
      "judge the share caught and shrunk size only, not the median time (for CI)");
  add_jobs_option(*c.calibrate, k.jobs);
  c.calibrate->add_option("--time", k.time,
                          "time budget, e.g. 5m: stop then; adapters not caught by then are not "
                          "judged (exit 4 if none missed)");
  c.calibrate->add_option("--junit", k.junit,
                          "write a JUnit XML file (one testcase per known-bad adapter) for CI");
}

// -1 when none of them was chosen.
int dispatch_sweep_commands(const SweepCommands& c) {
  if (c.sweep->parsed()) return cmd_sweep(c.sweep_flags);
  if (c.merge->parsed()) return cmd_sweep_merge(c.merge_flags);
  if (c.calibrate->parsed()) return cmd_calibrate(c.calibrate_flags);
  return -1;
}

int run_cli(int argc, char** argv) {
  CLI::App app{"tests lock algorithms under the faults that break them", program_name()};
  app.require_subcommand(1, 1);
  app.footer(kExitCodesHelp);
  app.set_version_flag("--version", "lockstep " LOCKSTEP_VERSION);
  // --help shows each option's default (subcommands inherit this).
  app.option_defaults()->always_capture_default();

  bool list_as_json = false;
  CLI::App* list = app.add_subcommand("list", "list adapters and scenarios with their options");
  list->add_flag("--json", list_as_json, "print JSON");

  RunFlags run;
  CLI::App* run_cmd = app.add_subcommand("run", "run one scenario with one adapter");
  run_cmd
      ->add_option("SCENARIO", run.scenario,
                   fmt::format("scenario name (see `{} list`)", program_name()))
      ->required();
  run_cmd->add_option("--adapter", run.adapter, adapter_help())->required();
  run_cmd
      ->add_option("--world", run.world,
                   fmt::format("sim or real (real servers on loopback; a real-world run is "
                               "bounded to {} s of wall time, exit 4 past it)",
                               kRealRunTimeMaxUs / 1'000'000))
      ->check(CLI::IsMember({"sim", "real"}));
  run_cmd->add_option("--seed", run.seed, "seed of the run")->transform(kSeed);
  add_fencing_option(*run_cmd, run.fencing, false);
  run_cmd->add_option("--set", run.sets, "KEY=VALUE: override a scenario or adapter option");
  CLI::Option* report = run_cmd->add_option("--report", run.report_dir,
                                            "write the JSON report, trace and HTML timeline here");
  CLI::Option* junit =
      run_cmd->add_option("--junit", run.junit, "write a JUnit XML file (one testcase) for CI");
  run_cmd->add_flag("--json", run.json, "print JSON");
  CLI::Option* expect = run_cmd->add_flag("--expect", run.expect, kExpectHelp);
  CLI::Option* shrink = run_cmd->add_flag(
      "--shrink", run.shrink,
      "when the run breaks an invariant: search the scenario's numbers (TTL, pause, cut...) down "
      "to the smallest that still break it, and report that run");
  run_cmd
      ->add_flag("--show-spec", run.show_spec,
                 "print the scenario's spec as JSON (its clients' steps and its faults, as the "
                 "engine takes them with these options) instead of running it")
      ->excludes(report)
      ->excludes(junit)
      ->excludes(expect)
      ->excludes(shrink);

  MatrixFlags matrix;
  CLI::App* matrix_cmd =
      app.add_subcommand("matrix", "adapters against the scenarios that apply to them");
  matrix_cmd->add_option("--world", matrix.world, "sim or real")
      ->check(CLI::IsMember({"sim", "real"}));
  matrix_cmd->add_option("--seeds", matrix.seeds, "seeds per cell")
      ->transform(decimal(1, kMatrixSeedsMax));
  matrix_cmd->add_option("--first-seed", matrix.first_seed, "first seed of each cell")
      ->transform(kSeed);
  matrix_cmd->add_option("--adapter", matrix.adapters,
                         "only these adapters (repeatable; default: every adapter of the world)");
  matrix_cmd->add_option("--scenario", matrix.scenarios,
                         "only these scenarios (repeatable; default: every scenario that applies)");
  matrix_cmd->add_option("--report", matrix.report_dir,
                         "write matrix.md, matrix.json and matrix.html here");
  matrix_cmd->add_option("--junit", matrix.junit,
                         "write a JUnit XML file (one testcase per cell) for CI");
  matrix_cmd->add_flag("--json", matrix.json, "print JSON");
  add_jobs_option(*matrix_cmd, matrix.jobs);
  add_fencing_option(*matrix_cmd, matrix.fencing, true);
  matrix_cmd->add_option(
      "--set", matrix.sets,
      "KEY=VALUE: an option of the named adapters (e.g. ext's driver), every cell");

  ReplayFlags replay;
  CLI::App* replay_cmd =
      app.add_subcommand("replay", "rerun the run a report describes and compare its trace");
  replay_cmd->add_option("REPORT", replay.report, "a report JSON written with --report")
      ->required();
  replay_cmd->add_flag("--json", replay.json, "print JSON");
  replay_cmd->add_flag("--expect", replay.expect,
                       std::string(kExpectHelp) + "; 1 also when the trace did not reproduce");

  std::string history_path;
  bool check_json = false;
  CLI::App* check_cmd = app.add_subcommand(
      "check",
      "judge a recorded history (JSON Lines, docs/history.schema.json) with every checker");
  check_cmd
      ->add_option("HISTORY", history_path, "a history file, e.g. NAME.history.jsonl of --report")
      ->required();
  check_cmd->add_flag("--json", check_json, "print JSON");

  SweepCommands sweep_commands;
  add_sweep_commands(app, sweep_commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
    if (argc < 2 || std::string_view(argv[1]).substr(0, 1) == "-") {
      fmt::print(stderr, "{}: a subcommand is required; valid subcommands: {} (try --help)\n",
                 program_name(), fmt::join(names, ", "));
    } else if (app.get_subcommands().empty()) {
      fmt::print(stderr, "{}: unknown subcommand {}; valid subcommands: {}\n", program_name(),
                 quote_value(argv[1]), fmt::join(names, ", "));
    } else {
      fmt::print(stderr, "{}: {} (try --help)\n", program_name(), escape_lines(e.what()));
    }
    return kExitUsage;
  }

  if (list->parsed()) return cmd_list(list_as_json);
  if (run_cmd->parsed()) return cmd_run(run);
  if (matrix_cmd->parsed()) return cmd_matrix(matrix);
  if (check_cmd->parsed()) return cmd_check(history_path, check_json);
  if (const int code = dispatch_sweep_commands(sweep_commands); code >= 0) return code;
  return cmd_replay(replay);
}

}  // namespace

int cli_main(int argc, char** argv) {
  bound_thread_stacks();
  end_out_of_memory_within_contract();
  if (argc > 0 && argv[0] != nullptr && *argv[0] != '\0') {
    set_program_name(std::filesystem::path(argv[0]).filename().string());
  }
  const std::string& program = program_name();
  prepare_services();  // each service's process-wide preparation, before anything runs
  write_errors_instead_of_sigpipe();
  try {
    const int code = run_cli(argc, argv);
    // Output that could not be written (a full disk, a closed pipe) must not pass for a result.
    if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
      fmt::print(stderr, "{}: cannot write the output to stdout: {}\n", program,
                 std::strerror(errno));
      return kExitEnvironment;
    }
    // Every exit 2-4 says why on stderr in one line; for 4 the why is in the output itself.
    if (code == kExitError) {
      fmt::print(stderr, "{}: a run ended as an error, not judged (the output says why)\n",
                 program);
    }
    return code;
  } catch (const StdoutError& e) {
    fmt::print(stderr, "{}: cannot write the output to stdout: {}\n", program,
               escape_lines(e.what()));
    return kExitEnvironment;
  } catch (const UsageError& e) {
    fmt::print(stderr, "{}: {}\n", program, escape_lines(e.what()));
    return kExitUsage;
  } catch (const OutputError& e) {
    fmt::print(stderr, "{}: cannot write the results: {}\n", program, escape_lines(e.what()));
    return kExitEnvironment;
  } catch (const real::ServerUnavailable& e) {
    // names what is missing and how to get it
    fmt::print(stderr, "{}: {}\n", program, escape_lines(e.what()));
    return kExitEnvironment;
  } catch (const real::ServerStartError& e) {
    fmt::print(stderr, "{}: a server would not start: {}\n", program, escape_lines(e.what()));
    return kExitEnvironment;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "{}: {}\n", program, kOutOfMemoryWhy);
    return kExitEnvironment;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: internal error: {}\n", program, escape_lines(e.what()));
    return kExitInternal;
  }
}

}  // namespace lockstep
