#pragma once
// What a scenario's premise asks of its history: the moment it is about, seen in the history
// alone (faults, critical sections, invocations). A run whose premise did not happen judged
// nothing it claims to judge: the runner reports it as `vacuous`, never as a pass.
//
// Clients are numbered in the order the scenario added them (A is 0). "Inside" means between its
// cs_enter and cs_exit on any key; "pending" between an operation's invoke and its complete.
#include "history/history.h"

namespace lockstep::premises {

// The client entered a critical section at least once.
bool entered(const History& history, int client);
// A fault of this kind (aimed at the client, or at everyone) was in effect while the client was
// inside: it struck while the client was inside, or the client entered before it ended.
bool fault_while_inside(const History& history, int client, FaultKind kind);
// A fault of this kind struck while the client's `op` was pending.
bool fault_while_pending(const History& history, int client, FaultKind kind, Op op);
// A fault killed the client while it was inside, or while its `op` was pending.
bool killed_while_inside(const History& history, int client);
bool killed_while_pending(const History& history, int client, Op op);
// A server granted the client a lease (a grant fact attributed to it) before a fault killed it:
// the dead holder left a lease behind.
bool granted_before_killed(const History& history, int client);
// Some client asked for a key while another was inside or still asking: they contended.
bool contended(const History& history);
// The client invoked `op` after another client had entered (the late extend of stolen locks).
bool invoked_after_other_entered(const History& history, int client, Op op);
// Some acquire was invoked, or some client entered, while a fault of this kind was in effect.
bool acquired_during(const History& history, FaultKind kind);

}  // namespace lockstep::premises
