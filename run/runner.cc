#include "run/runner.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/check.h"
#include "checkers/excuse.h"
#include "harness/client_side_leases.h"
#include "harness/real_scenario_world.h"
#include "harness/recorder.h"
#include "harness/resource.h"
#include "harness/sim_scenario_world.h"
#include "lockstep/registry.h"
#include "sim/world.h"

namespace lockstep {

namespace {

const Scenario& scenario_or_throw(const std::string& name) {
  const Scenario* scenario = find_scenario(name);
  if (scenario == nullptr) {
    throw UsageError(
        fmt::format("unknown scenario \"{}\"; valid scenarios: {}", name, scenario_names()));
  }
  return *scenario;
}

const AdapterEntry& adapter_or_throw(const std::string& name) {
  const AdapterEntry* adapter = find_adapter(name);
  if (adapter == nullptr) {
    throw UsageError(
        fmt::format("unknown adapter \"{}\"; valid adapters: {}", name, adapter_names()));
  }
  return *adapter;
}

RunEnd run_end_of(sim::RunEnd end) {
  switch (end) {
    case sim::RunEnd::queue_empty: return RunEnd::complete;
    case sim::RunEnd::stopped: return RunEnd::stopped;
    case sim::RunEnd::event_bound: return RunEnd::event_bound;
    case sim::RunEnd::time_bound: return RunEnd::time_bound;
  }
  return RunEnd::error;
}

void write_trace_header(ScenarioWorld& world, const RunConfig& config, const Options& options) {
  world.trace_linef("run scenario={} adapter={} world={} seed={} fencing={}", config.scenario,
                    config.adapter, to_string(config.world), config.seed,
                    config.fencing_on ? "on" : "off");
  for (const auto& [name, value] : options.values()) world.trace_linef("param {}={}", name, value);
}

RunStats collect_stats(const History& history, TimeUs end_us) {
  RunStats stats;
  for (const HistoryEvent& e : history.events()) {
    if (e.kind == EventKind::invoke) ++stats.ops;
    if (e.kind == EventKind::complete && e.op == Op::acquire && e.outcome == Outcome::ok)
      ++stats.acquisitions;
  }
  stats.sim_time_us = end_us;
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

std::vector<std::string> excerpt_for(const Violation& v, const History& history,
                                     const sim::Trace& trace) {
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

std::string shell_quote(const std::string& word) {
  if (!word.empty() &&
      word.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.:/,") ==
          std::string::npos) {
    return word;
  }
  std::string out = "'";
  for (char ch : word) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

namespace {
std::string& program_name_storage() {
  static std::string name = "lockstep";
  return name;
}
}  // namespace

const std::string& program_name() { return program_name_storage(); }

void set_program_name(std::string name) { program_name_storage() = std::move(name); }

std::string replay_file_command(const std::string& file) {
  return file.empty() ? std::string()
                      : shell_quote(program_name()) + " replay " + shell_quote(file);
}

std::string RunReport::replay_command() const {
  if (config.scenario == kSwarmScenarioName) {  // no command line names a generated workload
    return replay_file_command(replay_file);
  }
  std::string cmd = fmt::format("{} run {} --adapter {} --world {} --seed {} --fencing {}",
                                shell_quote(program_name()), shell_quote(config.scenario),
                                shell_quote(config.adapter), to_string(config.world), config.seed,
                                config.fencing_on ? "on" : "off");
  for (const std::string& assignment : options.overrides())
    cmd += " --set " + shell_quote(assignment);
  return cmd;
}

Options resolve_options(const RunConfig& config) {
  return resolve_options(scenario_or_throw(config.scenario), config);
}

Options resolve_options(const Scenario& scenario, const RunConfig& config) {
  const AdapterEntry& adapter = adapter_or_throw(config.adapter);
  if (!scenario.applies_to(adapter)) {
    throw UsageError(fmt::format("scenario \"{}\" does not apply to adapter \"{}\"; it is for {}",
                                 scenario.name, adapter.name, scenario.fits_text));
  }
  if (!scenario.runs_in(config.world)) {
    throw UsageError(fmt::format("scenario \"{}\" needs faults that only exist in: {}",
                                 scenario.name, world_names(scenario.worlds)));
  }
  if (std::find(adapter.worlds.begin(), adapter.worlds.end(), config.world) ==
      adapter.worlds.end()) {
    throw UsageError(fmt::format("adapter \"{}\" does not run in world \"{}\"; its worlds: {}",
                                 adapter.name, to_string(config.world),
                                 world_names(adapter.worlds)));
  }
  Options options(scenario.options);
  for (const OptionSpec& spec : adapter.options) options.declare(spec);
  try {
    for (const std::string& assignment : config.sets) options.set(assignment);
    if (adapter.check_options) adapter.check_options(options);
  } catch (const OptionError& e) {
    throw UsageError(e.what());
  }
  return options;
}

ScenarioSpec scenario_spec(const RunConfig& config) {
  const Scenario& scenario = scenario_or_throw(config.scenario);
  const Options options = resolve_options(scenario, config);
  LOCKSTEP_CHECK(static_cast<bool>(scenario.spec), "every catalogue scenario is a spec");
  try {
    ScenarioSpec spec = scenario.spec(options, adapter_or_throw(config.adapter), config.world);
    spec.validate();
    return spec;
  } catch (const WorldUnsupported& e) {
    throw UsageError(fmt::format("scenario \"{}\": {}", scenario.name, e.what()));
  }
}

RunReport run_scenario(const RunConfig& config) {
  return run_scenario(scenario_or_throw(config.scenario), config);
}

namespace {

// A world (or the adapter's backend in it) that cannot do what the scenario or its options ask.
WorldUnsupportedError cannot_run(const Scenario& scenario, const ScenarioWorld& world,
                                 const WorldUnsupported& why) {
  return WorldUnsupportedError(fmt::format("scenario \"{}\" cannot run in world \"{}\": {}",
                                           scenario.name, to_string(world.kind()), why.what()));
}

// What both worlds share once the world exists: the recorder, the resource, the backend, the
// scenario's clients and faults. run() is called in between build and judge.
class RunAssembly {
 public:
  RunAssembly(ScenarioWorld& world, const Scenario& scenario, const AdapterEntry& adapter,
              RunReport& report, sim::World* sim)
      : world_(world),
        adapter_(adapter),
        recorder_({.now_us = [&world] { return world.now_us(); },
                   .trace_line =
                       [&world](const sim::TraceLine& line) { return world.add_trace_line(line); },
                   .current_client = [this]() -> int {
                     const int node = world_.current_node();
                     return node < 0 || env_ == nullptr ? -1 : env_->client_for_node(node);
                   },
                   .events_max = report.config.history_events_max,
                   .on_full =
                       [sim] {
                         if (sim != nullptr) sim->scheduler().stop();  // real: events dropped
                       },
                   .one_thread = sim != nullptr}),
        resource_(recorder_, {.fencing_on = report.config.fencing_on}),
        backend_env_{.world = world,
                     .recorder = recorder_,
                     .options = report.options,
                     .sim = sim,
                     .server_expiry = effective_traits(adapter, report.options).server_expiry} {
    write_trace_header(world, report.config, report.options);
    const BackendFactory& make = sim != nullptr ? adapter.make_sim : adapter.make_real;
    try {
      backend_ = make(backend_env_);
    } catch (const WorldUnsupported& e) {  // options this world's backend cannot honour
      throw cannot_run(scenario, world, e);
    }
    if (!backend_->records_leases()) leases_ = std::make_unique<ClientSideLeases>(recorder_);
    env_ = std::make_unique<ScenarioEnv>(world, recorder_, resource_, *backend_, adapter,
                                         report.options, leases_.get(), sim);
    HistoryMeta& meta = recorder_.history().meta;
    meta.servers = backend_->server_count();
    meta.quorum = backend_->quorum();
    meta.fencing_on = report.config.fencing_on;
    meta.leases_from_clients = leases_ != nullptr;
    meta.envelope = effective_traits(adapter, report.options).envelope;
    try {
      scenario.build_in(*env_);
    } catch (const WorldUnsupported& e) {
      throw cannot_run(scenario, world, e);
    }
    const TokenKind tokens = effective_traits(adapter, report.options).tokens;
    refuse_two_token_declarations(tokens);
    meta.monotonic_tokens = tokens != TokenKind::none;
    meta.errors_mean_not_applied =
        effective_traits(adapter, report.options).errors_mean_not_applied;
  }

  // What a lock says of its tokens is said once, in its traits; the adapter's fencing() (which
  // tells the Locker to keep them) must agree, or a run would judge tokens its expectations ignore.
  void refuse_two_token_declarations(TokenKind tokens) const {
    const FencingSupport wanted =
        tokens == TokenKind::none ? FencingSupport::none : FencingSupport::monotonic;
    for (const auto& client : env_->clients()) {
      if (client->fencing() == wanted) continue;
      throw UsageError(fmt::format(
          "adapter \"{}\" declares tokens={} in its traits, but its LockAdapter::fencing() says "
          "{}; "
          "make them agree (fencing() is monotonic exactly when tokens is monotonic or random)",
          adapter_.name, to_string(tokens), to_string(client->fencing())));
    }
  }

  // A lease lock whose grants nobody recorded would pass every lease check by default: a run in
  // which acquires succeeded but no lease was seen is an error, never an "ok".
  void refuse_blind_lease_checks(RunReport& report) const {
    if (adapter_.traits.family != LockFamily::lease || report.end != RunEnd::complete) return;
    if (report.stats.acquisitions == 0) return;
    for (const HistoryEvent& e : report.history.events()) {
      if (e.kind == EventKind::grant) return;
    }
    report.end = RunEnd::no_leases;
    report.end_message = fmt::format(
        "{} acquires succeeded but the servers recorded no lease, so lease_exclusion and ownership "
        "could not be judged: the adapter's lock keys must get a TTL when granted (SET PX, or "
        "PEXPIRE), or a lock whose deadline lives in its value must declare server_expiry = "
        "client_value and write \"OWNER:DEADLINE_MS\", or its backend must report grants to the "
        "recorder",
        report.stats.acquisitions);
  }

  // A run that ran out of events while client programs were unfinished: each of those clients is
  // parked with nothing left to wake it (a lost wakeup, a waiter nobody serves), which no bound
  // would ever end. One `stuck` event per such client, at the end, naming the operation it was in,
  // lets check_liveness judge it from the history alone. A client a fault killed is not stuck (its
  // fibers were unwound, and the history says it died); nor is a fiber on a server's node.
  void record_stuck(const std::vector<int>& unfinished_nodes) {
    std::set<int> stuck;
    for (int node : unfinished_nodes) {
      const int client = env_->client_for_node(node);
      if (client >= 0) stuck.insert(client);
    }
    if (stuck.empty()) return;
    struct Pending {
      Op op = Op::none;
      std::string key;
    };
    std::map<int, Pending> pending;  // client -> the operation it invoked and has not completed
    for (const HistoryEvent& e : recorder_.history().events()) {
      if (e.kind == EventKind::fault && e.kills_client) stuck.erase(e.client);
      if (e.client < 0 || stuck.count(e.client) == 0) continue;
      if (e.kind == EventKind::invoke) pending[e.client] = {.op = e.op, .key = e.key};
      if (e.kind == EventKind::complete) pending.erase(e.client);
    }
    for (int client : stuck) {
      const Pending& p = pending[client];
      recorder_.record({.kind = EventKind::stuck, .client = client, .key = p.key, .op = p.op});
    }
  }

  // The judgement, at the end of the trace (after its hash, which names the run): whether each
  // fault was inside the adapter's envelope, and for each violation the fault that excused it or
  // "not excused".
  void trace_judgement(const RunReport& report) {
    const History& history = recorder_.history();
    for (const HistoryEvent& e : history.events()) {
      if (e.kind != EventKind::fault || e.fault == FaultKind::other) continue;
      world_.trace_linef("judge fault at {}us {} ({}): {} the envelope", e.time_us,
                         to_string(e.fault), e.detail,
                         inside_envelope(history, e) ? "inside" : "outside");
    }
    for (const ReportedViolation& rv : report.violations) {
      const Violation& v = rv.violation;
      world_.trace_linef("judge violation {} at {}us key={}: excused by {}", to_string(v.invariant),
                         v.time_us, v.key, v.excuse);
    }
  }

  // After the run: the final counters, the heal time, and the verdict. judged = false: a client's
  // process broke its protocol (ClientProtocolBroken), so nothing of the run is judged: no checker
  // runs, and the report carries no violation.
  void judge(RunReport& report, const sim::Trace& trace, bool judged = true) {
    report.library = backend_->library();
    if (recorder_.full()) {
      report.end = RunEnd::error;
      report.end_message = fmt::format(
          "history bound: {} events recorded (RunConfig::history_events_max), the run was "
          "stopped there",
          report.config.history_events_max);
    }
    resource_.record_final_values();
    HistoryMeta& meta = recorder_.history().meta;
    meta.end_us = world_.now_us();
    meta.heal_us = heal_time(recorder_.history());
    recorder_.close();
    std::vector<Violation> found;
    if (judged) found = check_and_excuse(recorder_.history());
    for (Violation& v : found) {
      std::vector<std::string> excerpt = excerpt_for(v, recorder_.history(), trace);
      report.violations.push_back({.violation = std::move(v), .excerpt = std::move(excerpt)});
    }
    report.trace_hash = trace.hash_hex();
    if (!report.trace_hash.empty()) report.trace_hash_version = sim::Trace::kHashVersion;
    trace_judgement(report);
    report.stats = collect_stats(recorder_.history(), world_.now_us());
    if (report.config.keep_trace) report.trace = trace.lines();
    // The recorder is closed: nothing adds to its history any more, so the report takes it.
    report.history = std::move(recorder_.history());
    refuse_blind_lease_checks(report);
  }

 private:
  ScenarioWorld& world_;
  const AdapterEntry& adapter_;
  Recorder recorder_;
  GuardedResource resource_;
  BackendEnv backend_env_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<ClientSideLeases> leases_;
  std::unique_ptr<ScenarioEnv> env_;
};

void run_in_sim(const Scenario& scenario, const AdapterEntry& adapter, RunReport& report) {
  sim::World world(
      {.seed = report.config.seed,
       .scheduler = {.events_max = report.config.events_max},
       .trace_keep_lines_max = report.config.keep_trace ? report.config.trace_lines_kept_max : 0,
       .trace_hash = report.config.hash_trace || report.config.keep_trace});
  SimScenarioWorld scenario_world(world);
  RunAssembly run(scenario_world, scenario, adapter, report, &world);
  // Unfinished fibers (stopped by a bound, or stuck) are unwound before the run's clients go: their
  // handlers still touch them (a client leaving its critical section as it dies).
  struct UnwindFirst {
    sim::World& world;
    ~UnwindFirst() { world.unwind_unfinished(); }
  } unwind_first{world};
  sim::RunResult result;
  bool judged = true;
  try {
    result = world.run();
    report.end = run_end_of(result.end);
    report.end_message = result.message;
  } catch (const ClientProcessFailed& e) {
    report.end = RunEnd::error;
    report.end_message = e.what();
    result.events = world.scheduler().events_run();
    judged = dynamic_cast<const ClientProtocolBroken*>(&e) == nullptr;
  }
  // At a bound the run is an error already, and its unfinished clients may just be slow.
  if (report.end == RunEnd::complete) run.record_stuck(world.unfinished_fiber_nodes());
  run.judge(report, world.trace(), judged);
  report.stats.events = result.events;
}

void run_in_real(const Scenario& scenario, const AdapterEntry& adapter, RunReport& report) {
  RealScenarioWorld world({.seed = report.config.seed});
  RunAssembly run(world, scenario, adapter, report, nullptr);
  const RealRunResult result = world.run();
  report.end = result.complete ? RunEnd::complete : RunEnd::error;
  report.end_message = result.message;
  run.judge(report, world.trace(), !result.protocol_broken);
  report.stats.events = world.trace().size();
}

// A lease run in which no acquire succeeded and the backend failed them is about the backend, not
// the lock: an error that quotes what the backend answered (a server that is not what it claims,
// one that refuses every write), never a pass and not merely vacuous.
void refuse_broken_backend(RunReport& report) {
  if (report.stats.acquisitions != 0) return;
  for (const HistoryEvent& e : report.history.events()) {
    if (e.kind != EventKind::complete || e.op != Op::acquire ||
        (e.outcome != Outcome::error && e.outcome != Outcome::unknown))
      continue;
    report.end = RunEnd::error;
    report.end_message = fmt::format(
        "no acquire succeeded and the backend failed them ({}); the first: c{} acquire {}: {}",
        report.end_message, e.client, e.key, e.detail);
    return;
  }
}

}  // namespace

// The adapter's documented finding the run ended as exactly, if any.
std::string documented_finding(const AdapterEntry& adapter, const RunReport& report) {
  if (report.matches_expectation()) return "";
  for (const Finding& f : adapter.findings) {
    if (f.scenario == report.config.scenario && f.world == report.config.world &&
        f.end == report.end && f.violated == report.violated())
      return f.summary;
  }
  return "";
}

RunReport run_scenario(const Scenario& scenario, const RunConfig& config) {
  const auto wall_start = std::chrono::steady_clock::now();
  RunReport report{.config = config, .options = resolve_options(scenario, config)};
  report.config.scenario = scenario.name;
  const AdapterEntry& adapter = *find_adapter(config.adapter);
  report.expected = scenario.expected(effective_traits(adapter, report.options), report.options,
                                      config.fencing_on);
  try {
    if (config.world == WorldKind::sim) {
      run_in_sim(scenario, adapter, report);
    } else {
      run_in_real(scenario, adapter, report);
    }
  } catch (const ClientProtocolBroken& e) {
    // Before the run began: a driver that broke the protocol as it started (no ready line, a
    // wrong one, an exit). An error of the run, naming the rule, with nothing run or judged.
    report.end = RunEnd::error;
    report.end_message = e.what();
  }
  if (report.end == RunEnd::complete && scenario.premise_held &&
      !scenario.premise_held(report.history, report.options)) {
    report.end = RunEnd::vacuous;
    report.end_message = "its premise did not happen: " + scenario.premise;
    refuse_broken_backend(report);
  }
  report.finding = documented_finding(adapter, report);
  report.stats.wall_time_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                  std::chrono::steady_clock::now() - wall_start)
                                  .count();
  return report;
}

}  // namespace lockstep
