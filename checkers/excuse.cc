#include "checkers/excuse.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace lockstep {

namespace {

bool protected_by_fencing(const HistoryMeta& meta) {
  return meta.fencing_on && meta.monotonic_tokens;
}

// What the fault's kind can break, outside the envelope. Tokens are lost only with server state.
bool can_break(const HistoryMeta& meta, const HistoryEvent& fault, Invariant invariant) {
  const bool loses_state =
      fault.fault == FaultKind::failover || fault.fault == FaultKind::server_restart;
  const bool client_clock = fault.fault == FaultKind::clock_drift ||
                            fault.fault == FaultKind::clock_jump ||
                            fault.fault == FaultKind::clock_offset;
  switch (invariant) {
    case Invariant::mutual_exclusion:
      return fault.fault != FaultKind::crash && fault.fault != FaultKind::other &&
             fault.fault != FaultKind::server_crash;
    case Invariant::lease_exclusion:
      // A client's clock reaches the servers' leases only where the adapter sends wall times.
      if (client_clock) return fault.fault != FaultKind::clock_drift;
      return loses_state || fault.fault == FaultKind::server_drift ||
             fault.fault == FaultKind::server_clock_jump;
    case Invariant::fencing: return loses_state;
    case Invariant::valid_on_return:
      // A clock that measures wrongly or a server that loses or shortens leases can end a lease
      // the holder could not know had ended; a pause cannot (the lock checks after it).
      return loses_state || fault.fault == FaultKind::clock_drift ||
             fault.fault == FaultKind::server_drift || fault.fault == FaultKind::server_clock_jump;
    case Invariant::no_lost_update:
      if (protected_by_fencing(meta)) return loses_state;
      return can_break(meta, fault, Invariant::mutual_exclusion);
    default: return false;  // ownership, liveness and the keyed-lock invariants: never excused
  }
}

TimeUs longest_lease_us(const History& history) {
  TimeUs longest = 0;
  for (const HistoryEvent& e : history.events()) {
    if (e.kind == EventKind::grant || e.kind == EventKind::extend)
      longest = std::max(longest, e.ttl_us);
  }
  return longest;
}

bool involves(const Violation& v, int client) {
  return client < 0 || v.clients.empty() ||
         std::find(v.clients.begin(), v.clients.end(), client) != v.clients.end();
}

// Whether `client` was inside its critical section on `key` (any key when empty) just before the
// event at `index`.
bool inside_before(const History& history, int client, const std::string& key, size_t index) {
  for (size_t i = index; i-- > 0;) {
    const HistoryEvent& e = history[i];
    if (e.client != client || (!key.empty() && e.key != key)) continue;
    if (e.kind == EventKind::cs_enter) return true;
    if (e.kind == EventKind::cs_exit) return false;
  }
  return false;
}

// Where the violation's story begins: the earliest event that shows it (a lease_exclusion's first
// grant may be an earlier lease of the same client), and the invocation of the acquire through
// which each involved client got where the violation found it (its last successful acquire of the
// key completed by then).
TimeUs window_start_us(const History& history, const Violation& v) {
  if (v.clients.empty()) return 0;
  TimeUs start = v.time_us;
  for (size_t index : v.events) {
    if (index < history.size()) start = std::min(start, history[index].time_us);
  }
  for (int client : v.clients) {
    std::optional<TimeUs> invoked;
    std::optional<TimeUs> acquired;
    for (const HistoryEvent& e : history.events()) {
      if (e.time_us > v.time_us) break;
      if (e.client != client || e.op != Op::acquire || (!v.key.empty() && e.key != v.key)) continue;
      if (e.kind == EventKind::invoke) invoked = e.time_us;
      if (e.kind == EventKind::complete && e.outcome == Outcome::ok) acquired = invoked;
    }
    if (!acquired) return 0;  // nothing to narrow it by: the run so far
    start = std::min(start, *acquired);
  }
  return start;
}

bool touches_window(const HistoryEvent& fault, TimeUs start_us, TimeUs end_us) {
  if (fault.time_us > end_us) return false;
  return lasting(fault.fault) || std::max(fault.end_us, fault.time_us) >= start_us;
}

std::string fault_text(const HistoryEvent& fault) {
  return fmt::format("{} at {}us: {}", to_string(fault.fault), fault.time_us, fault.detail);
}

}  // namespace

