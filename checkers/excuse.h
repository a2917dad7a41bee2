#pragma once
// Which violations a fault excuses. A checker says what broke; this says whether the run's faults
// explain it, reading only the history (its fault events and the envelope in its meta), so a
// recorded history is judged the same way as the run that wrote it.
//
// A violation is excused by a fault event when all of these hold:
// - the fault is outside the adapter's envelope (inside_envelope is false): a fault the adapter
//   claims to survive excuses nothing;
// - its kind can break that invariant (a fast server clock can end a lease early; a failover can
//   reissue a token; nothing excuses ownership, liveness or the keyed-lock invariants), where an
//   update protected by fencing (fencing on, monotonic tokens) is lost only if tokens were;
// - it touched the clients involved (a fault aimed at one client excuses only violations that
//   involve it; a server or network-wide fault touches everyone);
// - it touched the time window involved: from the earliest event that shows the violation, or the
//   acquire that led an involved client into it if earlier, to the violation itself (lasting
//   faults, such as a clock jump or a lost server, from when they struck).
// A client's pause excuses a lost exclusion only as that holder's overrun: it was paused while
// inside its critical section on the key, and the other client got in while it was stopped (a
// lease that ends while its holder cannot run). A server that double-grants meanwhile is still
// caught by lease_exclusion, which no pause excuses.
// The earliest excusing fault is named; never a global excuse.
#include <vector>

#include "checkers/checkers.h"

namespace lockstep {

// Whether the fault event is inside the envelope in history.meta (restarts are judged against the
// longest lease the history granted).
bool inside_envelope(const History& history, const HistoryEvent& fault);

// Sets excused_by and excuse on every violation.
void excuse_violations(const History& history, std::vector<Violation>& violations);

// check_all, each violation excused or not. The checkers are asked for more than this keeps, so
// that excused violations early in a run cannot hide an unexcused one after them: per invariant
// it keeps at most CheckOptions{}.per_invariant_max, the unexcused ones first, the earliest of
// each, in the order of check_all.
std::vector<Violation> check_and_excuse(const History& history);

}  // namespace lockstep
