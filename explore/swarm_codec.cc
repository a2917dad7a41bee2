// A swarm spec as people read it (describe, the trace's `param` lines) and as reports carry it
// (JSON), read back with every number checked (explore/swarm.h).
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "explore/swarm.h"

namespace lockstep {

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

}  // namespace

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

}  // namespace lockstep
