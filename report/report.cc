#include "report/report.h"

#include <fstream>
#include <initializer_list>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "history/history_jsonl.h"
#include "history/json_input.h"
#include "report/report_html.h"

namespace lockstep {

// A name made portable: ':' (ext:node-redlock) is not allowed in file names on Windows, macOS's
// Finder shows it as '/', and scp reads it as a host. Adapter and scenario names use '-' already.
std::string portable(std::string name) {
  for (char& ch : name) {
    if (ch == ':' || ch == '/' || ch == '\\') ch = '-';
  }
  return name;
}

namespace {

std::vector<std::string> invariant_names(const Expectation& set) {
  std::vector<std::string> names;
  for (Invariant i : set) names.emplace_back(to_string(i));
  return names;
}

std::string file_stem(const RunReport& r) {
  return fmt::format("{}.{}.seed{}.fencing-{}", portable(r.config.scenario),
                     portable(r.config.adapter), r.config.seed, r.config.fencing_on ? "on" : "off");
}

std::vector<std::string> option_names(const Options& options) {
  std::vector<std::string> names;
  for (const auto& [name, value] : options.values()) names.push_back(name);
  return names;
}

std::string ms(int64_t us) { return fmt::format("{:.3f}ms", static_cast<double>(us) / 1000.0); }

}  // namespace

std::string verdict(const RunReport& report) {
  if (report.end == RunEnd::vacuous) return "vacuous";
  if (report.end != RunEnd::complete) return "error";
  return report.violations.empty() ? "ok" : "violation";
}

nlohmann::json violation_json(const ReportedViolation& rv) {
  const Violation& v = rv.violation;
  return {{"invariant", to_string(v.invariant)},
          {"time_us", v.time_us},
          {"clients", v.clients},
          {"key", v.key},
          {"detail", v.detail},
          {"events", v.events},
          {"excused_by", v.excuse},
          {"excused_by_event", v.excused_by ? nlohmann::json(*v.excused_by) : nlohmann::json()},
          {"excerpt", rv.excerpt}};
}

nlohmann::json to_json(const RunReport& r) {
  nlohmann::json violations = nlohmann::json::array();
  for (const ReportedViolation& rv : r.violations) violations.push_back(violation_json(rv));
  return {
      {"verdict", verdict(r)},
      {"scenario", r.config.scenario},
      {"adapter", r.config.adapter},
      {"world", to_string(r.config.world)},
      {"seed", r.config.seed},
      {"fencing", r.config.fencing_on ? "on" : "off"},
      {"options", r.options.values()},
      {"overrides", r.options.overrides()},
      {"trace_hash", r.trace_hash},
      {"trace_hash_version", r.trace_hash_version},
      {"library", r.library},
      {"end", to_string(r.end)},
      {"end_message", r.end_message},
      {"violations", violations},
      {"expected", invariant_names(r.expected)},
      {"matches_expectation", r.matches_expectation()},
      {"finding", r.finding},
      {"stats",
       {{"events", r.stats.events},
        {"ops", r.stats.ops},
        {"acquisitions", r.stats.acquisitions},
        {"sim_time_us", r.stats.sim_time_us},
        {"wall_time_us", r.stats.wall_time_us}}},
      {"replay", r.replay_command()},
  };
}

std::string to_text(const RunReport& r) {
  std::string out = fmt::format("{} with {} ({}, seed {}, fencing {}): {}\n", r.config.scenario,
                                r.config.adapter, to_string(r.config.world), r.config.seed,
                                r.config.fencing_on ? "on" : "off", verdict(r));
  if (!r.library.empty()) out += fmt::format("  library: {}\n", r.library);
  if (r.end == RunEnd::vacuous) {
    out += fmt::format("  vacuous: {}\n", r.end_message);
  } else if (r.end != RunEnd::complete) {
    out += fmt::format("  run did not complete: {}\n", r.end_message);
  }
  for (const ReportedViolation& rv : r.violations) {
    const Violation& v = rv.violation;
    out += fmt::format("  {} at {} on key {}: {}\n", to_string(v.invariant), ms(v.time_us), v.key,
                       v.detail);
    out += fmt::format("      excused by: {}\n", v.excuse);
    for (const std::string& line : rv.excerpt) out += fmt::format("      | {}\n", line);
  }
  const std::vector<std::string> expected = invariant_names(r.expected);
  out += fmt::format(
      "  expected: {} ({})\n",
      expected.empty() ? "safe" : "violation: " + fmt::format("{}", fmt::join(expected, ", ")),
      r.matches_expectation() ? "matches" : "DIFFERS");
  if (!r.finding.empty()) {
    out += fmt::format("  a documented finding of {}: {}\n", r.config.adapter, r.finding);
  }
  out +=
      fmt::format("  trace_hash {}; {} events, {} ops, {} acquisitions; {} simulated in {} wall\n",
                  r.trace_hash, r.stats.events, r.stats.ops, r.stats.acquisitions,
                  ms(r.stats.sim_time_us), ms(r.stats.wall_time_us));
  // Only a line that runs as printed: a generated workload without a report file has none.
  if (!r.violations.empty() && !r.replay_command().empty()) {
    out += fmt::format("  replay: {}\n", r.replay_command());
  }
  return out;
}

std::filesystem::path history_path_for(const std::filesystem::path& report_json) {
  std::filesystem::path out = report_json;
  out.replace_extension(".history.jsonl");
  return out;
}

std::filesystem::path write_report(const RunReport& report, const std::filesystem::path& dir) {
  return write_report(report, dir, nullptr);
}

std::filesystem::path write_report(const RunReport& report, const std::filesystem::path& dir,
                                   const nlohmann::json& workload) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error(
        fmt::format("cannot create report dir {}: {}", dir.string(), ec.message()));
  std::filesystem::path json_path = dir / (file_stem(report) + ".json");
  const std::filesystem::path trace_path = dir / (file_stem(report) + ".trace");
  nlohmann::json j = to_json(report);
  if (!workload.is_null()) {
    // A generated workload is replayed from this file: its JSON and its timeline say so.
    j["workload"] = workload;
    j["replay"] = replay_file_command(json_path.string());
  }
  std::ofstream json_out(json_path);
  json_out << json_text(j) << "\n";
  std::ofstream trace_out(trace_path);
  for (const std::string& line : report.trace) trace_out << line << "\n";
  std::ofstream html_out(timeline_path_for(json_path));
  html_out << timeline_html(report, j.at("replay").get<std::string>());
  std::ofstream history_out(history_path_for(json_path));
  write_history_jsonl(report.history, history_out);
  // Flushed before the check: a full disk shows only when the buffers go out.
  for (std::ofstream* out : {&json_out, &trace_out, &html_out, &history_out}) out->flush();
  if (!json_out || !trace_out || !html_out || !history_out) {
    throw std::runtime_error(fmt::format("cannot write report files in {}", dir.string()));
  }
  return json_path;
}

