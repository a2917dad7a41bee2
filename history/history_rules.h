#pragma once
// The rules of docs/history.schema.json that span lines, as checks: what no recorder writes, so a
// history that breaks one is refused (`lockstep check`: exit 2 naming the line and the rule)
// rather than judged. Judging it would go wrong either way: a completion without its invocation
// or an exit without its enter makes a checker see nothing where there was something, and an
// identity out of range would have to be folded into another.
//
//   ids       every client is in [0, meta.clients) (in [0, kHistoryClientsMax) when the meta
//             names no count); quorum is at most the servers there are
//   calls     a completion follows an invocation of the same client and op still pending; a
//             release or extend is invoked, and a renewal made, by a client that acquired that
//             key before
//   sections  a client enters a key it is not inside (cs_enter), and leaves one it is inside
//             (cs_exit)
//   faults    a fault's window does not end before it starts (end_us 0: an instant); an amount in
//             a unit that cannot be negative (pause, latency, server-restart, loss, partition) is
//             not; loss is a percentage, partition 0 or 1
//   resource  a key whose resource accepted a write has its final_value (no_lost_update is judged
//             against it)
#include <cstddef>
#include <optional>
#include <string>

#include "history/history.h"

namespace lockstep {

// Bounds of a history's identities: a number outside is refused at the reader, never cut to fit.
// Far above any run (a sweep has at most 12 + 12 clients, retry-storm 2000, Redlock 5 nodes).
inline constexpr int kHistoryClientsMax = 100'000;
inline constexpr int kHistoryServersMax = 1'000;

struct HistoryRuleBreak {
  size_t event = 0;  // the index of the event that breaks it; SIZE_MAX: the meta line
  std::string rule;  // which rule, and how, in words
};

// The first event (in history order) that breaks a rule above, or nullopt.
std::optional<HistoryRuleBreak> first_rule_break(const History& history);

}  // namespace lockstep
