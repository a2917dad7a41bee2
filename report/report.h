#pragma once
// Reports of runs: the JSON object of docs/DESIGN.md's contract, a text summary for people, files
// in a report directory, and reading a report back to replay it.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "run/runner.h"

namespace lockstep {

// The name as a part of a file name: ':' (ext:node-redlock), '/' and '\\' become '-'.
std::string portable(std::string name);

// "ok", "violation", or "error" (the run hit a bound before it completed).
std::string verdict(const RunReport& report);

// verdict, seed, trace_hash, violations (invariant, time_us, clients, key, detail, excerpt),
// stats (events, ops, acquisitions, sim_time_us, wall_time_us), and what reproduces the run.
nlohmann::json to_json(const RunReport& report);
// One violation: invariant, time_us, clients, key, detail, the history events and trace excerpt.
nlohmann::json violation_json(const ReportedViolation& violation);

// A few lines: the verdict, each violation with its excerpt, the expectation, the stats, and the
// replay command when something was violated.
std::string to_text(const RunReport& report);

// Where write_report puts the history of the report whose JSON is at report_json
// (NAME.history.jsonl, history/history_jsonl.h: what `lockstep check` reads).
std::filesystem::path history_path_for(const std::filesystem::path& report_json);
// Writes DIR/NAME.json, DIR/NAME.trace, DIR/NAME.history.jsonl and DIR/NAME.html (the timeline,
// report_html.h), NAME from scenario, adapter, seed and fencing; returns the JSON path. Creates
// DIR. Throws std::runtime_error when it cannot write.
std::filesystem::path write_report(const RunReport& report, const std::filesystem::path& dir);
// The same for a run of a generated workload: the JSON also carries `workload` (the spec of a
// generated workload, explore/swarm.h) and its `replay` is `lockstep replay PATH`.
std::filesystem::path write_report(const RunReport& report, const std::filesystem::path& dir,
                                   const nlohmann::json& workload);

// The config that reproduces a report's run, and the trace hash it had. Throws UsageError when the
// file cannot be read or lacks a field.
struct ReplaySpec {
  RunConfig config;
  std::string trace_hash;
  int trace_hash_version = 1;  // the report's, or 1 when it predates the field (sim/trace.h)
  std::string verdict;         // the report's verdict, compared on a real-world replay
  nlohmann::json workload;     // a generated workload's spec; null for a catalogue scenario
};
ReplaySpec read_replay_spec(const std::filesystem::path& report_json);

}  // namespace lockstep
