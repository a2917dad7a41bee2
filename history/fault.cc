#include "lockstep/fault.h"

#include <utility>

namespace lockstep {

namespace {

constexpr std::pair<FaultKind, std::string_view> kFaultNames[] = {
    {FaultKind::pause, "pause"},
    {FaultKind::crash, "crash"},
    {FaultKind::clock_drift, "clock-drift"},
    {FaultKind::clock_jump, "clock-jump"},
    {FaultKind::clock_offset, "clock-offset"},
    {FaultKind::server_drift, "server-drift"},
    {FaultKind::server_clock_jump, "server-clock-jump"},
    {FaultKind::server_crash, "server-crash"},
    {FaultKind::server_restart, "server-restart"},
    {FaultKind::server_pause, "server-pause"},
    {FaultKind::failover, "failover"},
    {FaultKind::latency, "latency"},
    {FaultKind::loss, "loss"},
    {FaultKind::partition, "partition"},
    {FaultKind::session_end, "session-end"},
    {FaultKind::reset, "reset"},
    {FaultKind::stall, "stall"},
    {FaultKind::other, "other"},
};
static_assert(std::size(kFaultNames) == kFaultKindsAll.size(), "every FaultKind has a name");

}  // namespace

std::string_view to_string(FaultKind kind) {
  for (const auto& [k, name] : kFaultNames) {
    if (k == kind) return name;
  }
  return "unknown";
}

std::optional<FaultKind> fault_kind_from_string(std::string_view name) {
  for (const auto& [k, n] : kFaultNames) {
    if (n == name) return k;
  }
  return std::nullopt;
}

std::string_view to_string(RestartRule rule) {
  switch (rule) {
    case RestartRule::never: return "never";
    case RestartRule::after_ttl: return "after-ttl";
    case RestartRule::always: return "always";
  }
  return "unknown";
}

bool lasting(FaultKind kind) {
  switch (kind) {
    case FaultKind::clock_drift:
    case FaultKind::clock_jump:
    case FaultKind::clock_offset:
    case FaultKind::server_clock_jump:
    case FaultKind::server_crash:
    case FaultKind::server_restart:
    case FaultKind::failover:
    case FaultKind::session_end: return true;  // the session's locks stay gone
    default: return false;
  }
}

}  // namespace lockstep
