#include "scenarios/runner.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "scenarios/backend.h"
#include "scenarios/recorder.h"
#include "scenarios/resource.h"
#include "sim/world.h"

namespace lockstep {

namespace {

const Scenario& scenario_or_throw(const std::string& name) {
  const Scenario* scenario = find_scenario(name);
  if (scenario == nullptr) {
    throw UsageError(fmt::format("unknown scenario \"{}\"; valid scenarios: {}", name, scenario_names()));
  }
  return *scenario;
}

const AdapterEntry& adapter_or_throw(const std::string& name) {
  const AdapterEntry* adapter = find_adapter(name);
  if (adapter == nullptr) {
    throw UsageError(fmt::format("unknown adapter \"{}\"; valid adapters: {}", name, adapter_names()));
  }
  return *adapter;
}

std::string shell_quote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.:/,") ==
                           std::string::npos) {
    return word;
  }
  std::string out = "'";
  for (char ch : word) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::string run_end_name(sim::RunEnd end) {
  switch (end) {
    case sim::RunEnd::queue_empty: return "complete";
    case sim::RunEnd::stopped: return "stopped";
    case sim::RunEnd::event_bound: return "event_bound";
    case sim::RunEnd::time_bound: return "time_bound";
  }
  return "unknown";
}

void write_trace_header(sim::World& world, const RunConfig& config, const Options& options) {
  world.trace_line(fmt::format("run scenario={} adapter={} world={} seed={} fencing={}", config.scenario,
                               config.adapter, config.world, config.seed, config.fencing_on ? "on" : "off"));
  for (const auto& [name, value] : options.values()) world.trace_line(fmt::format("param {}={}", name, value));
}

RunStats collect_stats(const History& history, const sim::World& world) {
  RunStats stats;
  for (const HistoryEvent& e : history.events()) {
    if (e.kind == EventKind::invoke) ++stats.ops;
    if (e.kind == EventKind::complete && e.op == Op::acquire && e.outcome == Outcome::ok) ++stats.acquisitions;
  }
  stats.sim_time_us = world.now_us();
  return stats;
}

// The heal time is when the last fault with a duration ends; instant faults heal at once.
TimeUs heal_time(const History& history) {
  TimeUs heal_us = 0;
  for (const HistoryEvent& e : history.events()) {
    if (e.kind == EventKind::fault) heal_us = std::max(heal_us, e.end_us);
  }
  return heal_us;
}

std::vector<std::string> excerpt_for(const Violation& v, const History& history, const sim::Trace& trace) {
  std::vector<std::string> lines;
  for (size_t index : v.events) {
    if (index >= history.size()) continue;
    std::string_view line = trace.line(history[index].trace_line);
    if (!line.empty()) lines.emplace_back(line);
  }
  return lines;
}

}  // namespace

Expectation RunReport::violated() const {
  Expectation out;
  for (const ReportedViolation& v : violations) out.insert(v.violation.invariant);
  return out;
}

std::string RunReport::replay_command() const {
  std::string cmd = fmt::format("lockstep run {} --adapter {} --world {} --seed {} --fencing {}",
                                shell_quote(config.scenario), shell_quote(config.adapter), config.world, config.seed,
                                config.fencing_on ? "on" : "off");
  for (const std::string& assignment : options.overrides()) cmd += " --set " + shell_quote(assignment);
  return cmd;
}

Options resolve_options(const RunConfig& config) { return resolve_options(scenario_or_throw(config.scenario), config); }

Options resolve_options(const Scenario& scenario, const RunConfig& config) {
  const AdapterEntry& adapter = adapter_or_throw(config.adapter);
  if (!scenario.applies_to(adapter.name)) {
    throw UsageError(fmt::format("scenario \"{}\" does not apply to adapter \"{}\"; it applies to: {}",
                                 scenario.name, adapter.name, fmt::join(scenario.adapters, ", ")));
  }
  if (std::find(adapter.worlds.begin(), adapter.worlds.end(), config.world) == adapter.worlds.end()) {
    throw UsageError(fmt::format("adapter \"{}\" does not run in world \"{}\"; its worlds: {}", adapter.name,
                                 config.world, fmt::join(adapter.worlds, ", ")));
  }
  Options options(scenario.options);
  for (const OptionSpec& spec : adapter.options) options.declare(spec);
  try {
    for (const std::string& assignment : config.sets) options.set(assignment);
  } catch (const OptionError& e) {
    throw UsageError(e.what());
  }
  return options;
}

RunReport run_scenario(const RunConfig& config) { return run_scenario(scenario_or_throw(config.scenario), config); }

RunReport run_scenario(const Scenario& scenario, const RunConfig& config) {
  const auto wall_start = std::chrono::steady_clock::now();
  RunReport report{.config = config, .options = resolve_options(scenario, config)};
  report.config.scenario = scenario.name;
  const AdapterEntry& adapter = *find_adapter(config.adapter);
  report.expected = scenario.expected(adapter.name, report.options, config.fencing_on);

  sim::World world({.seed = config.seed,
                    .scheduler = {.max_events = config.max_events},
                    .trace_keep_lines_max = config.keep_trace ? size_t{2'000'000} : size_t{0}});
  const ScenarioEnv* env_ptr = nullptr;  // set once the clients' environment exists
  Recorder recorder({.now_us = [&world] { return world.now_us(); },
                     .trace_line = [&world](std::string_view text) { return world.trace_line(text); },
                     .current_client = [&world, &env_ptr]() -> int {
                       if (!world.in_fiber() || env_ptr == nullptr) return -1;
                       return env_ptr->client_for_node(world.current_node());
                     }});
  write_trace_header(world, config, report.options);
  GuardedResource resource(recorder, {.fencing_on = config.fencing_on});
  BackendEnv backend_env{.world = world, .recorder = recorder, .options = report.options};
  std::unique_ptr<SimBackend> backend = adapter.make_sim(backend_env);
  ScenarioEnv env(world, recorder, resource, *backend, report.options);
  env_ptr = &env;

  HistoryMeta& meta = recorder.history().meta;
  meta.servers = static_cast<int>(backend->server_nodes().size());
  meta.quorum = backend->quorum();
  meta.fencing_on = config.fencing_on;
  scenario.build(env);
  meta.monotonic_tokens = !env.clients().empty() && env.clients().front()->fencing() == FencingSupport::monotonic;

  sim::RunResult result = world.run();
  resource.record_final_values();
  meta.end_us = world.now_us();
  meta.heal_us = heal_time(recorder.history());
  recorder.close();

  report.end = run_end_name(result.end);
  report.end_message = result.message;
  for (Violation& v : check_all(recorder.history())) {
    std::vector<std::string> excerpt = excerpt_for(v, recorder.history(), world.trace());
    report.violations.push_back({.violation = std::move(v), .excerpt = std::move(excerpt)});
  }
  report.trace_hash = world.trace().hash_hex();
  report.stats = collect_stats(recorder.history(), world);
  report.stats.events = result.events;
  if (config.keep_trace) report.trace = world.trace().lines();
  report.history = recorder.history();
  report.stats.wall_time_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                  std::chrono::steady_clock::now() - wall_start)
                                  .count();
  return report;
}

}  // namespace lockstep