namespace {

// One field of a report, of the type and among the values a report has, or a UsageError naming it.
class ReportFields {
 public:
  ReportFields(const std::filesystem::path& path, const nlohmann::json& j) : path_(path), j_(j) {}

  [[noreturn]] void fail(const char* field, const std::string& what) const {
    throw UsageError(
        fmt::format("{} is not a lockstep report: \"{}\" {}", path_.string(), field, what));
  }
  const nlohmann::json& at(const char* field) const {
    if (!j_.is_object() || !j_.contains(field)) fail(field, "is missing");
    return j_.at(field);
  }
  std::string text(const char* field) const {
    const nlohmann::json& v = at(field);
    if (!v.is_string()) fail(field, "must be a string");
    return v.get<std::string>();
  }
  int version(const char* field) const {
    const nlohmann::json& v = at(field);
    if (!v.is_number_unsigned() || v.get<uint64_t>() > 1'000'000) {
      fail(field, "must be a small non-negative integer");
    }
    return v.get<int>();
  }
  std::string choice(const char* field, std::initializer_list<const char*> valid) const {
    const std::string v = text(field);
    std::string names;
    for (const char* name : valid) {
      if (v == name) return v;
      names += (names.empty() ? "" : ", ") + std::string(name);
    }
    fail(field, fmt::format("is \"{}\"; valid: {}", v, names));
  }
  // The fields a report has are those to_json writes (whatever this build's report holds), plus
  // the two write_report adds; anything else is a file this build did not write.
  void only_known_fields() const {
    nlohmann::json known = to_json(RunReport{});
    known["workload"] = nullptr;
    known["replay"] = nullptr;
    for (const auto& [name, value] : j_.items()) {
      if (!known.contains(name)) {
        throw UsageError(fmt::format("{} is not a lockstep report: unknown field \"{}\"; valid: {}",
                                     path_.string(), name, field_names(known)));
      }
    }
  }
  static std::string field_names(const nlohmann::json& known) {
    std::string names;
    for (const auto& [name, value] : known.items()) names += (names.empty() ? "" : ", ") + name;
    return names;
  }
  uint64_t seed(const char* field) const {
    const nlohmann::json& v = at(field);
    if (!v.is_number_unsigned()) fail(field, "must be a non-negative integer");
    return v.get<uint64_t>();
  }

