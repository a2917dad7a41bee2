// Running a swarm spec as a scenario (explore/swarm.h: make_swarm_scenario): its clients' programs,
// its faults on the simulator's clock, the heal phase, and the premise a seed is judged on.
#include <algorithm>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "base/check.h"
#include "explore/key_name.h"
#include "explore/swarm.h"
#include "harness/keyed_calls.h"
#include "lockstep/registry.h"
#include "run/runner.h"
#include "sim/world.h"

namespace lockstep {

namespace {

constexpr int64_t kHealHold_ms = 1;  // a heal-phase client's work inside the lock

}  // namespace

namespace {

// What the programs and faults of one run share. Lives as long as the run's closures.
struct SwarmRun {
  SwarmSpec spec;
  ScenarioEnv* env = nullptr;
  std::vector<Client*> clients;  // the safety-phase clients, by spec index
  sim::NetworkOptions base_network;
  bool network = false;
  // Per server, how many crashes a server_restart fault has scheduled so far: a restart brings
  // its server back only if no later crash took it down again, so overlapping restart faults on
  // one server keep it down for the union of their windows (never a restart of a live server).
  std::map<int, int> crashes_by_server;
  // The spec's liveness bound plus the calls its faults may leave waiting out a timeout
  // (fault_recovery_allowance_us); set when the run is built.
  int64_t liveness_bound_us = 0;

  sim::World& sim() { return *env->sim(); }
  bool safety_over() { return env->world().now_us() >= spec.safety_ms * 1000; }
  RetrySettings retry() const {
    return {.retry_delay_ms = spec.retry_delay_ms,
            .retry_times = spec.retry_times,
            .retry_jitter_ms = spec.retry_jitter_ms};
  }
};

// A fault timed from a call the client is about to make.
void aim_at_call(SwarmRun& run, int64_t after_us, FaultTag tag, std::string what,
                 std::function<void()> action, int64_t duration_us = 0) {
  run.env->schedule_fault_us(run.env->world().now_us() + after_us, std::move(tag), std::move(what),
                             std::move(action), duration_us);
}

// A careful holder's work: sleeps duration_ms, but only until the lock's validity ends (by the
// client's clock). False, and out of the critical section, when the validity ended first.
bool careful_work_us(Client& c, Lock& lock, int64_t duration_us) {
  const int64_t left_us = c.validity_end_us(lock) - c.clock().monotonic_us();
  if (left_us <= duration_us) {
    // Validity covers [start, end): the holder is out in its last microsecond, before whoever
    // the end lets in (events at one instant run in no promised order).
    if (left_us > 1) c.clock().sleep_for_us(left_us - 1);
    c.leave(lock);
    return false;
  }
  c.clock().sleep_for_us(duration_us);
  return true;
}

bool careful_work(Client& c, Lock& lock, int64_t duration_ms) {
  return careful_work_us(c, lock, duration_ms * 1000);
}

// A careful holder's step: the same calls as lease_step's, its work done only while the lock is
// valid (an extend is asked for regardless), then work until the validity ends. It leaves the critical section when the validity ends, and
// while an extend is in flight (it cannot know whether the call outlives the validity),
// re-entering when the extend succeeded in time. Then it releases (outside the critical section)
// unless the step walks away.
//
// A lock without expiry (a session lock, AdapterTraits::server_expiry none) has no lease to spend:
// its validity is how long its session could last unheard (hours). Its holder works on for the
// TTL it asked, from when the lock came or was extended, as a budget of its own (budget_end_us),
// and leaves; for a lock whose validity ends sooner (lockstep's postgres adapters cut it to the
// TTL from the request), the validity still ends the work first.
void careful_lease_step(Client& c, Lock& lock, const SwarmStep& step, int64_t extend_ttl_ms,
                        std::optional<int64_t> budget_end_us) {
  std::optional<int64_t> value;
  bool valid = careful_work(c, lock, 0);
  if (valid) value = c.read(lock);
  if (valid && step.pause_ms > 0) c.pause(step.pause_ms);  // a stop-the-world cannot be careful
  valid = valid && careful_work(c, lock, step.hold_ms);
  if (step.extend) {
    // Tried even when its validity has ended (after a pause, say): a holder may ask to keep a lock
    // it has lost, and the lock must refuse. It works on only if the extend gave it time.
    c.leave(lock);
    valid = c.extend(lock, extend_ttl_ms) && c.clock().monotonic_us() < c.validity_end_us(lock);
    if (valid && budget_end_us) {
      budget_end_us = std::max(*budget_end_us, c.clock().monotonic_us() + extend_ttl_ms * 1000);
    }
    if (valid) c.reenter(lock);
  }
  valid = valid && careful_work(c, lock, 0);
  if (valid && value) c.write(lock, *value + 1);
  // A careful holder is a lease-bound worker: having done the step's work, it keeps working until
  // its validity ends, so whatever validity the adapter overstates, it spends inside.
  if (valid && budget_end_us) {
    careful_work_us(c, lock, std::max<int64_t>(0, *budget_end_us - c.clock().monotonic_us()));
  } else if (valid) {
    careful_work(c, lock, std::numeric_limits<int64_t>::max() / 1000);
  }
  c.leave(lock);
}

// An auto-extending holder's step: its Locker extends in the background while it works for
// hold_ms in steps of a quarter TTL, each cut short to end at the validity the lock knows then,
// asking lost() before every write; it stops when lost() says the lock may be gone. lost() is
// never later than the validity (locker.h), so a Locker that reports a loss late shows as a
// validity outliving its leases, or a lost exclusion.
void auto_extending_step(Client& c, Lock& lock, const SwarmStep& step, int64_t ttl_ms) {
  c.auto_extend(lock, 0);
  c.work_until_lost(lock, step.hold_ms, std::max<int64_t>(1, ttl_ms / 4));
  c.leave(lock);
}

// Killed from outside mid-section (ProcessKilled unwinding the step), a client is no longer inside,
// as Client::crash says. A destructor, not catch and rethrow: the unwinding at the end of every run
// that leaves clients parked was a tenth of a memory seed, and a rethrow searches the stack again.
class LeaveWhenKilled {
 public:
  LeaveWhenKilled(Client& c, Lock& lock)
      : client_(c), lock_(lock), exceptions_(std::uncaught_exceptions()) {}
  ~LeaveWhenKilled() {
    if (std::uncaught_exceptions() > exceptions_) client_.leave(lock_);
  }
  LeaveWhenKilled(const LeaveWhenKilled&) = delete;
  LeaveWhenKilled& operator=(const LeaveWhenKilled&) = delete;

