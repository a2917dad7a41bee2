#include <fmt/format.h>

#include "lockstep/adapter_traits.h"
#include "lockstep/run_end.h"
#include "lockstep/world_kind.h"

namespace lockstep {

std::string_view to_string(WorldKind world) {
  switch (world) {
    case WorldKind::sim: return "sim";
    case WorldKind::real: return "real";
  }
  return "?";
}

std::optional<WorldKind> world_kind_from_string(std::string_view name) {
  for (WorldKind world : kWorldKindsAll) {
    if (to_string(world) == name) return world;
  }
  return std::nullopt;
}

std::string world_names(const std::vector<WorldKind>& worlds, std::string_view separator) {
  std::string out;
  for (WorldKind world : worlds) {
    if (!out.empty()) out += separator;
    out += to_string(world);
  }
  return out;
}

std::string_view to_string(LockFamily family) {
  switch (family) {
    case LockFamily::lease: return "lease";
    case LockFamily::keyed_rw: return "keyed-rw";
    case LockFamily::keyed_fifo: return "keyed-fifo";
  }
  return "?";
}

std::optional<LockFamily> lock_family_from_string(std::string_view name) {
  for (LockFamily family : {LockFamily::lease, LockFamily::keyed_rw, LockFamily::keyed_fifo}) {
    if (to_string(family) == name) return family;
  }
  return std::nullopt;
}

std::string_view to_string(TokenKind tokens) {
  switch (tokens) {
    case TokenKind::none: return "none";
    case TokenKind::monotonic: return "monotonic";
    case TokenKind::random: return "random";
  }
  return "?";
}

std::string_view to_string(RunEnd end) {
  switch (end) {
    case RunEnd::complete: return "complete";
    case RunEnd::vacuous: return "vacuous";
    case RunEnd::no_leases: return "no_leases";
    case RunEnd::stopped: return "stopped";
    case RunEnd::event_bound: return "event_bound";
    case RunEnd::time_bound: return "time_bound";
    case RunEnd::error: return "error";
  }
  return "?";
}

std::optional<RunEnd> run_end_from_string(std::string_view name) {
  for (RunEnd end : kRunEndsAll) {
    if (to_string(end) == name) return end;
  }
  return std::nullopt;
}

}  // namespace lockstep
