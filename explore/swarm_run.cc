// Running a swarm spec as a scenario (explore/swarm.h: make_swarm_scenario): the spec becomes a
// scenario spec (harness/scenario_spec.h), its clients' programs, its faults on the simulator's
// clock, the heal phase and the healed clients as data, run by the engine that runs every named
// scenario (harness/spec_engine.h); and the premise a seed is judged on.
#include <algorithm>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "base/check.h"
#include "explore/key_name.h"
#include "explore/swarm.h"
#include "harness/spec_engine.h"
#include "lockstep/registry.h"
#include "run/runner.h"

namespace lockstep {

namespace {

// What turning one SwarmSpec into a scenario spec needs besides it: the backend's shape, and the
// bound a healed client waits for.
struct Compiling {
  const SwarmSpec& spec;
  ScenarioEnv& env;
  int64_t liveness_bound_us = 0;
  bool network = false;  // the heal ends cuts and restores the network
  ScenarioSpec out;
};

HoldStep hold_of(const SwarmSpec& spec, const SwarmStep& step) {
  const int64_t ttl_ms = step.ttl_ms > 0 ? step.ttl_ms : spec.ttl_ms;
  return {.key = key_name(step.key),
          .ttl_ms = ttl_ms,
          .extend_ttl_ms = step.extend_ttl_ms > 0 ? step.extend_ttl_ms : ttl_ms,
          .hold_ms = step.hold_ms,
          .pause_ms = step.pause_ms,
          .extend = step.extend,
          .late_ms = step.late_ms,
          .release = step.release,
          .auto_extend = step.auto_extend,
          .careful = spec.careful,
          .release_pause_after_us = step.release_pause_after_us,
          .release_pause_ms = step.release_pause_ms,
          .acquire_crash_after_us = step.acquire_crash_after_us,
          .acquire_pause_after_us = step.acquire_pause_after_us,
          .acquire_pause_ms = step.acquire_pause_ms,
          .retry = {.retry_delay_ms = spec.retry_delay_ms,
                    .retry_times = spec.retry_times,
                    .retry_jitter_ms = spec.retry_jitter_ms}};
}

// One swarm step: its gap, then (only inside the safety phase) its turn on the key.
constexpr size_t kSpecStepsPerSwarmStep = 3;
void add_steps(const SwarmSpec& spec, const SwarmStep& step, std::vector<SpecStep>& out) {
  out.push_back({.kind = StepKind::sleep, .ms = step.gap_ms});
  out.push_back({.kind = StepKind::stop_after, .ms = spec.safety_ms});
  if (spec.family == LockFamily::lease) {
    out.push_back({.kind = StepKind::hold, .hold = hold_of(spec, step)});
  } else if (spec.family == LockFamily::keyed_fifo) {
    if (step.clear) {
      out.push_back({.kind = StepKind::fifo_clear});
    } else {
      out.push_back({.kind = StepKind::fifo_hold, .key = key_name(step.key), .ms = step.hold_ms});
    }
  } else {
    out.push_back({.kind = StepKind::rw_hold,
                   .key = key_name(step.key),
                   .ms = step.hold_ms,
                   .shared = step.shared,
                   .pause_ms = step.pause_ms});
  }
}

// A client's programs: one over all its steps, or (concurrent) two fibers over its even and its
// odd steps, over the same lock client, as two threads of one program would.
void add_client(Compiling& c, const SwarmClient& plan, int index) {
  const int client = c.out.add_client(fmt::format("c{}", index), 0, plan.drift_ppm);
  for (int fiber : plan.concurrent ? std::vector<int>{0, 1} : std::vector<int>{-1}) {
    std::vector<SpecStep> steps;
    steps.reserve(kSpecStepsPerSwarmStep * plan.steps.size());
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      if (fiber < 0 || static_cast<int>(i % 2) == fiber) add_steps(c.spec, plan.steps[i], steps);
    }
    c.out.start(client, plan.start_ms, std::move(steps));  // a fiber with no steps starts too
  }
}

// A fault recorded as it strikes, and (for one that lasts) its end, unrecorded, when it ends.
void add_lasting(Compiling& c, SpecFault strike, int64_t end_ms, SpecFault end) {
  c.out.strike(std::move(strike));
  end.at_us = end_ms * 1000;
  end.recorded = false;
  c.out.strike(std::move(end));
}

void add_fault(Compiling& c, const SwarmFault& f, int index) {
  const std::string what = describe_fault(f);
  const FaultTag on_client{.kind = f.kind, .client = f.client, .amount = f.amount};
  const FaultTag on_servers{.kind = f.kind, .amount = f.amount};
  const int64_t at_us = f.at_ms * 1000;
  const int64_t duration_us = f.duration_ms * 1000;
  const int64_t end_ms = f.at_ms + f.duration_ms;
  const int servers = c.env.backend().server_count();
  switch (f.kind) {
    case FaultKind::pause:
      return c.out.strike(pause_client_fault(f.client, at_us, duration_us, what));
    case FaultKind::crash:
      return c.out.strike(
          {.action = SpecAction::kill_client, .at_us = at_us, .client = f.client, .what = what});
    case FaultKind::clock_jump:
      return c.out.strike({.action = SpecAction::jump_client_clock,
                           .at_us = at_us,
                           .client = f.client,
                           .amount = f.amount * 1000,
                           .tag = {.kind = f.kind, .client = f.client, .amount = f.amount * 1000},
                           .what = what});
    case FaultKind::server_clock_jump:
      return c.out.strike({.action = SpecAction::jump_server_clocks,
                           .at_us = at_us,
                           .amount = f.amount * 1000,
                           .tag = {.kind = f.kind, .amount = f.amount * 1000},
                           .what = what});
    case FaultKind::failover:
      return c.out.strike({.action = SpecAction::failover, .at_us = at_us, .what = what});
    case FaultKind::server_drift:
      return add_lasting(c,
                         {.action = SpecAction::server_drift,
                          .at_us = at_us,
                          .amount = f.amount,
                          .duration_us = duration_us,
                          .tag = on_servers,
                          .what = what},
                         end_ms, {.action = SpecAction::server_drift});
    case FaultKind::latency:
    case FaultKind::loss:
      return add_lasting(c,
                         {.action = f.kind == FaultKind::latency ? SpecAction::network_latency
                                                                 : SpecAction::network_loss,
                          .at_us = at_us,
                          .amount = f.amount,
                          .duration_us = duration_us,
                          .tag = on_servers,
                          .what = what},
                         end_ms, {.action = SpecAction::network_restore});
    case FaultKind::partition:
    case FaultKind::stall:
      return add_lasting(c,
                         {.action = f.kind == FaultKind::partition ? SpecAction::partition_client
                                                                   : SpecAction::stall_client,
                          .at_us = at_us,
                          .client = f.client,
                          .amount = f.amount,
                          .duration_us = duration_us,
                          .tag = on_client,
                          .what = what},
                         end_ms, {.action = SpecAction::heal});
    case FaultKind::reset:
      return c.out.strike({.action = SpecAction::reset_connections,
                           .at_us = at_us,
                           .client = f.client,
                           .amount = duration_us,
                           .duration_us = duration_us,
                           .tag = on_client,
                           .what = what});
    case FaultKind::server_restart: {
      // Overlapping restarts of one server keep it down for the union of their windows: a
      // restart brings it back only if no later crash took it down again (crash_pair).
      const int server = f.server % servers;
      const std::string name = std::to_string(server);
      c.out.strike({.action = SpecAction::crash_server,
                    .at_us = at_us,
                    .server = server,
                    .tag = {.kind = FaultKind::server_crash, .server = name},
                    .what = fmt::format("server #{} crashes", server),
                    .crash_pair = index});
      return c.out.strike(
          {.action = SpecAction::restart_server,
           .at_us = at_us + f.amount * 1000,
           .server = server,
           .tag = {.kind = FaultKind::server_restart, .server = name, .amount = f.amount * 1000},
           .what = fmt::format("server #{} restarts after {}ms down", server, f.amount),
           .crash_pair = index});
    }
    case FaultKind::server_pause: {
      const int server = f.server % servers;
      return c.out.strike(
          {.action = SpecAction::pause_server,
           .at_us = at_us,
           .server = server,
           .amount = duration_us,
           .duration_us = duration_us,
           .tag = {.kind = FaultKind::server_pause, .server = std::to_string(server)},
           .what = what});
    }
    case FaultKind::clock_drift: return;  // per client, at creation
    default: LOCKSTEP_CHECK(false, "a swarm spec holds only the kinds a sweep draws");
  }
}

// Each slow server is a latency fault on it through the safety phase, healed with the others:
// recorded, so the judge can tell a lock that claims no tolerance of latency what slowed it.
void add_slow_servers(Compiling& c) {
  const std::vector<int64_t>& delays_us = c.spec.server_delays_us;
  const int servers = std::min(c.env.backend().server_count(), static_cast<int>(delays_us.size()));
  for (int server = 0; server < servers; ++server) {
    const int64_t delay_us = delays_us[static_cast<size_t>(server)];
    if (delay_us == 0) continue;
    add_lasting(
        c,
        {.action = SpecAction::slow_server,
         .server = server,
         .amount = delay_us,
         .duration_us = c.spec.safety_ms * 1000,
         .tag = {.kind = FaultKind::latency, .server = std::to_string(server), .amount = delay_us},
         .what = fmt::format("server #{} slow: +{}us each way", server, delay_us)},
        c.spec.safety_ms, {.action = SpecAction::slow_server, .server = server});
  }
}

// At the end of the safety phase every fault heals at once, in one recorded fault.
void add_heal(Compiling& c) {
  SpecFault heal{.action = SpecAction::none,
                 .at_us = c.spec.safety_ms * 1000,
                 .what = "heal: every fault ends"};
  if (c.network) {
    heal.then.push_back({.action = SpecAction::heal});
    heal.then.push_back({.action = SpecAction::network_restore});
  }
  if (c.spec.has_fault(FaultKind::server_drift))
    heal.then.push_back({.action = SpecAction::server_drift});
  for (size_t i = 0; i < c.spec.clients.size(); ++i) {
    if (c.spec.clients[i].drift_ppm != 0) {
      heal.then.push_back({.action = SpecAction::client_drift, .client = static_cast<int>(i)});
    }
  }
  c.out.strike(std::move(heal));
}

// A fresh client after the heal takes every key once, with retries that outlast the bound.
void add_heal_clients(Compiling& c) {
  std::vector<std::string> keys;
  for (int key = 0; key < c.spec.keys; ++key) keys.push_back(key_name(key));
  for (int i = 0; i < c.spec.heal_clients; ++i) {
    c.out.start(c.out.add_client(fmt::format("h{}", i)), c.spec.safety_ms + 1,
                {{.kind = StepKind::take_each_key,
                  .ttl_ms = c.spec.ttl_ms,
                  .keys = keys,
                  .bound_us = c.liveness_bound_us}});
  }
}

// What the spec's faults may add to an acquire's wait beyond the spec's own bound, in true time.
// A request lost to a fault (a partition, lost messages, a server that died or stopped) leaves its
// call waiting out the backend's timeout, as the lock is built to; a lost primary or leader leaves
// every call waiting for an election (Backend::election_us). Both run on clocks a drift may slow
// by up to half (drawn drifts stay above -300,000 ppm): twice as long in true time. Each such fault
// may cost every acquire chain one of each; one more timeout covers a call on the wire at the heal.
int64_t fault_recovery_allowance_us(const SwarmSpec& spec, const Backend& backend) {
  const int64_t timeout_us = backend.call_timeout_us();
  const int64_t election_us = backend.election_us();
  LOCKSTEP_CHECK(timeout_us >= 0 && election_us >= 0, "timeouts are not negative");
  int64_t losing_faults = 0;
  int64_t leader_faults = 0;
  for (const SwarmFault& f : spec.faults) {
    switch (f.kind) {
      case FaultKind::partition:
      case FaultKind::stall:
      case FaultKind::loss:
      case FaultKind::reset: ++losing_faults; break;
      case FaultKind::failover:
      case FaultKind::server_restart:
      case FaultKind::server_pause:
        ++losing_faults;
        ++leader_faults;
        break;
      default: break;
    }
  }
  constexpr int64_t kSlowClockFactor = 2;
  return kSlowClockFactor * ((losing_faults + 1) * timeout_us + leader_faults * election_us);
}

// The swarm spec as a scenario spec, for this run's backend.
ScenarioSpec compile(const SwarmSpec& spec, ScenarioEnv& env, int64_t allowance_us) {
  Compiling c{
      .spec = spec,
      .env = env,
      .liveness_bound_us = spec.liveness_bound_us() + allowance_us,
      .network = spec.family == LockFamily::lease && env.adapter().traits.sim_faults.network};
  c.out.needs_sim = "swarm faults are injected by the simulator";
  c.out.fixed_latency_us = spec.fixed_latency_us;
  // At most: a slow server's strike and end, a client's add and two starts, a fault's two
  // entries, the heal, a heal client's add and start.
  c.out.entries.reserve(2 * spec.server_delays_us.size() + 3 * spec.clients.size() +
                        2 * spec.faults.size() + 1 + 2 * static_cast<size_t>(spec.heal_clients));
  add_slow_servers(c);
  for (size_t i = 0; i < spec.clients.size(); ++i)
    add_client(c, spec.clients[i], static_cast<int>(i));
  for (size_t i = 0; i < spec.faults.size(); ++i) add_fault(c, spec.faults[i], static_cast<int>(i));
  add_heal(c);
  add_heal_clients(c);
  if (spec.family == LockFamily::lease) c.out.liveness_bound_us = c.liveness_bound_us;
  return std::move(c.out);
}

// The world is checked by the engine (the compiled spec needs the simulator), and before that by
// the runner (the swarm scenario runs in the simulator only).
void build_swarm(const SwarmSpec& spec, ScenarioEnv& env) {
  if (env.world().trace_wants_text()) {  // a sweep's tallied seeds need no param lines
    for (const std::string& line : describe_params(spec)) env.world().trace_linef("param {}", line);
  }
  const int64_t allowance_us = fault_recovery_allowance_us(spec, env.backend());
  if (env.world().trace_wants_text() && allowance_us > 0)
    env.world().trace_linef("param swarm.fault_recovery_allowance_us={}", allowance_us);
  run_spec(env, compile(spec, env, allowance_us));
}

}  // namespace

Scenario make_swarm_scenario(SwarmSpec spec) {
  spec.validate();
  const TimeUs safety_us = spec.safety_ms * 1000;
  auto shared = std::make_shared<const SwarmSpec>(std::move(spec));
  return {
      .name = kSwarmScenarioName,
      .description = "a swarm-drawn workload and fault schedule (lockstep sweep)",
      .worlds = {WorldKind::sim},
      .expected = [](const AdapterTraits&, const Options&, bool) { return Expectation{}; },
      .build = [shared](ScenarioEnv& env) { build_swarm(*shared, env); },
      // What a seed is about: the lock held while its faults could strike. A run in which no
      // acquire succeeded in the safety phase (a lock that fails every acquire, steps swallowed
      // by pauses) judged nothing it claims to.
      .premise = "a lock was held during the safety phase",
      .premise_held =
          [safety_us](const History& history, const Options&) {
            for (const HistoryEvent& e : history.events()) {
              if (e.time_us >= safety_us) return false;
              if (e.kind == EventKind::complete && e.op == Op::acquire && e.outcome == Outcome::ok)
                return true;
            }
            return false;
          },
  };
}

}  // namespace lockstep
