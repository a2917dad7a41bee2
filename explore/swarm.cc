// A swarm spec: the fault kinds a sweep draws, what an adapter can take, and the spec's own
// rules. Drawing (swarm_draw.cc), describing and serializing (swarm_codec.cc) and running
// (swarm_run.cc) live beside it.
#include "explore/swarm.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/usage_error.h"
#include "lockstep/registry.h"

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

}  // namespace lockstep