 private:
  const std::filesystem::path& path_;
  const nlohmann::json& j_;
};

// A catalogue run's report lists every option as resolved; replay reruns from the overrides, so
// the list must be exactly what they resolve to. A value edited by hand (or from another build)
// would otherwise be ignored in silence.
void check_reported_options(const std::filesystem::path& path, const nlohmann::json& reported,
                            const RunConfig& config) {
  const Options resolved = resolve_options(config);
  if (!reported.is_object()) {
    throw UsageError(
        fmt::format("{}: field \"options\" must be an object of NAME: \"VALUE\"", path.string()));
  }
  for (const auto& [name, value] : reported.items()) {
    if (!resolved.has(name)) {
      throw UsageError(fmt::format("{}: option \"{}\" is not an option of {} with {}; valid: {}",
                                   path.string(), name, config.scenario, config.adapter,
                                   fmt::join(option_names(resolved), ", ")));
    }
    if (!value.is_string() || value.get<std::string>() != resolved.get(name)) {
      throw UsageError(fmt::format(
          "{}: option {} is {} in \"options\" but the overrides give \"{}\": the report was "
          "edited or comes from another build",
          path.string(), name, json_brief(value), resolved.get(name)));
    }
  }
  for (const auto& [name, value] : resolved.values()) {
    if (!reported.contains(name)) {
      throw UsageError(fmt::format(
          "{}: option {} is missing from \"options\" (it resolves to \"{}\"): the report was "
          "edited or comes from another build",
          path.string(), name, value));
    }
  }
}

}  // namespace

ReplaySpec read_replay_spec(const std::filesystem::path& report_json) {
  // Only a regular file: a directory cannot be read, and opening a FIFO with no writer would block.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(report_json, ec)) {
    throw UsageError(
        fmt::format("{} is not a report file (a regular JSON file written with --report)",
                    report_json.string()));
  }
  std::string text;
  try {
    text = read_input_file(report_json.string());  // a regular file, of bounded size
  } catch (const InputError& e) {
    throw UsageError(e.what());
  }
  nlohmann::json j;
  try {
    // The whole file (anything after the JSON is an error), nested at most kJsonDepthMax deep.
    j = parse_json_bounded(text);
    const ReportFields field(report_json, j);
    if (!j.is_object()) field.fail("scenario", "is missing (the file is not a JSON object)");
    field.only_known_fields();
    ReplaySpec spec;
    spec.config.scenario = field.text("scenario");
    spec.config.adapter = field.text("adapter");
    spec.config.world = *world_kind_from_string(field.choice("world", {"sim", "real"}));
    spec.config.seed = field.seed("seed");
    spec.config.fencing_on = field.choice("fencing", {"on", "off"}) == "on";
    for (const auto& assignment : j.at("overrides"))
      spec.config.sets.push_back(assignment.get<std::string>());
    spec.trace_hash = field.text("trace_hash");
    // Reports written before the field existed hashed with version 1.
    spec.trace_hash_version =
        j.contains("trace_hash_version") ? field.version("trace_hash_version") : 1;
    spec.verdict = field.text("verdict");
    if (j.contains("workload")) spec.workload = j.at("workload");
    if (!j.contains("workload")) check_reported_options(report_json, j.at("options"), spec.config);
    return spec;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(
        fmt::format("{} is not a lockstep report: {}", report_json.string(), e.what()));
  } catch (const InputError& e) {
    throw UsageError(
        fmt::format("{} is not a lockstep report: {}", report_json.string(), e.what()));
  }
}

}  // namespace lockstep