 private:
  Client& client_;
  Lock& lock_;
  const int exceptions_;
};

void lease_step(SwarmRun& run, Client& c, const SwarmStep& step) {
  ScenarioWorld& world = run.env->world();
  const int node = c.node();
  if (step.acquire_crash_after_us >= 0) {
    run.env->schedule_client_kill_us(run.env->world().now_us() + step.acquire_crash_after_us, c,
                                     fmt::format("crash {} with its acquire on the wire", c.name()),
                                     [&world, node] { world.crash(node); });
  }
  if (step.acquire_pause_after_us >= 0) {
    const int64_t pause_us = step.acquire_pause_ms * 1000;
    aim_at_call(
        run, step.acquire_pause_after_us,
        {.kind = FaultKind::pause, .client = c.id(), .amount = pause_us},
        fmt::format("pause {} for {}ms with its acquire on the wire", c.name(),
                    step.acquire_pause_ms),
        [&world, node, pause_us] { world.pause(node, pause_us); }, pause_us);
  }
  const int64_t ttl_ms = step.ttl_ms > 0 ? step.ttl_ms : run.spec.ttl_ms;
  const int64_t extend_ttl_ms = step.extend_ttl_ms > 0 ? step.extend_ttl_ms : ttl_ms;
  std::optional<Lock> lock = c.acquire(key_name(step.key), ttl_ms, run.retry());
  if (!lock) return;
  const LeaveWhenKilled leave_when_killed(c, *lock);
  if (step.auto_extend) {
    auto_extending_step(c, *lock, step, ttl_ms);
  } else if (run.spec.careful) {
    const bool expires = run.env->adapter().traits.server_expiry != ExpiryClock::none;
    careful_lease_step(
        c, *lock, step, extend_ttl_ms,
        expires ? std::nullopt : std::optional<int64_t>(c.clock().monotonic_us() + ttl_ms * 1000));
  } else {
    std::optional<int64_t> value = c.read(*lock);
    if (step.pause_ms > 0) c.pause(step.pause_ms);
    c.sleep_ms(step.hold_ms);
    if (step.extend) c.extend(*lock, extend_ttl_ms);
    if (value) c.write(*lock, *value + 1);
  }
  if (step.late_ms >= 0) {
    // Its validity is over (a careful holder worked until it ended): later still, it extends and
    // releases a lock it no longer holds. The lock must refuse both and touch the next owner's.
    c.leave(*lock);
    c.sleep_ms(step.late_ms);
    c.extend(*lock, extend_ttl_ms);
    c.leave(*lock);
  }
  if (!step.release) return c.leave(*lock);
  if (step.release_pause_after_us >= 0) {
    const int64_t pause_us = step.release_pause_ms * 1000;
    aim_at_call(
        run, step.release_pause_after_us,
        {.kind = FaultKind::pause, .client = c.id(), .amount = pause_us},
        fmt::format("pause {} for {}ms mid-release", c.name(), step.release_pause_ms),
        [&world, node, pause_us] { world.pause(node, pause_us); }, pause_us);
  }
  c.release(*lock);
}

void keyed_step(SwarmRun& run, Client& c, const SwarmStep& step) {
  KeyedCalls& keyed = keyed_calls(run.env->backend());
  if (run.spec.family == LockFamily::keyed_fifo) {
    if (step.clear) {
      run.env->world().trace_linef("{} calls fifo clear()", c.name());
      keyed.fifo_clear();
      return;
    }
    keyed.fifo_hold(c, key_name(step.key), step.hold_ms);
    return;
  }
  keyed.rw_hold(c, key_name(step.key),
                step.shared ? keyed::RwMode::shared : keyed::RwMode::exclusive, step.hold_ms,
                step.pause_ms);
}

// fiber: which of a concurrent client's two fibers this is (0 or 1), or -1 for every step.
void client_program(SwarmRun& run, Client& c, const SwarmClient& plan, int fiber) {
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (fiber >= 0 && static_cast<int>(i % 2) != fiber) continue;
    const SwarmStep& step = plan.steps[i];
    c.sleep_ms(step.gap_ms);
    if (run.safety_over()) return;  // steps start only in the safety phase
    if (run.spec.family == LockFamily::lease) {
      lease_step(run, c, step);
    } else {
      keyed_step(run, c, step);
    }
  }
}

// A fresh client after the heal: takes every key once, with retries that outlast the bound.
void heal_program(SwarmRun& run, Client& c) {
  const int64_t delay_ms = std::max<int64_t>(10, run.spec.ttl_ms / 10);
  const int64_t attempts = run.liveness_bound_us / 1000 / delay_ms + 2;
  const RetrySettings retry{.retry_delay_ms = delay_ms,
                            .retry_times = static_cast<int>(std::min<int64_t>(attempts, 100'000))};
  for (int key = 0; key < run.spec.keys; ++key) {
    // An acquire that fails (no primary while the set elects one, an outcome unknown) is asked
    // again, as a caller that needs the key would, until the bound has passed since it began.
    const TimeUs give_up_us = run.env->world().now_us() + run.liveness_bound_us;
    std::optional<Lock> lock;
    for (int64_t round = 0; round < attempts && !lock; ++round) {
      lock = c.acquire(key_name(key), run.spec.ttl_ms, retry);
      if (lock || run.env->world().now_us() >= give_up_us) break;
      c.sleep_ms(delay_ms);
    }
    if (!lock) continue;
    c.increment(*lock, kHealHold_ms);
    c.release(*lock);
  }
}

void set_network(SwarmRun& run, sim::NetworkOptions options) {
  run.sim().network().set_options(options);
}

void schedule_fault(SwarmRun& run, const SwarmFault& f) {
  ScenarioEnv& env = *run.env;
  ScenarioWorld& world = env.world();
  Backend& backend = env.backend();
  const Client& target = *run.clients[static_cast<size_t>(f.client)];
  const int node = target.node();
  const std::string what = describe_fault(f);
  const FaultTag on_client{.kind = f.kind, .client = target.id(), .amount = f.amount};
  const FaultTag on_servers{.kind = f.kind, .amount = f.amount};
  const int64_t end_ms = f.at_ms + f.duration_ms;
  SwarmRun* r = &run;
  switch (f.kind) {
    case FaultKind::pause:
      return env.schedule_fault(
          f.at_ms, {.kind = f.kind, .client = target.id(), .amount = f.duration_ms * 1000}, what,
          [&world, node, f] { world.pause(node, f.duration_ms * 1000); }, f.duration_ms);
    case FaultKind::crash:
      return env.schedule_client_kill_us(f.at_ms * 1000, target, what,
                                         [&world, node] { world.crash(node); });
    case FaultKind::clock_jump:
      return env.schedule_fault(f.at_ms,
                                {.kind = f.kind, .client = target.id(), .amount = f.amount * 1000},
                                what, [r, node, f] { r->sim().jump_clock(node, f.amount * 1000); });
    case FaultKind::server_clock_jump:
      return env.schedule_fault(f.at_ms, {.kind = f.kind, .amount = f.amount * 1000}, what,
                                [&backend, f] {
                                  for (int s = 0; s < backend.server_count(); ++s)
                                    backend.jump_server_clock(s, f.amount * 1000);
                                });
    case FaultKind::failover: return env.schedule_failover_us(f.at_ms * 1000, what);
    case FaultKind::server_drift:
      env.schedule_fault(
          f.at_ms, on_servers, what, [&backend, f] { backend.set_server_drift(f.amount); },
          f.duration_ms);
      return world.at(end_ms * 1000, [&backend] { backend.set_server_drift(0); });
    case FaultKind::latency:
      env.schedule_fault(
          f.at_ms, on_servers, what,
          [r, f] {
            sim::NetworkOptions o = r->base_network;
            o.latency_us_min = o.latency_us_max = f.amount;
            set_network(*r, o);
          },
          f.duration_ms);
      return world.at(end_ms * 1000, [r] { set_network(*r, r->base_network); });
    case FaultKind::loss:
      env.schedule_fault(
          f.at_ms, on_servers, what,
          [r, f] {
            sim::NetworkOptions o = r->base_network;
            o.loss = {static_cast<uint64_t>(f.amount), 100};
            set_network(*r, o);
          },
          f.duration_ms);
      return world.at(end_ms * 1000, [r] { set_network(*r, r->base_network); });
    case FaultKind::partition:
      env.schedule_fault(
          f.at_ms, on_client, what, [&backend, node, f] { backend.partition(node, f.amount != 0); },
          f.duration_ms);
      return world.at(end_ms * 1000, [&backend] { backend.heal(); });
    case FaultKind::stall:
      env.schedule_fault(
          f.at_ms, on_client, what,
          [&backend, r, node, f] {
            // The backend's own partition, its cuts made holding: every service stalls alike.
            sim::Network& network = r->sim().network();
            network.set_cut_style(sim::CutStyle::hold);
            backend.partition(node, f.amount != 0);
            network.set_cut_style(sim::CutStyle::drop);
          },
          f.duration_ms);
      return world.at(end_ms * 1000, [&backend] { backend.heal(); });
    case FaultKind::reset:
      return env.schedule_fault(
          f.at_ms, on_client, what,
          [&backend, node, f] { backend.reset_connections(node, f.duration_ms * 1000); },
          f.duration_ms);
    case FaultKind::server_restart: {
      const int server = f.server % backend.server_count();
      const int64_t down_us = f.amount * 1000;
      auto crash_seen = std::make_shared<int>(0);
      env.schedule_fault(
          f.at_ms, {.kind = FaultKind::server_crash, .server = std::to_string(server)},
          fmt::format("server #{} crashes", server), [&backend, r, server, crash_seen] {
            *crash_seen = ++r->crashes_by_server[server];
            backend.crash_server(server);
          });
      return env.schedule_fault_us(
          f.at_ms * 1000 + down_us,
          {.kind = FaultKind::server_restart, .server = std::to_string(server), .amount = down_us},
          fmt::format("server #{} restarts after {}ms down", server, f.amount),
          [&backend, r, server, crash_seen] {
            if (r->crashes_by_server[server] == *crash_seen) backend.restart_server(server);
          });
    }
    case FaultKind::server_pause: {
      const int server = f.server % backend.server_count();
      return env.schedule_fault(
          f.at_ms, {.kind = FaultKind::server_pause, .server = std::to_string(server)}, what,
          [&backend, server, f] { backend.pause_server(server, f.duration_ms * 1000); },
          f.duration_ms);
    }
    case FaultKind::clock_drift: return;  // per client, at creation
    default: LOCKSTEP_CHECK(false, "a swarm spec holds only the kinds a sweep draws");
  }
}

// Each slow server is a latency fault on it through the safety phase, healed with the others:
// recorded, so the judge can tell a lock that claims no tolerance of latency what slowed it.
void schedule_slow_servers(SwarmRun& run) {
  Backend& backend = run.env->backend();
  const std::vector<int64_t>& delays_us = run.spec.server_delays_us;
  const int servers = std::min(backend.server_count(), static_cast<int>(delays_us.size()));
  const int64_t heal_us = run.spec.safety_ms * 1000;
  for (int server = 0; server < servers; ++server) {
    const int64_t delay_us = delays_us[static_cast<size_t>(server)];
    if (delay_us == 0) continue;
    run.env->schedule_fault_us(
        0, {.kind = FaultKind::latency, .server = std::to_string(server), .amount = delay_us},
        fmt::format("server #{} slow: +{}us each way", server, delay_us),
        [&backend, server, delay_us] { backend.slow_server(server, delay_us); }, heal_us);
    run.env->world().at(heal_us, [&backend, server] { backend.slow_server(server, 0); });
  }
}

// At the end of the safety phase every fault heals at once.
void schedule_heal(SwarmRun& run) {
  SwarmRun* r = &run;
  run.env->schedule_fault(run.spec.safety_ms, {}, "heal: every fault ends", [r] {
    Backend& backend = r->env->backend();
    if (r->network) {
      backend.heal();
      set_network(*r, r->base_network);
    }
    if (r->spec.has_fault(FaultKind::server_drift)) backend.set_server_drift(0);
    for (size_t i = 0; i < r->clients.size(); ++i) {
      if (r->spec.clients[i].drift_ppm != 0) r->sim().set_drift(r->clients[i]->node(), 0);
    }
  });
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

void build_swarm(const std::shared_ptr<SwarmRun>& run, ScenarioEnv& env) {
  env.require_sim("swarm faults are injected by the simulator");
  run->env = &env;
  run->clients.clear();
  const SwarmSpec& spec = run->spec;
  if (env.world().trace_wants_text()) {  // a sweep's tallied seeds need no param lines
    for (const std::string& line : describe_params(spec)) env.world().trace_linef("param {}", line);
  }
  run->network = spec.family == LockFamily::lease && env.adapter().traits.sim_faults.network;
  const int64_t allowance_us = fault_recovery_allowance_us(spec, env.backend());
  run->liveness_bound_us = spec.liveness_bound_us() + allowance_us;
  if (env.world().trace_wants_text() && allowance_us > 0)
    env.world().trace_linef("param swarm.fault_recovery_allowance_us={}", allowance_us);
  if (spec.fixed_latency_us > 0) env.backend().set_fixed_latency(spec.fixed_latency_us);
  schedule_slow_servers(*run);
  run->base_network = run->sim().network().options();
  for (size_t i = 0; i < spec.clients.size(); ++i) {
    const SwarmClient& plan = spec.clients[i];
    Client& c = env.add_client(fmt::format("c{}", i), 0, plan.drift_ppm);
    run->clients.push_back(&c);
    if (!plan.concurrent) {
      env.start(c, plan.start_ms,
                [run, &plan](Client& self) { client_program(*run, self, plan, -1); });
      continue;
    }
    for (int fiber : {0, 1}) {
      env.start(c, plan.start_ms,
                [run, &plan, fiber](Client& self) { client_program(*run, self, plan, fiber); });
    }
  }
  for (const SwarmFault& f : spec.faults) schedule_fault(*run, f);
  schedule_heal(*run);
  for (int i = 0; i < spec.heal_clients; ++i) {
    env.start(env.add_client(fmt::format("h{}", i)), spec.safety_ms + 1,
              [run](Client& self) { heal_program(*run, self); });
  }
  if (spec.family == LockFamily::lease) env.meta().liveness_bound_us = run->liveness_bound_us;
}

}  // namespace

Scenario make_swarm_scenario(SwarmSpec spec) {
  spec.validate();
  auto run = std::make_shared<SwarmRun>();
  run->spec = std::move(spec);
  const TimeUs safety_us = run->spec.safety_ms * 1000;
  return {
      .name = kSwarmScenarioName,
      .description = "a swarm-drawn workload and fault schedule (lockstep sweep)",
      .worlds = {WorldKind::sim},
      .expected = [](const AdapterTraits&, const Options&, bool) { return Expectation{}; },
      .build = [run](ScenarioEnv& env) { build_swarm(run, env); },
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
