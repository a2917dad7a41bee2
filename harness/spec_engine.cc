#include "harness/spec_engine.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "base/check.h"
#include "harness/keyed_calls.h"
#include "sim/world.h"

namespace lockstep {

namespace {

// What the programs of one run share: the clients by index, and the entries that wait for an
// anchor. Lives as long as the run's closures.
struct SpecRun {
  ScenarioEnv* env = nullptr;
  std::vector<Client*> clients;
  std::vector<SpecEntry> anchored;   // in spec order
  std::set<int> programs_started;    // the clients with a program
  sim::NetworkOptions base_network;  // the simulator's network as the run was built
  // Per server, the crashes so far; per crash pair, the count its crash left (SpecFault).
  std::map<int, int> crashes_by_server;
  std::map<int, int> crash_seen_by_pair;

  sim::World& sim() { return *env->sim(); }
};

// What one run of a program carries from step to step.
struct ProgramState {
  std::optional<Lock> lock;
  std::optional<int64_t> value;  // what the last read gave
  int64_t started_us = 0;        // the program's start, by its client's monotonic clock
};

// Whether the step works on the program's lock (skipped while it has none). Every kind is named:
// a new one must say.
bool needs_lock(StepKind kind) {
  switch (kind) {
    case StepKind::read:
    case StepKind::write_next:
    case StepKind::increment:
    case StepKind::careful_increment:
    case StepKind::sleep_out_validity:
    case StepKind::extend:
    case StepKind::release:
    case StepKind::leave:
    case StepKind::is_locked:
    case StepKind::auto_extend:
    case StepKind::work_until_lost: return true;
    case StepKind::acquire:
    case StepKind::pause:
    case StepKind::sleep:
    case StepKind::sleep_until:
    case StepKind::sleep_until_whole_ms:
    case StepKind::crash:
    case StepKind::rw_hold:
    case StepKind::fifo_hold:
    case StepKind::fifo_clear:
    case StepKind::hold:
    case StepKind::stop_after:
    case StepKind::take_each_key: return false;
  }
  LOCKSTEP_CHECK(false, "every step kind says whether it needs the lock");
  return false;
}

// The careful holder of slow-grant: reads, works while the lock is valid, writes only if it still
// is, and leaves.
void careful_increment(Client& c, Lock& lock, int64_t work_ms) {
  const std::optional<int64_t> value = c.read(lock);
  const int64_t left_us = c.validity_end_us(lock) - c.clock().monotonic_us();
  if (left_us > 1) c.clock().sleep_for_us(std::min(work_ms * 1000, left_us - 1));
  if (value && c.clock().monotonic_us() < c.validity_end_us(lock)) c.write(lock, *value + 1);
  c.leave(lock);
}

// A fresh client after a sweep's heal: takes every key once, with retries that outlast the bound.
void take_each_key(Client& c, ScenarioWorld& world, const SpecStep& step) {
  constexpr int64_t kHold_ms = 1;  // its work inside the lock
  const int64_t delay_ms = std::max<int64_t>(10, step.ttl_ms / 10);
  const int64_t attempts = step.bound_us / 1000 / delay_ms + 2;
  const RetrySettings retry{.retry_delay_ms = delay_ms,
                            .retry_times = static_cast<int>(std::min<int64_t>(attempts, 100'000))};
  for (const std::string& key : step.keys) {
    // An acquire that fails (no primary while the set elects one, an outcome unknown) is asked
    // again, as a caller that needs the key would, until the bound has passed since it began.
    const TimeUs give_up_us = world.now_us() + step.bound_us;
    std::optional<Lock> lock;
    for (int64_t round = 0; round < attempts && !lock; ++round) {
      lock = c.acquire(key, step.ttl_ms, retry);
      if (lock || world.now_us() >= give_up_us) break;
      c.sleep_ms(delay_ms);
    }
    if (!lock) continue;
    c.increment(*lock, kHold_ms);
    c.release(*lock);
  }
}

// One step. False when the program ends here (a refused acquire that ends it).
bool run_step(SpecRun& run, Client& c, ProgramState& state, const SpecStep& step) {
  if (needs_lock(step.kind) && !state.lock) return true;
  switch (step.kind) {
    case StepKind::acquire:
      state.lock.reset();
      state.value.reset();
      state.lock = c.acquire(step.key, step.ttl_ms, step.retry.value_or(RetrySettings::none()));
      return state.lock.has_value() || !step.end_if_refused;
    case StepKind::read: state.value = c.read(*state.lock); return true;
    case StepKind::write_next:
      if (state.value) c.write(*state.lock, *state.value + 1);
      return true;
    case StepKind::increment: c.increment(*state.lock, step.ms); return true;
    case StepKind::careful_increment: careful_increment(c, *state.lock, step.ms); return true;
    case StepKind::pause: c.pause(step.ms); return true;
    case StepKind::sleep: c.sleep_ms(step.ms); return true;
    case StepKind::sleep_until:
      c.clock().sleep_for_us(state.started_us + step.ms * 1000 - c.clock().monotonic_us());
      return true;
    case StepKind::sleep_until_whole_ms:
      c.sleep_ms(std::max<int64_t>(
          0, state.started_us / 1000 + step.ms - c.clock().monotonic_us() / 1000));
      return true;
    case StepKind::sleep_out_validity:
      // Works until its validity ends by its own clock, and knows it.
      c.clock().sleep_for_us(state.lock->acquired_at_us() + step.ttl_ms * 1000 -
                             c.clock().monotonic_us());
      c.leave(*state.lock);
      return true;
    case StepKind::extend: c.extend(*state.lock, step.ttl_ms); return true;
    case StepKind::release: c.release(*state.lock); return true;
    case StepKind::leave: c.leave(*state.lock); return true;
    case StepKind::is_locked: c.is_locked(*state.lock); return true;
    case StepKind::crash: c.crash();
    case StepKind::auto_extend: c.auto_extend(*state.lock, step.ms); return true;
    case StepKind::work_until_lost:
      c.work_until_lost(*state.lock, step.ms, step.step_ms);
      return true;
    case StepKind::rw_hold:
      keyed_calls(run.env->backend())
          .rw_hold(c, step.key, step.shared ? keyed::RwMode::shared : keyed::RwMode::exclusive,
                   step.ms, step.pause_ms);
      return true;
    case StepKind::fifo_hold:
      keyed_calls(run.env->backend()).fifo_hold(c, step.key, step.ms, step.max_wait_ms);
      return true;
    case StepKind::fifo_clear:
      run.env->world().trace_linef("{} calls fifo clear()", c.name());
      keyed_calls(run.env->backend()).fifo_clear();
      return true;
    case StepKind::hold: run_hold_step(*run.env, c, step.hold); return true;
    case StepKind::stop_after: return run.env->world().now_us() < step.ms * 1000;
    case StepKind::take_each_key: take_each_key(c, run.env->world(), step); return true;
  }
  LOCKSTEP_CHECK(false, "every step kind is run");
  return false;
}

// The simulator's network as the run was built, with `change` made to it.
std::function<void()> set_network(const std::shared_ptr<SpecRun>& run,
                                  std::function<void(sim::NetworkOptions&)> change) {
  return [run, change = std::move(change)] {
    sim::NetworkOptions options = run->base_network;
    change(options);
    run->sim().network().set_options(options);
  };
}

// One action of a fault, on the backend, the world or the simulator.
std::function<void()> one_action(const std::shared_ptr<SpecRun>& run, const SpecFault& f) {
  ScenarioEnv& env = *run->env;
  Backend& backend = env.backend();
  ScenarioWorld& world = env.world();
  const int node = f.client >= 0 ? run->clients[static_cast<size_t>(f.client)]->node() : -1;
  switch (f.action) {
    case SpecAction::none: return [] {};
    case SpecAction::pause_client: return [&world, node, f] { world.pause(node, f.amount); };
    case SpecAction::kill_client: return [&world, node] { world.crash(node); };
    case SpecAction::partition_client:
      return [&backend, node, f] { backend.partition(node, f.amount != 0); };
    case SpecAction::heal: return [&backend] { backend.heal(); };
    case SpecAction::server_drift: return [&backend, f] { backend.set_server_drift(f.amount); };
    case SpecAction::jump_server_clocks:
      return [&backend, f] {
        for (int s = 0; s < backend.server_count(); ++s) backend.jump_server_clock(s, f.amount);
      };
    case SpecAction::jump_server_clock:
      return [&backend, f] { backend.jump_server_clock(f.server, f.amount); };
    case SpecAction::pause_server:
      return [&backend, f] { backend.pause_server(f.server, f.amount); };
    case SpecAction::crash_server:
      return [&backend, run, f] {
        const int crashes = ++run->crashes_by_server[f.server];
        if (f.crash_pair >= 0) run->crash_seen_by_pair[f.crash_pair] = crashes;
        backend.crash_server(f.server);
      };
    case SpecAction::restart_server:
      return [&backend, run, f] {
        if (f.crash_pair >= 0 &&
            run->crashes_by_server[f.server] != run->crash_seen_by_pair[f.crash_pair])
          return;  // crashed again since: that crash's restart brings it back
        backend.restart_server(f.server);
      };
    case SpecAction::end_session: return [&backend, node] { backend.end_session(node); };
    case SpecAction::reset_connections:
      return [&backend, node, f] { backend.reset_connections(node, f.amount); };
    case SpecAction::failover: break;  // recorded by schedule_failover_us, which acts itself
    case SpecAction::fifo_clear: return [&backend] { keyed_calls(backend).fifo_clear(); };
    case SpecAction::slow_server: return [&backend, f] { backend.slow_server(f.server, f.amount); };
    case SpecAction::jump_client_clock:
      return [run, node, f] { run->sim().jump_clock(node, f.amount); };
    case SpecAction::client_drift: return [run, node, f] { run->sim().set_drift(node, f.amount); };
    case SpecAction::network_latency:
      return set_network(
          run, [f](sim::NetworkOptions& o) { o.latency_us_min = o.latency_us_max = f.amount; });
    case SpecAction::network_loss:
      return set_network(run, [f](sim::NetworkOptions& o) {
        o.loss = {static_cast<uint64_t>(f.amount), 100};
      });
    case SpecAction::network_restore: return set_network(run, [](sim::NetworkOptions&) {});
    case SpecAction::stall_client:
      return [&backend, run, node, f] {
        // The backend's own partition, its cuts made holding: every service stalls alike.
        sim::Network& network = run->sim().network();
        network.set_cut_style(sim::CutStyle::hold);
        backend.partition(node, f.amount != 0);
        network.set_cut_style(sim::CutStyle::drop);
      };
  }
  LOCKSTEP_CHECK(false, "a failover is scheduled by itself");
  return {};
}

// The fault's action and then its further ones, as one.
std::function<void()> fault_action(const std::shared_ptr<SpecRun>& run, const SpecFault& f) {
  if (f.then.empty()) return one_action(run, f);
  std::vector<std::function<void()>> actions{one_action(run, f)};
  for (const SpecFault& then : f.then) actions.push_back(one_action(run, then));
  return [actions = std::move(actions)] {
    for (const std::function<void()>& act : actions) act();
  };
}

void schedule_at(const std::shared_ptr<SpecRun>& run, const SpecFault& f, int64_t at_us) {
  ScenarioEnv& env = *run->env;
  if (f.action == SpecAction::failover) return env.schedule_failover_us(at_us, f.what);
  if (f.action == SpecAction::kill_client) {
    return env.schedule_client_kill_us(at_us, *run->clients[static_cast<size_t>(f.client)], f.what,
                                       fault_action(run, f));
  }
  if (!f.recorded) return env.world().at(at_us, fault_action(run, f));
  env.schedule_fault_us(at_us, f.tag, f.what, fault_action(run, f), f.duration_us);
}

// A fault timed from a client's first grant: scheduled when the history records it.
void schedule_after_grant(const std::shared_ptr<SpecRun>& run, const SpecFault& f) {
  auto scheduled = std::make_shared<bool>(false);
  run->env->watch_history([run, f, scheduled](const HistoryEvent& e) {
    if (*scheduled || e.kind != EventKind::grant || e.client != f.after_grant_of) return;
    *scheduled = true;
    schedule_at(run, f, e.time_us + f.at_us);
  });
}

void take_entry(const std::shared_ptr<SpecRun>& run, SpecEntry e, int64_t from_us);

void run_steps(const std::shared_ptr<SpecRun>& run, Client& c, ProgramState& state,
               const SpecProgram& program, bool first_program) {
  for (int round = 0; round < program.repeat; ++round) {
    for (size_t i = 0; i < program.steps.size(); ++i) {
      if (!run_step(*run, c, state, program.steps[i])) return;
      if (!first_program || round > 0) continue;
      for (const SpecEntry& e : run->anchored) {
        if (e.after.client == program.client && e.after.step == static_cast<int>(i))
          take_entry(run, e, run->env->world().now_us());
      }
    }
  }
}

void run_program(const std::shared_ptr<SpecRun>& run, Client& c, const SpecProgram& program,
                 bool first_program) {
  ProgramState state;
  state.started_us = c.clock().monotonic_us();
  if (!program.leave_when_killed) return run_steps(run, c, state, program, first_program);
  try {
    run_steps(run, c, state, program, first_program);
  } catch (...) {  // killed from outside while inside: it is no longer inside
    if (state.lock) c.leave(*state.lock);
    throw;
  }
}

// Takes an entry, its times counted from from_us (0 for the build, an anchor's moment after). A
// program's steps move into its closure.
void take_entry(const std::shared_ptr<SpecRun>& run, SpecEntry e, int64_t from_us) {
  ScenarioEnv& env = *run->env;
  switch (e.kind) {
    case SpecEntry::Kind::add:
      run->clients.push_back(
          &env.add_client(e.client.name, e.client.clock_offset_us, e.client.drift_ppm));
      return;
    case SpecEntry::Kind::start: {
      // The client's first program is the one anchors wait on.
      const bool first_program = run->programs_started.insert(e.program.client).second;
      Client& client = *run->clients[static_cast<size_t>(e.program.client)];
      const int64_t start_ms = (from_us + e.program.start_ms * 1000) / 1000;
      const int64_t jitter_us = e.program.jitter_us;
      env.start(
          client, start_ms,
          [run, program = std::move(e.program), first_program](Client& c) {
            run_program(run, c, program, first_program);
          },
          jitter_us);
      return;
    }
    case SpecEntry::Kind::fault:
      if (e.fault.after_grant_of >= 0) return schedule_after_grant(run, e.fault);
      return schedule_at(run, e.fault, from_us + e.fault.at_us);
    case SpecEntry::Kind::cut:
      env.backend().partition_server(run->clients[static_cast<size_t>(e.cut.client)]->node(),
                                     e.cut.server, e.cut.two_way);
      return;
  }
}

// The actions only the simulator can take (its network, its clocks).
bool simulator_only(SpecAction action) {
  switch (action) {
    case SpecAction::jump_client_clock:
    case SpecAction::client_drift:
    case SpecAction::network_latency:
    case SpecAction::network_loss:
    case SpecAction::network_restore:
    case SpecAction::stall_client: return true;
    default: return false;
  }
}

void check_world(ScenarioEnv& env, const ScenarioSpec& spec) {
  if (!spec.needs_sim.empty()) env.require_sim(spec.needs_sim);
  for (const SpecEntry& e : spec.entries) {
    if (e.after.client >= 0) env.require_sim("a client or fault waits for a step of another");
    if (e.kind != SpecEntry::Kind::fault) continue;
    if (simulator_only(e.fault.action)) env.require_sim(spec_action_name(e.fault.action));
    for (const SpecFault& then : e.fault.then) {
      if (simulator_only(then.action)) env.require_sim(spec_action_name(then.action));
    }
  }
  if (spec.servers_required > 0 && env.backend().server_count() != spec.servers_required) {
    throw WorldUnsupported(fmt::format("the scenario is written for {} nodes (--set nodes={})",
                                       spec.servers_required, spec.servers_required));
  }
}

}  // namespace

void run_spec(ScenarioEnv& env, ScenarioSpec spec) {
  spec.validate();
  check_world(env, spec);
  if (spec.fixed_latency_us > 0) env.backend().set_fixed_latency(spec.fixed_latency_us);
  // Set before anything runs, so a backend that cannot make its servers drift refuses at once.
  if (spec.server_drift_ppm != 0) env.backend().set_server_drift(spec.server_drift_ppm);
  auto run = std::make_shared<SpecRun>();
  run->env = &env;
  if (env.sim() != nullptr) run->base_network = env.sim()->network().options();
  for (const SpecEntry& e : spec.entries) {
    if (e.after.client >= 0) run->anchored.push_back(e);
  }
  for (SpecEntry& e : spec.entries) {
    if (e.after.client < 0) take_entry(run, std::move(e), 0);
  }
  if (spec.liveness_bound_us) env.meta().liveness_bound_us = *spec.liveness_bound_us;
}

}  // namespace lockstep
