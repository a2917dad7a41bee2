#include "scenarios/premises.h"

#include <algorithm>
#include <map>
#include <set>

namespace lockstep::premises {

namespace {

bool strikes(const HistoryEvent& e, int client, FaultKind kind) {
  return e.kind == EventKind::fault && e.fault == kind && (e.client < 0 || e.client == client);
}

// When the fault stops acting: its recorded end, or for a stop-the-world its length (a scenario
// may record a pause as an instant so it excuses no waiting).
TimeUs effect_end_us(const HistoryEvent& fault) {
  TimeUs end_us = std::max(fault.end_us, fault.time_us);
  if (fault.fault == FaultKind::pause || fault.fault == FaultKind::server_pause)
    end_us = std::max(end_us, fault.time_us + fault.amount);
  return end_us;
}

// Walks the history keeping who is inside and what is pending, and calls see(event, state) on each
// event before it changes that state.
struct State {
  std::set<int> inside;
  std::map<int, Op> pending;  // client -> the operation it invoked and has not completed
};

template <class See>
bool any_event(const History& history, See see) {
  State state;
  for (const HistoryEvent& e : history.events()) {
    if (see(e, state)) return true;
    if (e.kind == EventKind::cs_enter) state.inside.insert(e.client);
    if (e.kind == EventKind::cs_exit) state.inside.erase(e.client);
    if (e.kind == EventKind::invoke) state.pending[e.client] = e.op;
    if (e.kind == EventKind::complete) state.pending.erase(e.client);
  }
  return false;
}

bool pending(const State& s, int client, Op op) {
  const auto it = s.pending.find(client);
  return it != s.pending.end() && it->second == op;
}

}  // namespace

bool entered(const History& history, int client) {
  return any_event(history, [client](const HistoryEvent& e, const State&) {
    return e.kind == EventKind::cs_enter && e.client == client;
  });
}

bool fault_while_inside(const History& history, int client, FaultKind kind) {
  TimeUs until_us = -1;  // the latest such fault is in effect until then
  return any_event(history, [&](const HistoryEvent& e, const State& s) {
    if (strikes(e, client, kind)) {
      if (s.inside.count(client) > 0) return true;
      until_us = std::max(until_us, effect_end_us(e));
    }
    return e.kind == EventKind::cs_enter && e.client == client && e.time_us <= until_us;
  });
}

bool fault_while_pending(const History& history, int client, FaultKind kind, Op op) {
  return any_event(history, [client, kind, op](const HistoryEvent& e, const State& s) {
    return strikes(e, client, kind) && pending(s, client, op);
  });
}

bool killed_while_inside(const History& history, int client) {
  return any_event(history, [client](const HistoryEvent& e, const State& s) {
    return e.kind == EventKind::fault && e.kills_client && e.client == client &&
           s.inside.count(client) > 0;
  });
}

bool killed_while_pending(const History& history, int client, Op op) {
  return any_event(history, [client, op](const HistoryEvent& e, const State& s) {
    return e.kind == EventKind::fault && e.kills_client && e.client == client &&
           pending(s, client, op);
  });
}

bool granted_before_killed(const History& history, int client) {
  bool granted = false;
  for (const HistoryEvent& e : history.events()) {
    if (e.client != client) continue;
    granted = granted || e.kind == EventKind::grant;
    if (e.kind == EventKind::fault && e.kills_client) return granted;
  }
  return false;
}

bool contended(const History& history) {
  return any_event(history, [](const HistoryEvent& e, const State& s) {
    if (e.kind != EventKind::invoke || e.op != Op::acquire) return false;
    for (int other : s.inside) {
      if (other != e.client) return true;
    }
    for (const auto& [other, op] : s.pending) {
      if (other != e.client && op == Op::acquire) return true;
    }
    return false;
  });
}

bool invoked_after_other_entered(const History& history, int client, Op op) {
  bool other_entered = false;
  return any_event(history, [&](const HistoryEvent& e, const State&) {
    other_entered = other_entered || (e.kind == EventKind::cs_enter && e.client != client);
    return other_entered && e.kind == EventKind::invoke && e.client == client && e.op == op;
  });
}

bool acquired_during(const History& history, FaultKind kind) {
  TimeUs from_us = -1;
  TimeUs until_us = -1;
  return any_event(history, [&](const HistoryEvent& e, const State&) {
    if (e.kind == EventKind::fault && e.fault == kind) {
      from_us = e.time_us;
      until_us = effect_end_us(e);
    }
    const bool acquiring =
        (e.kind == EventKind::invoke && e.op == Op::acquire) || e.kind == EventKind::cs_enter;
    return acquiring && from_us >= 0 && e.time_us >= from_us && e.time_us <= until_us;
  });
}

}  // namespace lockstep::premises
