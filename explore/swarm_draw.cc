// Drawing a swarm spec from a seed (explore/swarm.h: draw_swarm_spec, strikable_fault_kinds).
#include <algorithm>

#include "explore/swarm.h"
#include "lockstep/random.h"

namespace lockstep {

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

}  // namespace lockstep
