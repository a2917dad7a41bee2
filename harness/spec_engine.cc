#include "harness/spec_engine.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "base/check.h"
#include "harness/keyed_calls.h"

namespace lockstep {

namespace {

// What the programs of one run share: the clients by index, and the entries that wait for an
// anchor. Lives as long as the run's closures.
struct SpecRun {
  ScenarioEnv* env = nullptr;
  std::vector<Client*> clients;
  std::vector<SpecEntry> anchored;  // in spec order
  std::set<int> programs_started;   // the clients with a program
};

// What one run of a program carries from step to step.
struct ProgramState {
  std::optional<Lock> lock;
  std::optional<int64_t> value;  // what the last read gave
  int64_t started_us = 0;        // the program's start, by its client's monotonic clock
};

bool needs_lock(StepKind kind) {
  switch (kind) {
    case StepKind::acquire:
    case StepKind::pause:
    case StepKind::sleep:
    case StepKind::sleep_until:
    case StepKind::sleep_until_whole_ms:
    case StepKind::crash:
    case StepKind::rw_hold:
    case StepKind::fifo_hold: return false;
    default: return true;
  }
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
                   step.ms);
      return true;
    case StepKind::fifo_hold:
      keyed_calls(run.env->backend()).fifo_hold(c, step.key, step.ms, step.max_wait_ms);
      return true;
  }
  LOCKSTEP_CHECK(false, "every step kind is run");
  return false;
}

// The fault's action, on the backend or the world.
std::function<void()> fault_action(ScenarioEnv& env, Client* client, const SpecFault& f) {
  Backend& backend = env.backend();
  ScenarioWorld& world = env.world();
  const int node = client != nullptr ? client->node() : -1;
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
    case SpecAction::crash_server: return [&backend, f] { backend.crash_server(f.server); };
    case SpecAction::restart_server: return [&backend, f] { backend.restart_server(f.server); };
    case SpecAction::end_session: return [&backend, node] { backend.end_session(node); };
    case SpecAction::reset_connections:
      return [&backend, node, f] { backend.reset_connections(node, f.amount); };
    case SpecAction::failover: break;  // recorded by schedule_failover_us, which acts itself
    case SpecAction::fifo_clear: return [&backend] { keyed_calls(backend).fifo_clear(); };
  }
  return {};
}

void schedule_at(ScenarioEnv& env, Client* client, const SpecFault& f, int64_t at_us) {
  if (f.action == SpecAction::failover) return env.schedule_failover_us(at_us, f.what);
  if (f.action == SpecAction::kill_client)
    return env.schedule_client_kill_us(at_us, *client, f.what, fault_action(env, client, f));
  env.schedule_fault_us(at_us, f.tag, f.what, fault_action(env, client, f), f.duration_us);
}

// A fault timed from a client's first grant: scheduled when the history records it.
void schedule_after_grant(ScenarioEnv& env, Client* client, const SpecFault& f) {
  auto scheduled = std::make_shared<bool>(false);
  env.watch_history([&env, client, f, scheduled](const HistoryEvent& e) {
    if (*scheduled || e.kind != EventKind::grant || e.client != f.after_grant_of) return;
    *scheduled = true;
    schedule_at(env, client, f, e.time_us + f.at_us);
  });
}

void take_entry(const std::shared_ptr<SpecRun>& run, const SpecEntry& e, int64_t from_us);

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

// Takes an entry, its times counted from from_us (0 for the build, an anchor's moment after).
void take_entry(const std::shared_ptr<SpecRun>& run, const SpecEntry& e, int64_t from_us) {
  ScenarioEnv& env = *run->env;
  switch (e.kind) {
    case SpecEntry::Kind::add:
      run->clients.push_back(
          &env.add_client(e.client.name, e.client.clock_offset_us, e.client.drift_ppm));
      return;
    case SpecEntry::Kind::start: {
      // The client's first program is the one anchors wait on.
      const bool first_program = run->programs_started.insert(e.program.client).second;
      env.start(
          *run->clients[static_cast<size_t>(e.program.client)],
          (from_us + e.program.start_ms * 1000) / 1000,
          [run, program = e.program, first_program](Client& c) {
            run_program(run, c, program, first_program);
          },
          e.program.jitter_us);
      return;
    }
    case SpecEntry::Kind::fault: {
      Client* client =
          e.fault.client >= 0 ? run->clients[static_cast<size_t>(e.fault.client)] : nullptr;
      if (e.fault.after_grant_of >= 0) return schedule_after_grant(env, client, e.fault);
      return schedule_at(env, client, e.fault, from_us + e.fault.at_us);
    }
    case SpecEntry::Kind::cut:
      env.backend().partition_server(run->clients[static_cast<size_t>(e.cut.client)]->node(),
                                     e.cut.server, e.cut.two_way);
      return;
  }
}

void check_world(ScenarioEnv& env, const ScenarioSpec& spec) {
  if (!spec.needs_sim.empty()) env.require_sim(spec.needs_sim);
  for (const SpecEntry& e : spec.entries) {
    if (e.after.client >= 0) env.require_sim("a client or fault waits for a step of another");
  }
  if (spec.servers_required > 0 && env.backend().server_count() != spec.servers_required) {
    throw WorldUnsupported(fmt::format("the scenario is written for {} nodes (--set nodes={})",
                                       spec.servers_required, spec.servers_required));
  }
}

}  // namespace

void run_spec(ScenarioEnv& env, const ScenarioSpec& spec) {
  spec.validate();
  check_world(env, spec);
  if (spec.fixed_latency_us > 0) env.backend().set_fixed_latency(spec.fixed_latency_us);
  // Set before anything runs, so a backend that cannot make its servers drift refuses at once.
  if (spec.server_drift_ppm != 0) env.backend().set_server_drift(spec.server_drift_ppm);
  auto run = std::make_shared<SpecRun>();
  run->env = &env;
  for (const SpecEntry& e : spec.entries) {
    if (e.after.client >= 0) run->anchored.push_back(e);
  }
  for (const SpecEntry& e : spec.entries) {
    if (e.after.client < 0) take_entry(run, e, 0);
  }
  if (spec.liveness_bound_us) env.meta().liveness_bound_us = *spec.liveness_bound_us;
}

}  // namespace lockstep