bool inside_envelope(const History& history, const HistoryEvent& fault) {
  const FaultEnvelope& v = history.meta.envelope;
  switch (fault.fault) {
    case FaultKind::pause: return false;  // the holder's overrun: in no envelope
    case FaultKind::crash: return true;   // the lease's TTL is the safety net
    case FaultKind::clock_drift: return fault.amount >= -v.client_slow_ppm_max;
    case FaultKind::clock_jump:
    case FaultKind::clock_offset: return v.client_wall_clock;
    case FaultKind::server_drift: return fault.amount <= v.server_fast_ppm_max;
    case FaultKind::server_clock_jump: return fault.amount <= 0 || v.server_wall_clock;
    case FaultKind::server_crash: return true;  // judged when it comes back
    case FaultKind::server_restart:
      return v.server_restart == RestartRule::always ||
             (v.server_restart == RestartRule::after_ttl &&
              fault.amount >= longest_lease_us(history));
    case FaultKind::server_pause: return v.server_pause;
    case FaultKind::failover: return v.failover;
    case FaultKind::latency:
    case FaultKind::loss:
    case FaultKind::partition: return v.network;
    // No lock keeps a session the server ended: only fencing can refuse its holder's writes.
    case FaultKind::session_end: return false;
    case FaultKind::other: return true;  // not a fault of the world: excuses nothing
  }
  return true;
}

void excuse_violations(const History& history, std::vector<Violation>& violations) {
  for (Violation& v : violations) {
    v.excused_by.reset();
    v.excuse = "not excused";
    const TimeUs start_us = window_start_us(history, v);
    for (const HistoryEvent& fault : history.events()) {
      if (fault.time_us > v.time_us) break;
      if (fault.kind != EventKind::fault || !involves(v, fault.client)) continue;
      if (!touches_window(fault, start_us, v.time_us)) continue;
      if (inside_envelope(history, fault) || !can_break(history.meta, fault, v.invariant)) continue;
      if (fault.fault == FaultKind::pause) {
        // An overrun: it was inside when the world stopped, and the other got in while it was
        // still stopped (a holder that checks its validity on waking leaves at once). Its stale
        // write comes after it wakes.
        const bool late = v.invariant == Invariant::mutual_exclusion && v.time_us > fault.end_us;
        if (late || !inside_before(history, fault.client, v.key, fault.index)) continue;
        v.excused_by = fault.index;
        v.excuse = fmt::format("holder overrun: c{} was paused inside its critical section ({})",
                               fault.client, fault_text(fault));
        break;
      }
      v.excused_by = fault.index;
      v.excuse = fmt::format("{} (outside the adapter's fault envelope)", fault_text(fault));
      break;
    }
  }
}

std::vector<Violation> check_and_excuse(const History& history) {
  constexpr size_t kReportedPerInvariantMax = CheckOptions{}.per_invariant_max;
  std::vector<Violation> all = check_all(history, {.per_invariant_max = 64});
  excuse_violations(history, all);
  std::vector<Violation> kept;
  for (Invariant invariant : all_invariants()) {
    size_t taken = 0;
    for (bool excused : {false, true}) {
      for (const Violation& v : all) {
        if (v.invariant != invariant || v.excused() != excused) continue;
        if (taken++ < kReportedPerInvariantMax) kept.push_back(v);
      }
    }
  }
  std::stable_sort(kept.begin(), kept.end(), [](const Violation& a, const Violation& b) {
    return a.invariant != b.invariant ? a.invariant < b.invariant : a.time_us < b.time_us;
  });
  return kept;
}

}  // namespace lockstep
