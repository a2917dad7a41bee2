#pragma once
// How a run ended. Only `complete` was judged in full; every other end is an error of the run
// (verdict "error", exit 4) except `vacuous`: it completed, but the scenario's premise did not
// happen, so it proved nothing (verdict "vacuous", exit 1). Strings exist only at the edges
// (reports, the trace's header).
#include <array>
#include <optional>
#include <string_view>

#include <fmt/format.h>

namespace lockstep {

enum class RunEnd {
  complete,     // the simulator's queue ran empty, or every real client finished
  vacuous,      // complete, but the scenario's premise never happened
  no_leases,    // a lease lock whose grants no server recorded: its lease checks would be blind
  stopped,      // the simulator was stopped (the history bound)
  event_bound,  // the simulator hit its event bound
  time_bound,   // the simulator hit its time bound
  error,        // anything else: a client's process failed, a real run failed or timed out
};
inline constexpr std::array kRunEndsAll = {
    RunEnd::complete,    RunEnd::vacuous,    RunEnd::no_leases, RunEnd::stopped,
    RunEnd::event_bound, RunEnd::time_bound, RunEnd::error};

std::string_view to_string(RunEnd end);
std::optional<RunEnd> run_end_from_string(std::string_view name);

}  // namespace lockstep

// Formats as its string, so messages and traces read as before.
template <>
struct fmt::formatter<lockstep::RunEnd> : fmt::formatter<std::string_view> {
  template <typename FormatContext>
  auto format(lockstep::RunEnd value, FormatContext& ctx) const {
    return fmt::formatter<std::string_view>::format(lockstep::to_string(value), ctx);
  }
};
