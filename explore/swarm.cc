#include "explore/swarm.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/check.h"
#include "explore/key_name.h"
#include "lockstep/random.h"
#include "lockstep/registry.h"
#include "run/runner.h"
#include "services/keyed/backend/keyed_backend.h"
#include "sim/world.h"

namespace lockstep {

namespace {

constexpr FaultKind kSweepFaultKinds[] = {
    FaultKind::pause,      FaultKind::crash,          FaultKind::clock_drift,
    FaultKind::clock_jump, FaultKind::server_drift,   FaultKind::server_clock_jump,
    FaultKind::failover,   FaultKind::latency,        FaultKind::loss,
    FaultKind::partition,  FaultKind::server_restart, FaultKind::server_pause,
    FaultKind::reset,      FaultKind::stall,
};

// Headroom in the liveness bound for one round trip that times out (command timeouts are 100 ms).
constexpr int64_t kRoundSlack_ms = 250;
constexpr int64_t kHealHold_ms = 1;

}  // namespace

// ---------------------------------------------------------------------------------------------
// fault kinds

const std::vector<FaultKind>& sweep_fault_kinds() {
  static const std::vector<FaultKind> kinds(std::begin(kSweepFaultKinds),
                                            std::end(kSweepFaultKinds));
  return kinds;
}

std::string sweep_fault_kind_names() {
  std::vector<std::string_view> names;
  for (FaultKind kind : kSweepFaultKinds) names.push_back(to_string(kind));
  return fmt::format("{}", fmt::join(names, ", "));
}

// ---------------------------------------------------------------------------------------------
// capabilities

SwarmCapabilities swarm_capabilities(const AdapterEntry& adapter) {
  const AdapterTraits& traits = adapter.traits;
  const auto has_option = [&adapter](const char* name) {
    return std::any_of(adapter.options.begin(), adapter.options.end(),
                       [name](const OptionSpec& option) { return option.name == name; });
  };
  return {
      .keyed_rw = traits.family == LockFamily::keyed_rw,
      .keyed_fifo = traits.family == LockFamily::keyed_fifo,
      .network = traits.sim_faults.network,
      .message_loss = traits.sim_faults.network && traits.servers != ServerLayout::replica_set,
      .server_clock = traits.sim_faults.server_clock,
      .server_clock_jump = traits.sim_faults.server_clock_jump,
      // A replica set recovers from a lost, restarted or paused primary by an election: the run's
      // liveness bound allows the backend's election time for each such fault
      // (fault_recovery_allowance_us).
      .elections = traits.servers == ServerLayout::replica_set,
      .failover = traits.sim_faults.failover,
      .server_restart = traits.sim_faults.server_restart,
      .server_pause = traits.sim_faults.server_pause,
      .slow_servers = traits.sim_faults.network && traits.sim_faults.slow_servers,
      .connection_resets = traits.sim_faults.network && traits.sim_faults.connection_resets,
      .extends = traits.extends,
      .replica_option = has_option("replicas"),
      .replication_delay_option = has_option("replication_delay_ms"),
      .concurrent_calls = traits.concurrent_calls,
      .envelope = traits.envelope};
}

SwarmCapabilities swarm_capabilities(const std::string& adapter) {
  const AdapterEntry* entry = find_adapter(adapter);
  if (entry == nullptr) {
    throw UsageError(
        fmt::format("unknown adapter \"{}\"; valid adapters: {}", adapter, adapter_names()));
  }
  if (std::find(entry->worlds.begin(), entry->worlds.end(), WorldKind::sim) ==
      entry->worlds.end()) {
    throw UsageError(fmt::format("adapter \"{}\" does not run in world \"sim\"; its worlds: {}",
                                 adapter, world_names(entry->worlds)));
  }
  return swarm_capabilities(*entry);
}

// ---------------------------------------------------------------------------------------------
// the spec

void SwarmSpec::validate() const {
  auto fail = [](const std::string& what) { throw std::invalid_argument("swarm spec: " + what); };
  if (keys < 1 || keys > kKeysMax) fail(fmt::format("keys must be in [1, {}]", kKeysMax));
  if (ttl_ms < 1 || retry_delay_ms < 1 || retry_times < 0 || retry_jitter_ms < 0)
    fail("bad ttl or retry settings");
  if (fixed_latency_us < 0 || safety_ms < 1 || heal_clients < 0 || heal_clients > kClientsMax)
    fail("bad run shape");
  if (clients.empty() || clients.size() > static_cast<size_t>(kClientsMax)) {
    fail(fmt::format("clients must be in [1, {}]", kClientsMax));
  }
  if (faults.size() > static_cast<size_t>(kFaultsMax))
    fail(fmt::format("more than {} faults", kFaultsMax));
  if (server_delays_us.size() > static_cast<size_t>(kSlowServersMax))
    fail(fmt::format("more than {} server delays", kSlowServersMax));
  for (int64_t delay_us : server_delays_us) {
    if (delay_us < 0 || delay_us > kServerDelayUsMax)
      fail(fmt::format("a server delay must be in [0, {}] us", kServerDelayUsMax));
  }
  for (const SwarmClient& c : clients) {
    if (c.steps.size() > static_cast<size_t>(kStepsMax))
      fail(fmt::format("a client has more than {} steps", kStepsMax));
    if (c.start_ms < 0 || c.drift_ppm <= -1'000'000) fail("bad client start or drift");
    if (c.concurrent) {
      // Its two fibers take alternate steps and never share a key.
      if (keys < 2) fail("a concurrent client needs two keys");
      for (size_t j = 0; j < c.steps.size(); ++j) {
        if (c.steps[j].key != static_cast<int>(j % 2))
          fail("a concurrent client's fibers share a key");
      }
    }
    for (const SwarmStep& s : c.steps) {
      if (s.key < 0 || s.key >= keys) fail("a step names a key outside [0, keys)");
      if (s.gap_ms < 0 || s.hold_ms < 0 || s.pause_ms < 0 || s.release_pause_ms < 0 ||
          s.acquire_pause_ms < 0 || s.ttl_ms < 0 || s.extend_ttl_ms < 0 || s.late_ms < -1)
        fail("negative duration");
      if (s.clear && family != LockFamily::keyed_fifo)
        fail("clear() is a step of keyed-fifo specs only");
    }
  }
  const std::vector<FaultKind>& drawn = sweep_fault_kinds();
  for (const SwarmFault& f : faults) {
    if (std::find(drawn.begin(), drawn.end(), f.kind) == drawn.end())
      fail(fmt::format("fault kind {} is not one a sweep draws ({})", to_string(f.kind),
                       sweep_fault_kind_names()));
    if (f.client < 0 || f.client >= static_cast<int>(clients.size()))
      fail("a fault names a client that is not there");
    if (f.at_ms < 0 || f.duration_ms < 0 || f.at_ms >= safety_ms)
      fail("a fault outside the safety phase");
    if (f.kind == FaultKind::server_drift && f.amount <= -1'000'000)
      fail("server drift must stay above -100%");
    if (f.kind == FaultKind::loss && (f.amount < 0 || f.amount > 100)) fail("loss is a percentage");
    if (f.kind == FaultKind::latency && f.amount < 1) fail("latency must be positive");
    if (f.kind == FaultKind::failover && replication_delay_ms < 0)
      fail("a failover needs a replica");
    if (f.server < 0) fail("a fault names a negative server");
    if (f.kind == FaultKind::server_restart && f.amount < 0)
      fail("a restart's downtime is negative");
  }
}

bool SwarmSpec::has_fault(FaultKind kind) const {
  for (const SwarmFault& f : faults) {
    if (f.kind == kind) return true;
  }
  for (const SwarmClient& c : clients) {
    if (kind == FaultKind::clock_drift && c.drift_ppm != 0) return true;
    for (const SwarmStep& s : c.steps) {
      if (kind == FaultKind::pause &&
          (s.pause_ms > 0 || s.release_pause_after_us >= 0 || s.acquire_pause_after_us >= 0))
        return true;
      if (kind == FaultKind::crash && s.acquire_crash_after_us >= 0) return true;
    }
  }
  return kind == FaultKind::latency && (fixed_latency_us > 0 || slows_servers());
}

bool SwarmSpec::slows_servers() const {
  return std::any_of(server_delays_us.begin(), server_delays_us.end(),
                     [](int64_t delay_us) { return delay_us > 0; });
}

size_t SwarmSpec::step_count() const {
  size_t n = 0;
  for (const SwarmClient& c : clients) n += c.steps.size();
  return n;
}

int64_t SwarmSpec::liveness_bound_us() const {
  int64_t longest_hold_ms = 0;
  for (const SwarmClient& c : clients) {
    for (const SwarmStep& s : c.steps) longest_hold_ms = std::max(longest_hold_ms, s.hold_ms);
  }
  // After the heal each safety client has at most one step left (an acquire still retrying, a
  // hold, an extend or a walked-away lease: at most two TTLs), and each healed acquire one hold.
  const int64_t round_ms =
      2 * ttl_ms + longest_hold_ms + retry_delay_ms + retry_jitter_ms + kRoundSlack_ms;
  const int64_t holders =
      static_cast<int64_t>(clients.size()) + static_cast<int64_t>(heal_clients) * keys + 1;
  const int64_t retry_budget_ms = retry_times * (retry_delay_ms + retry_jitter_ms + kRoundSlack_ms);
  return (holders * round_ms + retry_budget_ms + ttl_ms) * 1000;
}

std::vector<std::string> swarm_sets(const SwarmSpec& spec, const SwarmCapabilities& caps) {
  if (spec.replication_delay_ms < 0) return {};
  std::vector<std::string> sets;
  if (caps.replica_option) sets.emplace_back("replicas=1");
  if (caps.replication_delay_option)
    sets.push_back(fmt::format("replication_delay_ms={}", spec.replication_delay_ms));
  return sets;
}

// ---------------------------------------------------------------------------------------------
// drawing

namespace {

// Per-seed rates (out of 8) of the faults and operations a step can carry.
struct StepRates {
  uint64_t pause = 0, release_pause = 0, acquire_pause = 0, crash = 0, extend = 0, walk_away = 0,
           shared = 0, clear = 0, late = 0;
  bool ttl_per_step = false;
  int64_t wire_us = 3000;  // how far after a call a fault aimed "on the wire" may land
};

bool allowed(const SwarmDrawOptions& options, FaultKind kind) {
  return std::find(options.faults.begin(), options.faults.end(), kind) != options.faults.end();
}

}  // namespace

static bool producible(const SwarmCapabilities& caps, FaultKind kind) {
  if (caps.keyed()) return kind == FaultKind::pause;  // no clocks, no network, no lease to lose
  switch (kind) {
    case FaultKind::server_drift: return caps.server_clock;
    case FaultKind::server_clock_jump: return caps.server_clock_jump;
    case FaultKind::failover: return caps.failover;
    case FaultKind::server_restart: return caps.server_restart;
    case FaultKind::server_pause: return caps.server_pause;
    case FaultKind::loss: return caps.network && caps.message_loss;
    case FaultKind::latency:
    case FaultKind::partition:
    case FaultKind::stall: return caps.network;
    case FaultKind::reset: return caps.connection_resets;
    default: return true;
  }
}

std::vector<FaultKind> strikable_fault_kinds(const SwarmCapabilities& caps) {
  std::vector<FaultKind> kinds;
  for (FaultKind kind : sweep_fault_kinds()) {
    if (producible(caps, kind)) kinds.push_back(kind);
  }
  return kinds;
}

namespace {

uint64_t rate(Prng& rng, bool on) {
  return on && rng.chance(1, 2) ? static_cast<uint64_t>(rng.between(1, 4)) : 0;
}

SwarmStep draw_step(Prng& rng, const SwarmSpec& spec, const StepRates& r, bool storm) {
  const int64_t ttl = spec.ttl_ms;
  SwarmStep s;
  s.key = static_cast<int>(rng.between(0, spec.keys - 1));
  s.gap_ms = storm ? rng.between(0, 5) : rng.between(0, ttl);
  // What lock code varies by: a TTL per operation, and extends that ask for less or more than the
  // acquire did (a lock that extends by its first TTL whatever it is asked is caught by these).
  if (r.ttl_per_step && rng.chance(1, 2))
    s.ttl_ms = rng.between(std::max<int64_t>(ttl / 4, 10), 2 * ttl);
  s.hold_ms = storm ? rng.between(0, 3) : rng.between(0, ttl / 2);
  if (rng.chance(r.pause, 8)) s.pause_ms = rng.between(1, 3 * ttl);
  s.extend = rng.chance(r.extend, 8);
  if (s.extend && rng.chance(1, 2))
    s.extend_ttl_ms = rng.between(std::max<int64_t>(ttl / 10, 5), 3 * ttl);
  if (rng.chance(r.late, 8)) s.late_ms = rng.between(0, ttl);
  s.release = !rng.chance(r.walk_away, 8);
  s.shared = rng.chance(r.shared, 8);
  if (r.clear > 0) s.clear = rng.chance(r.clear, 8);
  if (rng.chance(r.release_pause, 8)) {
    s.release_pause_after_us = rng.between(0, r.wire_us);
    s.release_pause_ms = rng.between(1, 3 * ttl);
  }
  if (rng.chance(r.crash, 8)) s.acquire_crash_after_us = rng.between(0, r.wire_us);
  if (r.acquire_pause > 0 && rng.chance(r.acquire_pause, 8)) {
    s.acquire_pause_after_us = rng.between(0, r.wire_us);
    s.acquire_pause_ms = rng.between(1, ttl);
  }
  return s;
}

int64_t planned_ms(const SwarmClient& c) {
  int64_t t = c.start_ms;
  for (const SwarmStep& s : c.steps) t += s.gap_ms + s.hold_ms + s.pause_ms + s.release_pause_ms;
  return t;
}

// A server clock rate inside the envelope (any slowness, or as fast as it tolerates) or outside it
// (faster), half and half.
constexpr int64_t kReplicationDelayMsMax = 80;

int64_t server_drift_ppm(Prng& rng, const FaultEnvelope& envelope) {
  const int64_t fast_max = std::min<int64_t>(envelope.server_fast_ppm_max, 499'999);
  return rng.chance(1, 2) ? rng.between(-300'000, fast_max) : rng.between(fast_max + 1, 500'000);
}

// A client clock rate inside the envelope (any speed-up, or as slow as it tolerates) or outside it
// (slower), half and half.
int64_t client_drift_ppm(Prng& rng, const FaultEnvelope& envelope) {
  const int64_t slow_max = std::min<int64_t>(envelope.client_slow_ppm_max, 299'999);
  return rng.chance(1, 2) ? rng.between(-slow_max, 300'000) : rng.between(-300'000, -slow_max - 1);
}

SwarmFault draw_fault(Prng& rng, SwarmSpec& spec, const SwarmCapabilities& caps, FaultKind kind) {
  const int64_t ttl = spec.ttl_ms;
  SwarmFault f{.kind = kind, .at_ms = rng.between(0, spec.safety_ms - 1)};
  // A set that elects a new primary is without one for seconds, longer than any safety phase: a
  // lost primary before the first grant would leave the seed holding nothing to judge. Aimed into
  // the phase's last three quarters instead, when a lock is likely held.
  const bool loses_primary = kind == FaultKind::failover || kind == FaultKind::server_restart ||
                             kind == FaultKind::server_pause;
  if (caps.elections && loses_primary) f.at_ms = spec.safety_ms / 4 + f.at_ms * 3 / 4;
  f.client = static_cast<int>(rng.between(0, static_cast<int64_t>(spec.clients.size()) - 1));
  switch (kind) {
    case FaultKind::pause: f.duration_ms = rng.between(1, 3 * ttl); break;
    case FaultKind::clock_jump:
    case FaultKind::server_clock_jump: f.amount = rng.between(-2 * ttl, 2 * ttl); break;
    case FaultKind::server_drift:
      f.amount = server_drift_ppm(rng, caps.envelope);
      f.duration_ms = rng.between(1, spec.safety_ms);
      break;
    case FaultKind::failover:
      // Enough lag to lose acknowledged writes at the failover, and short enough that a lock
      // waiting for its replicas (Mongo w:majority, three writes per acquire) still gets a lock
      // with the shortest TTL a step draws (ttl / 4) and within the 100 ms a simulated Redis client
      // waits for a reply: the lag outlasts the heal, and would otherwise be a fault that never
      // heals.
      if (spec.replication_delay_ms < 0) {
        spec.replication_delay_ms =
            rng.between(0, std::min<int64_t>(ttl / 16, kReplicationDelayMsMax));
      }
      break;
    case FaultKind::server_restart:  // back before the heal: liveness is judged after it
      f.server = static_cast<int>(rng.between(0, 6));
      f.amount =
          rng.between(0, std::max<int64_t>(0, std::min(2 * ttl, spec.safety_ms - 1 - f.at_ms)));
      break;
    case FaultKind::server_pause:
      f.server = static_cast<int>(rng.between(0, 6));
      f.duration_ms =
          rng.between(1, std::max<int64_t>(1, std::min(2 * ttl, spec.safety_ms - 1 - f.at_ms)));
      break;
    case FaultKind::latency:
      f.amount = rng.between(1'000, 150'000);
      f.duration_ms = rng.between(1, 2 * ttl);
      break;
    case FaultKind::loss:
      f.amount = rng.between(1, 50);
      f.duration_ms = rng.between(1, 2 * ttl);
      break;
    case FaultKind::partition:
    case FaultKind::stall:
      f.amount = rng.between(0, 1);
      f.duration_ms = rng.between(1, 2 * ttl);
      break;
    case FaultKind::reset: f.duration_ms = rng.between(0, ttl); break;
    default: break;
  }
  return f;
}

void draw_faults(Prng& rng, SwarmSpec& spec, const SwarmCapabilities& caps,
                 const SwarmDrawOptions& options) {
  std::vector<FaultKind> kinds;  // clock drift is per client, drawn with the clients
  for (FaultKind k : sweep_fault_kinds()) {
    if (k != FaultKind::clock_drift && allowed(options, k) && producible(caps, k))
      kinds.push_back(k);
  }
  if (kinds.empty()) return;
  const int64_t count = rng.between(0, 4);
  bool failed_over = false;
  for (int64_t i = 0; i < count; ++i) {
    const FaultKind kind = kinds[rng.below(kinds.size())];
    if (kind == FaultKind::failover && failed_over) continue;  // one replica: one failover
    failed_over |= kind == FaultKind::failover;
    spec.faults.push_back(draw_fault(rng, spec, caps, kind));
  }
  std::sort(spec.faults.begin(), spec.faults.end(),
            [](const SwarmFault& a, const SwarmFault& b) { return a.at_ms < b.at_ms; });
}

StepRates draw_rates(Prng& rng, const SwarmSpec& spec, const SwarmCapabilities& caps,
                     const SwarmDrawOptions& o) {
  const bool pause = allowed(o, FaultKind::pause) && producible(caps, FaultKind::pause);
  const bool lease = spec.family == LockFamily::lease;
  StepRates r;
  r.pause = rate(rng, pause);
  r.release_pause = rate(rng, pause && lease);
  r.acquire_pause = rate(rng, pause && lease);
  r.crash = rate(rng, allowed(o, FaultKind::crash) && producible(caps, FaultKind::crash));
  r.extend = rate(rng, lease);
  r.walk_away = lease && rng.chance(1, 3) ? 1 : 0;
  r.late = rate(rng, lease);
  r.ttl_per_step = lease && rng.chance(1, 2);
  r.shared = spec.family == LockFamily::keyed_rw ? static_cast<uint64_t>(rng.between(2, 6)) : 0;
  r.clear = spec.family == LockFamily::keyed_fifo ? 1 : 0;
  // A call is on the wire for about two one-way latencies.
  r.wire_us = spec.fixed_latency_us > 0 ? 4 * spec.fixed_latency_us : 3000;
  return r;
}

// Slow servers, from the seed's own stream for them: the rest of a seed's draws stay what they were
// before servers could be slow. A round of a fan-out then lasts as long as its slowest answer, which
// is what a lock that forgets the time it spent acquiring gets wrong. Each way at most a tenth of the
// TTL (a lease outlives a round several times over) and kServerDelayUsMax (inside Redlock's 50 ms
// round and Redis's 100 ms command timeout, so a slow server still answers).
void draw_server_delays(uint64_t seed, SwarmSpec& spec, const SwarmCapabilities& caps,
                        const SwarmDrawOptions& options) {
  if (!caps.slow_servers || !allowed(options, FaultKind::latency)) return;
  Prng rng(seed ^ 0x534c'4f57'0000'0001ULL);  // "SLOW"
  if (!rng.chance(3, 4)) return;
  const int64_t delay_us_max =
      std::clamp<int64_t>(spec.ttl_ms * 1000 / 10, 1'000, SwarmSpec::kServerDelayUsMax);
  for (int server = 0; server < SwarmSpec::kSlowServersMax; ++server)
    spec.server_delays_us.push_back(rng.chance(1, 2) ? rng.between(1, delay_us_max) : 0);
}

// Auto-extending holders, from the seed's own stream for them: the workload's other draws stay what
// they were before holders could auto-extend (the safety phase grows with the longer holds, and
// the faults are placed in it). One plain hold in eight (released, neither extended
// by hand nor late, no pause inside) of a lock that extends becomes one of one to three TTLs under
// the Locker's auto-extension, its holder asking lost() before each write: what a lock that ends
// its lease early when an extension fails, or cannot keep one going, gets wrong.
void draw_auto_extension(uint64_t seed, SwarmSpec& spec, const SwarmCapabilities& caps) {
  if (!caps.extends || spec.family != LockFamily::lease) return;
  Prng rng(seed ^ 0x4155'544f'0000'0001ULL);  // "AUTO"
  for (SwarmClient& c : spec.clients) {
    for (SwarmStep& s : c.steps) {
      const bool plain = s.release && !s.extend && s.late_ms < 0 && s.pause_ms == 0;
      if (!plain || !rng.chance(1, 8)) continue;
      const int64_t ttl_ms = s.ttl_ms > 0 ? s.ttl_ms : spec.ttl_ms;
      s.auto_extend = true;
      s.hold_ms = rng.between(ttl_ms, 3 * ttl_ms);
    }
  }
}

void draw_clients(Prng& rng, SwarmSpec& spec, const SwarmCapabilities& caps,
                  const SwarmDrawOptions& options) {
  const bool storm = rng.chance(1, 3);  // many short critical sections: the wire is busy
  const StepRates rates = draw_rates(rng, spec, caps, options);
  const bool drift =
      allowed(options, FaultKind::clock_drift) && producible(caps, FaultKind::clock_drift);
  const int64_t count = rng.between(1, storm ? 8 : 5);
  for (int64_t i = 0; i < count; ++i) {
    SwarmClient c;
    c.start_ms = storm ? rng.between(0, 5) : rng.between(0, spec.ttl_ms);
    if (drift && rng.chance(1, 3)) c.drift_ppm = client_drift_ppm(rng, caps.envelope);
    const int64_t steps = rng.between(1, storm ? 10 : 5);
    for (int64_t j = 0; j < steps; ++j) c.steps.push_back(draw_step(rng, spec, rates, storm));
    // Two of its operations in flight at once, on different keys, over one lock client.
    c.concurrent = caps.concurrent_calls && spec.family == LockFamily::lease && spec.keys > 1 &&
                   steps > 1 && rng.chance(1, 4);
    if (c.concurrent) {
      for (size_t j = 0; j < c.steps.size(); ++j)
        c.steps[j].key = static_cast<int>(j % 2) % spec.keys;  // the fibers never share a key
    }
    spec.clients.push_back(std::move(c));
  }
}

}  // namespace

SwarmSpec draw_swarm_spec(const SwarmCapabilities& caps, uint64_t seed,
                          const SwarmDrawOptions& options) {
  Prng rng(seed ^ 0x5357'4152'4d00'0001ULL);  // "SWARM": the spec's own stream of the seed
  SwarmSpec spec;
  spec.family = caps.keyed_rw     ? LockFamily::keyed_rw
                : caps.keyed_fifo ? LockFamily::keyed_fifo
                                  : LockFamily::lease;
  spec.keys = static_cast<int>(rng.between(1, 3));
  spec.ttl_ms = rng.chance(1, 2) ? rng.between(50, 400) : rng.between(400, 3000);
  spec.retry_delay_ms = rng.between(5, std::max<int64_t>(5, spec.ttl_ms / 4));
  spec.retry_times = static_cast<int>(rng.between(0, 20));
  spec.retry_jitter_ms = rng.chance(1, 2) ? rng.between(0, spec.retry_delay_ms) : 0;
  if (allowed(options, FaultKind::latency) && producible(caps, FaultKind::latency) &&
      rng.chance(1, 3)) {
    spec.fixed_latency_us = rng.between(100, 3000);
  }
  draw_server_delays(seed, spec, caps, options);
  draw_clients(rng, spec, caps, options);
  draw_auto_extension(seed, spec, caps);
  int64_t planned = spec.ttl_ms;
  for (const SwarmClient& c : spec.clients) planned = std::max(planned, planned_ms(c));
  spec.safety_ms = std::min<int64_t>(planned + spec.ttl_ms, 60'000);
  draw_faults(rng, spec, caps, options);
  spec.heal_clients = spec.family == LockFamily::lease ? static_cast<int>(rng.between(1, 2)) : 0;
  spec.careful = spec.family == LockFamily::lease;
  spec.validate();
  return spec;
}

// ---------------------------------------------------------------------------------------------
// describing and serializing

namespace {

std::string describe_step(const SwarmStep& s) {
  std::string out = fmt::format("k{} gap={} hold={}", s.key, s.gap_ms, s.hold_ms);
  if (s.ttl_ms > 0) out += fmt::format(" ttl={}", s.ttl_ms);
  if (s.pause_ms > 0) out += fmt::format(" pause={}", s.pause_ms);
  if (s.extend) out += s.extend_ttl_ms > 0 ? fmt::format(" extend={}", s.extend_ttl_ms) : " extend";
  if (s.late_ms >= 0) out += fmt::format(" late={}", s.late_ms);
  if (!s.release) out += " walk-away";
  if (s.auto_extend) out += " auto-extend";
  if (s.shared) out += " shared";
  if (s.clear) out += " clear";
  if (s.release_pause_after_us >= 0) {
    out += fmt::format(" release-pause={}ms@+{}us", s.release_pause_ms, s.release_pause_after_us);
  }
  if (s.acquire_crash_after_us >= 0)
    out += fmt::format(" acquire-crash@+{}us", s.acquire_crash_after_us);
  if (s.acquire_pause_after_us >= 0) {
    out += fmt::format(" acquire-pause={}ms@+{}us", s.acquire_pause_ms, s.acquire_pause_after_us);
  }
  return out;
}

std::string describe_fault(const SwarmFault& f) {
  std::string out = fmt::format("{} at={}ms", to_string(f.kind), f.at_ms);
  switch (f.kind) {
    case FaultKind::pause: return out + fmt::format(" c{} for={}ms", f.client, f.duration_ms);
    case FaultKind::crash: return out + fmt::format(" c{}", f.client);
    case FaultKind::clock_jump: return out + fmt::format(" c{} by={}ms", f.client, f.amount);
    case FaultKind::server_clock_jump: return out + fmt::format(" servers by={}ms", f.amount);
    case FaultKind::server_drift:
      return out + fmt::format(" {}ppm for={}ms", f.amount, f.duration_ms);
    case FaultKind::latency: return out + fmt::format(" {}us for={}ms", f.amount, f.duration_ms);
    case FaultKind::loss: return out + fmt::format(" {}% for={}ms", f.amount, f.duration_ms);
    case FaultKind::partition:
    case FaultKind::stall:
      return out + fmt::format(" c{} {} for={}ms", f.client, f.amount != 0 ? "two-way" : "one-way",
                               f.duration_ms);
    case FaultKind::reset: return out + fmt::format(" c{} for={}ms", f.client, f.duration_ms);
    case FaultKind::server_restart:
      return out + fmt::format(" server#{} down={}ms", f.server, f.amount);
    case FaultKind::server_pause:
      return out + fmt::format(" server#{} for={}ms", f.server, f.duration_ms);
    default: return out;
  }
}

}  // namespace

std::vector<std::string> describe_params(const SwarmSpec& spec) {
  std::vector<std::string> lines = {
      fmt::format("swarm.family={}", to_string(spec.family)),
      fmt::format("swarm.keys={}", spec.keys),
      fmt::format("swarm.ttl_ms={}", spec.ttl_ms),
      fmt::format("swarm.retry_delay_ms={}", spec.retry_delay_ms),
      fmt::format("swarm.retry_times={}", spec.retry_times),
      fmt::format("swarm.retry_jitter_ms={}", spec.retry_jitter_ms),
      fmt::format("swarm.fixed_latency_us={}", spec.fixed_latency_us),
      fmt::format("swarm.replication_delay_ms={}", spec.replication_delay_ms),
      fmt::format("swarm.safety_ms={}", spec.safety_ms),
      fmt::format("swarm.heal_clients={}", spec.heal_clients),
      fmt::format("swarm.careful={}", spec.careful ? 1 : 0),
      fmt::format("swarm.liveness_bound_us={}",
                  spec.family == LockFamily::lease ? spec.liveness_bound_us() : 0),
      fmt::format("swarm.clients={}", spec.clients.size()),
  };
  if (spec.slows_servers()) {
    lines.push_back(
        fmt::format("swarm.server_delays_us={}", fmt::join(spec.server_delays_us, ",")));
  }
  for (size_t i = 0; i < spec.clients.size(); ++i) {
    const SwarmClient& c = spec.clients[i];
    lines.push_back(fmt::format("swarm.c{}.start_ms={} drift_ppm={} steps={}", i, c.start_ms,
                                c.drift_ppm, c.steps.size()));
    for (size_t j = 0; j < c.steps.size(); ++j) {
      lines.push_back(fmt::format("swarm.c{}.step{}={}", i, j, describe_step(c.steps[j])));
    }
  }
  for (size_t i = 0; i < spec.faults.size(); ++i) {
    lines.push_back(fmt::format("swarm.fault{}={}", i, describe_fault(spec.faults[i])));
  }
  return lines;
}

std::string describe(const SwarmSpec& spec) {
  std::string out;
  for (const std::string& line : describe_params(spec)) out += line + "\n";
  return out;
}

nlohmann::json to_json(const SwarmSpec& spec) {
  nlohmann::json clients = nlohmann::json::array();
  for (const SwarmClient& c : spec.clients) {
    nlohmann::json steps = nlohmann::json::array();
    for (const SwarmStep& s : c.steps) {
      steps.push_back({{"key", s.key},
                       {"gap_ms", s.gap_ms},
                       {"hold_ms", s.hold_ms},
                       {"pause_ms", s.pause_ms},
                       {"extend", s.extend},
                       {"auto_extend", s.auto_extend},
                       {"release", s.release},
                       {"shared", s.shared},
                       {"clear", s.clear},
                       {"release_pause_after_us", s.release_pause_after_us},
                       {"release_pause_ms", s.release_pause_ms},
                       {"acquire_crash_after_us", s.acquire_crash_after_us},
                       {"acquire_pause_after_us", s.acquire_pause_after_us},
                       {"acquire_pause_ms", s.acquire_pause_ms},
                       {"ttl_ms", s.ttl_ms},
                       {"extend_ttl_ms", s.extend_ttl_ms},
                       {"late_ms", s.late_ms}});
    }
    clients.push_back({{"start_ms", c.start_ms},
                       {"drift_ppm", c.drift_ppm},
                       {"concurrent", c.concurrent},
                       {"steps", steps}});
  }
  nlohmann::json faults = nlohmann::json::array();
  for (const SwarmFault& f : spec.faults) {
    faults.push_back({{"kind", to_string(f.kind)},
                      {"at_ms", f.at_ms},
                      {"duration_ms", f.duration_ms},
                      {"client", f.client},
                      {"server", f.server},
                      {"amount", f.amount}});
  }
  return {{"kind", "swarm"},
          {"family", to_string(spec.family)},
          {"keys", spec.keys},
          {"ttl_ms", spec.ttl_ms},
          {"retry_delay_ms", spec.retry_delay_ms},
          {"retry_times", spec.retry_times},
          {"retry_jitter_ms", spec.retry_jitter_ms},
          {"fixed_latency_us", spec.fixed_latency_us},
          {"replication_delay_ms", spec.replication_delay_ms},
          {"safety_ms", spec.safety_ms},
          {"heal_clients", spec.heal_clients},
          {"careful", spec.careful},
          {"server_delays_us", spec.server_delays_us},
          {"clients", clients},
          {"faults", faults}};
}

SwarmSpec swarm_spec_from_json(const nlohmann::json& j) {
  try {
    if (j.at("kind").get<std::string>() != "swarm") throw std::invalid_argument("not a swarm spec");
    SwarmSpec spec;
    const std::optional<LockFamily> family =
        lock_family_from_string(j.at("family").get<std::string>());
    if (!family) {
      throw std::invalid_argument("swarm spec: family must be lease, keyed-rw or keyed-fifo");
    }
    spec.family = *family;
    spec.keys = j.at("keys").get<int>();
    spec.ttl_ms = j.at("ttl_ms").get<int64_t>();
    spec.retry_delay_ms = j.at("retry_delay_ms").get<int64_t>();
    spec.retry_times = j.at("retry_times").get<int>();
    spec.retry_jitter_ms = j.at("retry_jitter_ms").get<int64_t>();
    spec.fixed_latency_us = j.at("fixed_latency_us").get<int64_t>();
    spec.replication_delay_ms = j.at("replication_delay_ms").get<int64_t>();
    spec.safety_ms = j.at("safety_ms").get<int64_t>();
    spec.heal_clients = j.at("heal_clients").get<int>();
    spec.careful = j.value("careful", false);  // absent in specs saved before careful clients
    // Absent in specs saved before servers could be slow.
    spec.server_delays_us = j.value("server_delays_us", std::vector<int64_t>{});
    for (const auto& jc : j.at("clients")) {
      SwarmClient c{.start_ms = jc.at("start_ms").get<int64_t>(),
                    .drift_ppm = jc.at("drift_ppm").get<int64_t>(),
                    .concurrent = jc.value("concurrent", false)};
      for (const auto& js : jc.at("steps")) {
        c.steps.push_back(
            {.key = js.at("key").get<int>(),
             .gap_ms = js.at("gap_ms").get<int64_t>(),
             .hold_ms = js.at("hold_ms").get<int64_t>(),
             .pause_ms = js.at("pause_ms").get<int64_t>(),
             .extend = js.at("extend").get<bool>(),
             .release = js.at("release").get<bool>(),
             .auto_extend = js.value("auto_extend", false),  // absent in specs saved before it
             .shared = js.at("shared").get<bool>(),
             .clear = js.value("clear", false),  // absent in specs saved before it existed
             .release_pause_after_us = js.at("release_pause_after_us").get<int64_t>(),
             .release_pause_ms = js.at("release_pause_ms").get<int64_t>(),
             .acquire_crash_after_us = js.at("acquire_crash_after_us").get<int64_t>(),
             // absent in specs saved before slow acquires were drawn
             .acquire_pause_after_us = js.value("acquire_pause_after_us", int64_t{-1}),
             .acquire_pause_ms = js.value("acquire_pause_ms", int64_t{0})});
        c.steps.back().ttl_ms = js.value("ttl_ms", int64_t{0});
        c.steps.back().extend_ttl_ms = js.value("extend_ttl_ms", int64_t{0});
        c.steps.back().late_ms = js.value("late_ms", int64_t{-1});
      }
      spec.clients.push_back(std::move(c));
    }
    for (const auto& jf : j.at("faults")) {
      const std::optional<FaultKind> kind =
          fault_kind_from_string(jf.at("kind").get<std::string>());
      if (!kind)
        throw std::invalid_argument("unknown fault kind " + jf.at("kind").get<std::string>());
      spec.faults.push_back({.kind = *kind,
                             .at_ms = jf.at("at_ms").get<int64_t>(),
                             .duration_ms = jf.at("duration_ms").get<int64_t>(),
                             .client = jf.at("client").get<int>(),
                             .server = jf.value("server", 0),
                             .amount = jf.at("amount").get<int64_t>()});
    }
    spec.validate();
    return spec;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("not a swarm spec: {}", e.what()));
  }
}

// ---------------------------------------------------------------------------------------------
// running a spec

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
bool careful_work(Client& c, Lock& lock, int64_t duration_ms) {
  const int64_t left_us = c.validity_end_us(lock) - c.clock().monotonic_us();
  if (left_us <= duration_ms * 1000) {
    // Validity covers [start, end): the holder is out in its last microsecond, before whoever
    // the end lets in (events at one instant run in no promised order).
    if (left_us > 1) c.clock().sleep_for_us(left_us - 1);
    c.leave(lock);
    return false;
  }
  c.sleep_ms(duration_ms);
  return true;
}

// A careful holder's step: the same calls as lease_step's, its work done only while the lock is
// valid (an extend is asked for regardless), then work until the validity ends. It leaves the critical section when the validity ends, and
// while an extend is in flight (it cannot know whether the call outlives the validity),
// re-entering when the extend succeeded in time. Then it releases (outside the critical section)
// unless the step walks away.
void careful_lease_step(Client& c, Lock& lock, const SwarmStep& step, int64_t extend_ttl_ms) {
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
    if (valid) c.reenter(lock);
  }
  valid = valid && careful_work(c, lock, 0);
  if (valid && value) c.write(lock, *value + 1);
  // A careful holder is a lease-bound worker: having done the step's work, it keeps working until
  // its validity ends, so whatever validity the adapter overstates, it spends inside.
  if (valid) careful_work(c, lock, std::numeric_limits<int64_t>::max() / 1000);
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
    careful_lease_step(c, *lock, step, extend_ttl_ms);
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
  KeyedSimBackend& backend = keyed_backend(run.env->backend());
  if (run.spec.family == LockFamily::keyed_fifo) {
    if (step.clear) {
      run.env->world().trace_linef("{} calls fifo clear()", c.name());
      backend.fifo()->clear();
      return;
    }
    backend.steps().fifo_hold(c, key_name(step.key), step.hold_ms);
    return;
  }
  keyed::RwHandle handle = backend.steps().rw_acquire(
      c, key_name(step.key), step.shared ? keyed::RwMode::shared : keyed::RwMode::exclusive);
  if (step.pause_ms > 0) c.pause(step.pause_ms);
  c.sleep_ms(step.hold_ms);
  backend.steps().rw_release(c, handle);
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
