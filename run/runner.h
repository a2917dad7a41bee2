#pragma once
// Runs one scenario with one adapter and one seed, and judges it.
//
// A simulated run is a pure function of (scenario, adapter, options, seed, fencing, build): the
// report's trace_hash is the same on every run and machine. Bad input (unknown scenario, adapter,
// option, or a world the adapter does not support) throws UsageError before anything runs.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "checkers/checkers.h"
#include "harness/scenario.h"
#include "harness/usage_error.h"
#include "history/history.h"
#include "lockstep/options.h"
#include "lockstep/run_end.h"
#include "lockstep/world_kind.h"

namespace lockstep {

// The scenario name of runs of a generated workload (explore/swarm.h): such a run is replayed from
// its report file, which carries the workload, not from a command line.
inline constexpr const char* kSwarmScenarioName = "swarm";

// The memory bounds of one run (about 150 bytes per history event, 100 per trace line kept).
inline constexpr size_t kHistoryEventsMax = 1'000'000;
inline constexpr size_t kTraceLinesKeptMax = 250'000;

struct RunConfig {
  std::string scenario;
  std::string adapter;
  WorldKind world = WorldKind::sim;
  uint64_t seed = 1;
  bool fencing_on = false;
  std::vector<std::string> sets;  // KEY=VALUE overrides
  uint64_t events_max = 20'000'000;
  // What a run may keep, beside the events it may run: history events and trace lines. Reaching
  // the history bound stops the run as an error naming it (a run that would only grow).
  size_t history_events_max = kHistoryEventsMax;
  size_t trace_lines_kept_max = kTraceLinesKeptMax;
  bool keep_trace = true;  // keep trace lines for excerpts and the report
  // false, in the simulator and without keep_trace: no trace_hash ("") and no trace line is
  // formatted (sim/trace.h), for runs whose hash nobody reads (a sweep's passing seeds). The run
  // is otherwise the same: events, history, violations and verdict.
  bool hash_trace = true;
};

struct RunStats {
  uint64_t events = 0;
  uint64_t ops = 0;
  uint64_t acquisitions = 0;
  int64_t sim_time_us = 0;
  int64_t wall_time_us = 0;
};

struct ReportedViolation {
  Violation violation;
  std::vector<std::string> excerpt;  // the trace lines of the events that show it
};

struct RunReport {
  RunConfig config;
  Options options;  // resolved: defaults plus overrides
  std::string trace_hash;
  // The definition trace_hash follows (sim::Trace::kHashVersion); 0 when there is no hash.
  int trace_hash_version = 0;
  std::string library;  // Backend::library(): the library under test as it named itself, or ""
  std::vector<ReportedViolation> violations;
  RunStats stats;
  // How the run ended (include/lockstep/run_end.h): complete, which bound it hit, or no_leases (a lease
  // lock whose grants no server recorded, so its lease checks would have been blind).
  RunEnd end = RunEnd::complete;
  std::string end_message;
  Expectation expected;
  // When the run differs from `expected` exactly as one of the adapter's documented findings says
  // (AdapterEntry::findings): that finding's summary; else "".
  std::string finding;
  std::vector<std::string> trace;  // every trace line (when kept)
  History history;
  // A generated workload's report file (explore/swarm.h), once there is one: such a run is
  // replayed from its file, not from a command line. "" until written (or when never saved).
  std::string replay_file;

  bool ok() const { return violations.empty() && end == RunEnd::complete; }
  // The invariants violated, deduplicated.
  Expectation violated() const;
  bool matches_expectation() const { return end == RunEnd::complete && violated() == expected; }
  // The one command line that reproduces this run: `PROGRAM run ...`, or for a generated
  // workload `PROGRAM replay FILE` (replay_file), or "" when that has no file to name.
  std::string replay_command() const;
};

// The program that replay lines name: "lockstep" unless the command line was started under another
// name (cli_main sets it from argv[0]), so a user's own binary, with its own adapters registered,
// prints replay lines that rerun with itself. Set once, before any run.
const std::string& program_name();
void set_program_name(std::string name);
// The word as one shell word: as is when it is plain, else in single quotes.
std::string shell_quote(const std::string& word);
// `PROGRAM replay FILE`, each word quoted as the shell needs; "" when file is "" (nothing saved).
std::string replay_file_command(const std::string& file);

// Resolves and validates a config: the scenario's and adapter's options with the overrides.
Options resolve_options(const RunConfig& config);
Options resolve_options(const Scenario& scenario, const RunConfig& config);
// The catalogue scenario's spec for this config (its timeline as data, harness/scenario_spec.h),
// as the run would take it, without running it. UsageError for a config resolve_options refuses or
// that the scenario cannot be built for (two options that must agree).
ScenarioSpec scenario_spec(const RunConfig& config);
RunReport run_scenario(const RunConfig& config);
// Runs a scenario that is not in the catalogue (a generated workload); config.scenario is ignored.
RunReport run_scenario(const Scenario& scenario, const RunConfig& config);

}  // namespace lockstep
