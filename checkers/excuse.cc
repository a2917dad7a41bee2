#include "checkers/excuse.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace lockstep {

namespace {

// What a measured clock or lease error may differ from the amount a fault explains: message
// latency and integer rounding, not a fault's effect.
constexpr TimeUs kSlackUs = 2'000;
constexpr TimeUs kUnbounded = std::numeric_limits<TimeUs>::max() / 4;

bool protected_by_fencing(const HistoryMeta& meta) {
  return meta.fencing_on && meta.monotonic_tokens;
}

// What the fault's kind can break at all, outside the envelope. Tokens are lost only with server
// state; a keyed (in-process) lock has no lease for any fault to shorten.
bool can_break(const HistoryMeta& meta, const HistoryEvent& fault, Invariant invariant) {
  if (meta.keyed) return false;  // fifo, writer_preference, no_leak, and exclusion of keyed locks
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
      // A client's clock reaches the servers' leases only where the adapter sends wall times;
      // its rate, only where clients read each other's wall deadlines.
      if (client_clock) {
        return fault.fault != FaultKind::clock_drift ||
               meta.envelope.clients_compare_wall_deadlines;
      }
      // A paused server that wakes from stale state (a deposed leader renewing from its own
      // lessor) can promise a lease the others no longer keep.
      return loses_state || fault.fault == FaultKind::server_drift ||
             fault.fault == FaultKind::server_clock_jump || fault.fault == FaultKind::server_pause;
    case Invariant::fencing: return loses_state;
    case Invariant::valid_on_return:
    case Invariant::validity_within_lease:
      // A clock that measures wrongly or a server that loses or shortens leases can end a lease
      // the holder could not know had ended; a pause cannot (the lock checks after it). A reset
      // ends a session, and a session lock's lease with it, before its holder next speaks.
      return loses_state || client_clock || fault.fault == FaultKind::server_drift ||
             fault.fault == FaultKind::server_clock_jump || fault.fault == FaultKind::session_end ||
             fault.fault == FaultKind::reset;
    case Invariant::no_lost_update:
      if (protected_by_fencing(meta)) return loses_state;
      return can_break(meta, fault, Invariant::mutual_exclusion);
    case Invariant::error_not_applied:
      // A lease left behind by its promise: a server clock that gained time may have ended it
      // before the call returned (where the checker measured by how much: excess_us).
      return fault.fault == FaultKind::server_drift || fault.fault == FaultKind::server_clock_jump;
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
// grant may be an earlier lease of the same client), the first holder's claim, and the invocation
// of the acquire through which each involved client got where the violation found it.
TimeUs window_start_us(const History& history, const Violation& v) {
  if (v.clients.empty()) return 0;
  TimeUs start = v.time_us;
  if (v.claim_since_us > 0) start = std::min(start, v.claim_since_us);
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
    if (!acquired) continue;  // its claim is the lease's (the violation's own events say when)
    start = std::min(start, *acquired);
  }
  return start;
}

bool touches_window(const HistoryEvent& fault, TimeUs struck_us, TimeUs start_us, TimeUs end_us) {
  if (struck_us > end_us) return false;
  return lasting(fault.fault) || std::max(fault.end_us, fault.time_us) >= start_us;
}

std::string fault_text(const HistoryEvent& fault) {
  return fmt::format("{} at {}us: {}", to_string(fault.fault), fault.time_us, fault.detail);
}

// The invocation of the last acquire of key by client at or before until_us (until_us itself when
// there is none): where a client's claim on its lease began by its own measure.
TimeUs acquire_start_us(const History& history, int client, const std::string& key,
                        TimeUs until_us) {
  TimeUs start = until_us;
  for (const HistoryEvent& e : history.events()) {
    if (e.time_us > until_us) break;
    if (e.client == client && e.kind == EventKind::invoke && e.op == Op::acquire &&
        (key.empty() || e.key == key))
      start = e.time_us;
  }
  return start;
}

// When the holder's claim began to be measured: the invocation of the acquire that led to it (a
// lock counts its validity from before it asked), or the start of the term of the lease its grant
// rides where that was earlier (an etcd key from an acquire that gave up, whose lease was refreshed
// while the key waited, and that won after the client asked again), else the claim itself.
TimeUs holder_claim_start_us(const History& history, const Violation& v) {
  if (v.holder < 0 || v.claim_since_us <= 0) return v.claim_since_us;
  TimeUs start_us = acquire_start_us(history, v.holder, v.key, v.claim_since_us);
  for (size_t index : v.events) {
    if (index >= history.size()) continue;
    const HistoryEvent& e = history[index];
    if (e.kind == EventKind::grant && e.client == v.holder && e.lease_since_us > 0)
      start_us = std::min(start_us, e.lease_since_us);
  }
  return start_us;
}

// What a clock running excess_ppm off loses (or gains) from from_us to until_us (0 if empty).
TimeUs drift_error_us(TimeUs from_us, TimeUs until_us, int64_t excess_ppm) {
  const TimeUs span = std::max<TimeUs>(until_us - from_us, 0);
  __extension__ using Int128 = __int128;  // span x ppm overflows 64 bits for long runs
  return static_cast<TimeUs>(static_cast<Int128>(span) * excess_ppm / 1'000'000);
}

// How much of a violation a clock running `excess_ppm` beyond what the lock allows for could
// explain: the error it accumulates from the first holder's claim (or from when the drift began,
// whichever is later) until the drift ended or the overrun did (the violation plus its excess:
// a slow holder's error keeps growing while it overruns), whichever is earlier.
TimeUs drift_explains_us(TimeUs claim_start_us, const HistoryEvent& fault, const Violation& v,
                         int64_t excess_ppm) {
  if (excess_ppm <= 0) return 0;
  const TimeUs from = std::max(fault.time_us, claim_start_us);
  const TimeUs overrun_end_us = v.time_us + std::max<TimeUs>(v.excess_us, 0);
  const TimeUs until =
      fault.end_us > fault.time_us ? std::min(fault.end_us, overrun_end_us) : overrun_end_us;
  return drift_error_us(from, until, excess_ppm);
}

// What a fault explains of a violation: why, and how many microseconds of its excess (kUnbounded
// when the fault has no measure, like a partition).
struct Explanation {
  std::string how;
  TimeUs explains_us = kUnbounded;
  // false: it can only prolong a violation that something else began (the entrant paused
  // inside), so it excuses only together with a fault that began it.
  bool can_begin = true;
};

// The lease the entrant entered on: the value its last successful acquire of the key (at or
// before the violation) returned, when the servers' grant and extend records name it.
struct EntrantLease {
  TimeUs invoked_us = 0;        // the acquire's invocation
  TimeUs first_granted_us = 0;  // the first grant of that value
  TimeUs end_us = 0;            // the latest end, in true time, of its grants and extends
};

// The value `client`'s last successful acquire of the key (invoked from `invoked_us`, completed at
// or before the violation) returned; nullopt when none names one.
std::optional<std::string> acquired_value(const History& history, const Violation& v, int client,
                                          TimeUs invoked_us) {
  std::optional<std::string> value;
  for (const HistoryEvent& e : history.events()) {
    if (e.time_us > v.time_us) break;
    if (e.client == client && e.kind == EventKind::complete && e.op == Op::acquire &&
        e.outcome == Outcome::ok && e.key == v.key && e.time_us >= invoked_us && !e.value.empty())
      value = e.value;
  }
  return value;
}

std::optional<std::string> entrant_value(const History& history, const Violation& v,
                                         TimeUs invoked_us) {
  return acquired_value(history, v, v.entrant, invoked_us);
}

std::optional<EntrantLease> entrant_lease(const History& history, const Violation& v) {
  if (v.entrant < 0) return std::nullopt;
  EntrantLease lease{.invoked_us = acquire_start_us(history, v.entrant, v.key, v.time_us)};
  const std::optional<std::string> value = entrant_value(history, v, lease.invoked_us);
  if (!value) return std::nullopt;
  bool granted = false;
  for (const HistoryEvent& e : history.events()) {
    if (e.time_us > v.time_us) break;
    if ((e.kind != EventKind::grant && e.kind != EventKind::extend) || e.key != v.key ||
        e.value != *value)
      continue;
    if (!granted && e.kind == EventKind::grant) lease.first_granted_us = e.time_us;
    granted = granted || e.kind == EventKind::grant;
    lease.end_us = std::max(lease.end_us, e.time_us + e.ttl_us);
  }
  if (!granted) return std::nullopt;
  return lease;
}

// An entrant whose slow clock hid that its own lease had ended: that lease had run out in true
// time before it entered, and its clock, slow by excess_ppm beyond the envelope from the acquire's
// invocation to the entry, lost at least that lateness, so even a correct late-grant check (the
// acquire measured on that clock against the TTL) could not see it. Then the whole overlap
// follows from the late entry; otherwise the clock explains none of it.
std::optional<Explanation> entrant_late_by_clock(const History& history, const HistoryEvent& fault,
                                                 const Violation& v, int64_t excess_ppm) {
  const std::optional<EntrantLease> lease = entrant_lease(history, v);
  if (!lease || lease->end_us > v.time_us) return std::nullopt;  // not a late entry
  const TimeUs from_us = std::max(fault.time_us, lease->invoked_us);
  const TimeUs until_us =
      fault.end_us > fault.time_us ? std::min(fault.end_us, v.time_us) : v.time_us;
  const TimeUs lost_us = drift_error_us(from_us, until_us, excess_ppm);
  const TimeUs late_us = v.time_us - lease->end_us;
  if (lost_us < late_us) return std::nullopt;
  return Explanation{
      fmt::format("c{}'s clock ran {}ppm slower than the lock allows for while it "
                  "acquired: it lost {}us, and entered {}us after its lease ended",
                  fault.client, excess_ppm, lost_us, late_us)};
}

// A drifting clock where clients read each other's wall deadlines: its wall reading drifts from
// the others' by what it gained or lost since the drift began (the error stays: fault.h,
// lasting). A fast entrant read a live deadline as past that much early (up to its entry); a slow
// client of the overlap wrote deadlines that end that much early by the others' clocks (up to the
// overrun's end).
// Any other client's drift explains nothing of this (nullopt: judged as for any lock).
std::optional<Explanation> wall_deadline_drift(const HistoryEvent& fault, const Violation& v) {
  const bool fast = fault.amount > 0;
  // Slow: the deadline writer, who is the overlap's holder, or its entrant when a late reply let
  // the earlier lease's holder in second.
  const int reader = fast ? v.entrant : v.holder;
  const bool involved = fault.client < 0 || reader < 0 || fault.client == reader ||
                        (!fast && fault.client == v.entrant);
  if (!involved) return std::nullopt;
  const TimeUs end_us = fast ? v.time_us : v.time_us + std::max<TimeUs>(v.excess_us, 0);
  const TimeUs until_us = fault.end_us > fault.time_us ? std::min(fault.end_us, end_us) : end_us;
  const TimeUs error_us = drift_error_us(fault.time_us, until_us, std::abs(fault.amount));
  return Explanation{
      fast ? fmt::format("c{}'s wall clock ran {}ppm fast and gained {}us: it read a live "
                         "deadline as past",
                         fault.client, fault.amount, error_us)
           : fmt::format("c{}'s wall clock ran {}ppm slow and lost {}us: the deadlines it wrote "
                         "ended early by the others' clocks",
                         fault.client, -fault.amount, error_us),
      error_us};
}

// An entrant whose acquire the servers granted on fewer than the quorum of them (Redlock counting
// N/2 grants as a majority) entered on no lease: whatever the faults did to the holder's leases,
// its entry is the lock's own doing. The grant count of the value its acquire returned; nullopt
// where the servers recorded no grant of it (a real server, a keyed lock): nothing to say.
std::optional<size_t> entrant_grant_servers(const History& history, const Violation& v) {
  if (v.entrant < 0) return std::nullopt;
  const std::optional<std::string> value =
      entrant_value(history, v, acquire_start_us(history, v.entrant, v.key, v.time_us));
  if (!value) return std::nullopt;
  std::vector<std::string_view> servers;
  for (const HistoryEvent& e : history.events()) {
    if (e.time_us > v.time_us) break;
    if (e.kind != EventKind::grant || e.key != v.key || e.value != *value) continue;
    if (std::find(servers.begin(), servers.end(), e.server) == servers.end())
      servers.push_back(e.server);
  }
  if (servers.empty()) return std::nullopt;
  return servers.size();
}

// What a server clock fault added to the clock of `server` between two true times: a forward
// jump within them, or what running fast gained over them.
TimeUs server_clock_gain_us(const HistoryEvent& fault, const std::string& server, TimeUs from_us,
                            TimeUs until_us) {
  if (!fault.server.empty() && fault.server != server) return 0;
  if (fault.fault == FaultKind::server_clock_jump) {
    const bool within = fault.time_us >= from_us && fault.time_us <= until_us;
    return within ? std::max<TimeUs>(fault.amount, 0) : 0;
  }
  const TimeUs until = fault.end_us > fault.time_us ? std::min(fault.end_us, until_us) : until_us;
  return drift_error_us(std::max(fault.time_us, from_us), until,
                        std::max<int64_t>(fault.amount, 0));
}

// The values of the holder's and the entrant's leases: for a double grant, those its lease facts
// name; for an overlap, what each one's acquire returned (the entrant's, its last acquire's).
std::pair<std::optional<std::string>, std::optional<std::string>> lease_values(
    const History& history, const Violation& v) {
  if (v.invariant == Invariant::lease_exclusion) {
    std::optional<std::string> holder;
    std::optional<std::string> entrant;
    for (size_t index : v.events) {
      if (index >= history.size()) continue;
      const HistoryEvent& e = history[index];
      if (e.value.empty()) continue;
      if (e.client == v.holder && !holder) holder = e.value;
      if (e.client == v.entrant && !entrant) entrant = e.value;
    }
    return {holder, entrant};
  }
  return {acquired_value(history, v, v.holder, 0),
          entrant_value(history, v, acquire_start_us(history, v.entrant, v.key, v.time_us))};
}

// What every server clock fault together may have added to the clock of `server` between two
// true times: each one's gain, added up (drifts that overlap replace each other's rate, so the sum
// bounds what they did).
TimeUs server_clocks_gain_us(const History& history, const std::string& server, TimeUs from_us,
                             TimeUs until_us) {
  TimeUs gain_us = 0;
  for (const HistoryEvent& fault : history.events()) {
    if (fault.time_us > until_us) break;
    if (fault.kind != EventKind::fault) continue;
    if (fault.fault != FaultKind::server_drift && fault.fault != FaultKind::server_clock_jump)
      continue;
    gain_us += server_clock_gain_us(fault, server, from_us, until_us);
  }
  return gain_us;
}

// Whether a server clock fault let one of the two in by ending the other's lease early. Every grant
// of either client's lease made beside the other's lease still live in true time (its last grant
// or extend there, not revoked) must be one the server clock faults explain: that server's clock
// gained, from when that lease began to run to the grant, what the lease still had left; and this
// fault must have added to one of them. Either lease may be the one cut short: the client that
// entered second, or gained its quorum second, may be the one whose lease the servers ended first
// (it learned of its grant early, the other was granted once the servers thought it expired).
// With a quorum of independent servers (Redlock) a server holds only what it granted, so a client
// that won servers the other never held got in on no lease the fault ended; with one service
// (quorum 1: one node, a replica set) a lease is its last on any member. false: no grant needed
// the fault (each came beside a live lease the faults did not shorten enough, or on servers free
// of the other); nullopt: the history cannot say (no lease facts naming both clients' values).
std::optional<bool> clock_ended_a_lease_early(const History& history, const HistoryEvent& fault,
                                              const Violation& v) {
  if (v.invariant != Invariant::mutual_exclusion && v.invariant != Invariant::lease_exclusion &&
      v.invariant != Invariant::no_lost_update)
    return std::nullopt;  // not a story of one lease beside another
  if (v.holder < 0 || v.entrant < 0 || v.holder == v.entrant) return std::nullopt;
  const auto [holder, entrant] = lease_values(history, v);
  if (!entrant || !holder || *entrant == *holder) return std::nullopt;
  const bool independent_servers = history.meta.quorum > 1;
  // Each client's live lease by server ("" for the whole service): since when it ran, and its end.
  // A grant's lease may have been timed from before it was recorded (an etcd lease is granted
  // before its key wins): from when the grant says its term began, else from when its client
  // asked for it; an extend's from itself.
  struct LiveLease {
    TimeUs since_us = 0;
    TimeUs end_us = 0;
  };
  const std::string* values[2] = {&*holder, &*entrant};
  const int clients[2] = {v.holder, v.entrant};
  std::map<std::string, LiveLease> live[2];
  bool granted[2] = {false, false};
  bool needed = false;
  bool contributed = false;
  for (const HistoryEvent& e : history.events()) {
    if (e.time_us > v.time_us) break;
    if (e.key != v.key) continue;
    const int mine = e.value == *values[0] ? 0 : e.value == *values[1] ? 1 : -1;
    if (mine < 0) continue;
    const std::string where = independent_servers ? e.server : std::string();
    if (e.kind == EventKind::revoke) {
      const auto lease = live[mine].find(where);
      if (e.client >= 0 || lease == live[mine].end()) {
        live[mine].erase(where);  // a client asked: no clock of the servers' ended it
        continue;
      }
      // The server's own timer ended it (a session whose keepalive gave up, a lease that
      // expired): a clock that gained time ended it early by that much, so it counts as live
      // until a true clock would have ended it.
      lease->second.end_us =
          e.time_us + server_clocks_gain_us(history, e.server, lease->second.since_us, e.time_us);
      continue;
    }
    if (e.kind != EventKind::grant && e.kind != EventKind::extend) continue;
    // A grant that promised nothing (ttl 0: etcd's Lock RPC answering with a key already gone)
    // is no lease beside the other's: nothing it needed to explain.
    if (e.kind == EventKind::grant && e.ttl_us == 0) continue;
    if (e.kind == EventKind::grant) {
      granted[mine] = true;
      const auto other = live[1 - mine].find(where);
      const TimeUs left_us = other != live[1 - mine].end() ? other->second.end_us - e.time_us : 0;
      if (left_us > 0) {  // else the other's lease there had run out in true time, or never was
        needed = true;
        const TimeUs from_us = other->second.since_us;
        if (server_clocks_gain_us(history, e.server, from_us, e.time_us) + kSlackUs < left_us)
          return false;
        contributed = contributed || server_clock_gain_us(fault, e.server, from_us, e.time_us) > 0;
      }
    }
    const TimeUs since_us = e.kind != EventKind::grant ? e.time_us
                            : e.lease_since_us > 0
                                ? e.lease_since_us
                                : acquire_start_us(history, clients[mine], v.key, e.time_us);
    live[mine][where] = LiveLease{since_us, e.time_us + e.ttl_us};
  }
  if (!granted[0] || !granted[1]) return std::nullopt;
  return needed && contributed;
}

// A server that was paused and answered, as it woke, from the state it held before (a deposed
// leader serving a keepalive from its own lessor, etcd-io/etcd#15247): a grant or extend of a
// client of the double grant on its key, recorded as the pause ended, promised a lease the others
// had moved on from. Any other lease fact owes nothing to the pause.
std::optional<Explanation> woken_server_renewal(const History& history, const HistoryEvent& fault,
                                                const Violation& v) {
  for (const HistoryEvent& e : history.events()) {
    if (e.kind != EventKind::grant && e.kind != EventKind::extend) continue;
    if (e.key != v.key || (e.client != v.holder && e.client != v.entrant)) continue;
    if (e.time_us < fault.end_us || e.time_us > fault.end_us + kSlackUs) continue;
    if (e.time_us > v.time_us) continue;
    return Explanation{
        fmt::format("a server paused for {}us {} c{}'s lease as it woke, from the state it held "
                    "before the pause",
                    fault.end_us - fault.time_us,
                    e.kind == EventKind::extend ? "renewed" : "granted", e.client),
        kUnbounded};
  }
  return std::nullopt;
}

// Why this fault could have caused this violation, in numbers, or nullopt when it could not:
// the fault's amount and direction against the lock's stated margins, whom it struck, and when.
// claim_start_us: holder_claim_start_us of the violation, found once for all its faults.
std::optional<Explanation> causal(const History& history, const HistoryEvent& fault,
                                  const Violation& v, TimeUs claim_start_us) {
  // A lease left behind is measured (excess_us); a failed release that removed one is not, and no
  // fault explains a removal.
  if (v.invariant == Invariant::error_not_applied && v.excess_us <= 0) return std::nullopt;
  const FaultEnvelope& envelope = history.meta.envelope;
  const auto sized = [](TimeUs explains_us, std::string how) -> std::optional<Explanation> {
    return Explanation{std::move(how), explains_us};
  };
  switch (fault.fault) {
    case FaultKind::clock_drift: {
      if (envelope.clients_compare_wall_deadlines && fault.amount != 0) {
        if (std::optional<Explanation> why = wall_deadline_drift(fault, v)) return why;
      }
      // A slow clock keeps its holder inside past its lease, or hides from the entrant that the
      // lease its acquire returned had already ended (entrant_late_by_clock). Any other client's
      // clock explains nothing.
      const int64_t excess_ppm = -fault.amount - envelope.client_slow_ppm_max;
      if (excess_ppm <= 0) return std::nullopt;
      if (fault.client >= 0 && v.entrant >= 0 && fault.client == v.entrant &&
          fault.client != v.holder)
        return entrant_late_by_clock(history, fault, v, excess_ppm);
      if (fault.client >= 0 && v.holder >= 0 && fault.client != v.holder) return std::nullopt;
      return sized(drift_explains_us(claim_start_us, fault, v, excess_ppm),
                   fmt::format("c{}'s clock ran {}ppm slower than the lock allows for",
                               fault.client, excess_ppm));
    }
    case FaultKind::clock_jump:
    case FaultKind::clock_offset: {
      // A wall clock ahead lets its client take a lock early; one behind makes its holder write
      // an expiry that ends early. Either way by at most the jump.
      if (fault.client >= 0 && v.holder >= 0) {
        const bool ahead = fault.amount > 0;
        const int expected = ahead ? v.entrant : v.holder;
        if (expected >= 0 && fault.client != expected) return std::nullopt;
      }
      return sized(std::abs(fault.amount),
                   fmt::format("c{}'s wall clock is {:+}us off", fault.client, fault.amount));
    }
    case FaultKind::server_drift: {
      const int64_t excess_ppm = fault.amount - envelope.server_fast_ppm_max;
      if (excess_ppm <= 0) return std::nullopt;
      if (clock_ended_a_lease_early(history, fault, v) == false) return std::nullopt;
      return sized(
          drift_explains_us(claim_start_us, fault, v, excess_ppm),
          fmt::format("the servers' clocks ran {}ppm faster than the lock allows for", excess_ppm));
    }
    case FaultKind::server_clock_jump: {
      if (fault.amount <= 0) return std::nullopt;  // a jump back only lengthens leases
      // It must strike while a lease it ended ran: a jump before the grant ends nothing. The
      // lease facts say which lease that was; without them, the first holder's.
      const std::optional<bool> ended = clock_ended_a_lease_early(history, fault, v);
      if (ended == false) return std::nullopt;
      if (!ended && v.claim_since_us > 0 && fault.time_us < claim_start_us) return std::nullopt;
      return sized(fault.amount, fmt::format("a server's wall clock jumped {:+}us during the lease",
                                             fault.amount));
    }
    case FaultKind::failover:
    case FaultKind::server_restart: {  // unbounded: a lost lease is lost whole
      // Only state that existed before and was lost: a lease or token granted after it, or a
      // failover that lost no acknowledged write (amount 0), explains nothing.
      if (fault.fault == FaultKind::failover && fault.amount == 0) return std::nullopt;
      // The lost lease may be the entrant's: granted before, its reply late, it entered on a lease
      // the servers no longer had, beside the one they granted after.
      const std::optional<EntrantLease> entrant = entrant_lease(history, v);
      const TimeUs lost_since_us =
          entrant ? std::min(claim_start_us, entrant->first_granted_us) : claim_start_us;
      if (v.claim_since_us > 0 && fault.time_us < lost_since_us) return std::nullopt;
      const std::string lost =
          fault.fault == FaultKind::failover
              ? (fault.amount > 0 ? fmt::format("lost {} acknowledged write(s)", fault.amount)
                                  : std::string("may have lost writes"))
              : fmt::format("came back empty after {}us down", fault.amount);
      return Explanation{fmt::format("the servers' state {} during the lease", lost)};
    }
    case FaultKind::server_pause:
      if (v.invariant == Invariant::lease_exclusion) return woken_server_renewal(history, fault, v);
      return sized(kUnbounded, std::string(to_string(fault.fault)));
    case FaultKind::latency:
    case FaultKind::loss:
    case FaultKind::partition:
    case FaultKind::stall:
    case FaultKind::reset: return sized(kUnbounded, std::string(to_string(fault.fault)));
    case FaultKind::session_end:  // unbounded: a session's locks end with it, whole
      return Explanation{"the server ended the session that held the lock"};
    case FaultKind::pause:
    case FaultKind::crash:
    case FaultKind::server_crash:
    case FaultKind::other: return std::nullopt;
  }
  return std::nullopt;
}

// A paused holder's overrun: it was inside its critical section when the world stopped. A pause
// that began before the other got in explains all of the overlap; one that began after it only
// prolongs it, by at most its length. What the holder does on waking is not the lock's to prevent
// (fencing is), and a validity that told it to go on is validity_within_lease's to report.
std::optional<Explanation> holder_overrun(const History& history, const HistoryEvent& fault,
                                          const Violation& v) {
  if (v.invariant != Invariant::mutual_exclusion && v.invariant != Invariant::no_lost_update)
    return std::nullopt;
  if (v.invariant == Invariant::mutual_exclusion && v.time_us > fault.end_us) return std::nullopt;
  // The entrant, once inside, overruns the same way: a pause from its entry on can only prolong
  // an overlap something else began, by at most the pause.
  const bool of_holder = v.holder < 0 || fault.client == v.holder;
  const bool of_entrant = fault.client >= 0 && fault.client == v.entrant;
  if (!of_holder && !of_entrant) return std::nullopt;
  if (!inside_before(history, fault.client, v.key, fault.index)) return std::nullopt;
  const TimeUs length_us = std::max<TimeUs>(fault.end_us - fault.time_us, 0);
  return Explanation{fmt::format("holder overrun: c{} was paused inside its critical section ({})",
                                 fault.client, fault_text(fault)),
                     of_holder && fault.time_us <= v.time_us ? kUnbounded : length_us, of_holder};
}

bool explains_all(const Violation& v, TimeUs explains_us) {
  return v.excess_us <= 0 || explains_us >= kUnbounded || explains_us + kSlackUs >= v.excess_us;
}

std::string excuse_text(const HistoryEvent& fault, const Violation& v, const Explanation& why) {
  const std::string how = v.excess_us > 0 && why.explains_us < kUnbounded
                              ? fmt::format("{}; it explains up to {}us of the {}us", why.how,
                                            why.explains_us, v.excess_us)
                              : why.how;
  if (fault.fault == FaultKind::pause) return how;
  return fmt::format("{}: {} (outside the adapter's fault envelope)", fault_text(fault), how);
}

}  // namespace

bool inside_envelope(const History& history, const HistoryEvent& fault) {
  const FaultEnvelope& v = history.meta.envelope;
  switch (fault.fault) {
    case FaultKind::pause: return false;  // the holder's overrun: in no envelope
    case FaultKind::crash: return true;   // the lease's TTL is the safety net
    case FaultKind::clock_drift:
      if (v.clients_compare_wall_deadlines && fault.amount != 0) return false;
      return fault.amount >= -v.client_slow_ppm_max;
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
    case FaultKind::partition:
    case FaultKind::stall: return v.network;
    case FaultKind::reset: return v.network && v.connection_resets;
    // No lock keeps a session the server ended: only fencing can refuse its holder's writes.
    case FaultKind::session_end: return false;
    case FaultKind::other: return true;  // not a fault of the world: excuses nothing
  }
  return true;
}

namespace {

// Whether the lease `value` on `key` was promised on at least a quorum of servers at `at_us`, by
// its lease facts up to then: a grant or an extend promises its ttl_us from itself, a client's
// revoke ends it there (a server's own timer ends nothing it promised).
bool lease_promised_at(const History& history, const std::string& key, const std::string& value,
                       TimeUs at_us) {
  std::map<std::string, TimeUs> end_us_by_server;
  for (const HistoryEvent& e : history.events()) {
    if (e.time_us > at_us) break;
    if (e.key != key || e.value != value) continue;
    if (e.kind == EventKind::revoke && e.client >= 0) end_us_by_server.erase(e.server);
    if (e.kind == EventKind::grant || e.kind == EventKind::extend)
      end_us_by_server[e.server] = e.time_us + e.ttl_us;
  }
  const auto promised = std::count_if(end_us_by_server.begin(), end_us_by_server.end(),
                                      [at_us](const auto& lease) { return lease.second > at_us; });
  return promised >= std::max(history.meta.quorum, 1);
}

// The grant of `holder`'s record where the taker of an excused double grant overwrote it: the last
// grant on the key before the taker's was the holder's (a client that took over a live lease wrote
// its value over whoever's was in the key, while the lease checker names the earliest holder still
// promised). nullptr: the taker overwrote someone else's record.
const HistoryEvent* overwritten_grant(const History& history, const Violation& takeover,
                                      int holder) {
  if (takeover.invariant != Invariant::lease_exclusion || holder < 0) return nullptr;
  const HistoryEvent* last = nullptr;
  for (const HistoryEvent& e : history.events()) {
    if (e.time_us >= takeover.time_us) break;
    if (e.kind == EventKind::grant && e.key == takeover.key) last = &e;
  }
  return last != nullptr && last->client == holder ? last : nullptr;
}

// Whether an overlap `v` lies inside the excused double grant `grant`: between the two leases it
// names, from its clash for as long as the checker measured it or both stayed promised (an extend
// after the clash moved a lease's end past what the clash measured); or between its taker's lease
// and the record the taker overwrote, while both stayed promised.
bool inside_double_grant(const History& history, const Violation& grant, const Violation& v) {
  if (v.time_us < grant.time_us) return false;
  const auto [holder, entrant] = lease_values(history, grant);
  if (grant.clients == v.clients) {
    if (v.time_us <= grant.time_us + grant.excess_us) return true;
    return holder && entrant && lease_promised_at(history, grant.key, *holder, v.time_us) &&
           lease_promised_at(history, grant.key, *entrant, v.time_us);
  }
  if (v.clients.size() != 2 || !entrant) return false;
  const auto taker = std::find(v.clients.begin(), v.clients.end(), grant.entrant);
  if (taker == v.clients.end()) return false;
  const int other = v.clients[taker == v.clients.begin() ? 1 : 0];
  const HistoryEvent* erased = overwritten_grant(history, grant, other);
  return erased != nullptr && lease_promised_at(history, grant.key, *entrant, v.time_us) &&
         lease_promised_at(history, grant.key, erased->value, v.time_us);
}

// Two clients inside together while the servers held live leases for both (a lease_exclusion
// between the same two on the key, or between a taker and the record it overwrote, the overlap
// beginning inside its window: inside_double_grant) follows from that double grant, whichever of
// them entered first (a late reply can let the earlier lease's holder in second): excused when
// the double grant is, by the same fault. A client inside beyond its own lease is
// validity_within_lease's to judge, which this excuses nothing of.
void excuse_overlaps_of_double_grants(const History& history, std::vector<Violation>& violations) {
  for (Violation& v : violations) {
    if (v.excused() || v.invariant != Invariant::mutual_exclusion) continue;
    for (const Violation& grant : violations) {
      if (grant.invariant != Invariant::lease_exclusion || !grant.excused()) continue;
      if (grant.key != v.key || !inside_double_grant(history, grant, v)) continue;
      v.excused_by = grant.excused_by;
      v.excuse =
          fmt::format("follows from the double grant at {}us: {}", grant.time_us, grant.excuse);
      break;
    }
  }
}

// Where clients read each other's wall deadlines, the holder's record is the value in the key: a
// taker that came in early (excused by its clock) overwrote it, and once the taker released, the
// key was free while the holder's deadline still ran. A later entrant inside that same claim of
// the same holder entered on the excused taker's erasure, so it is excused by the same fault: the
// takeover is the holder's own (same claim), or one whose taker wrote over the record this claim
// of the holder's was granted.
void excuse_entries_after_excused_takeovers(const History& history,
                                            std::vector<Violation>& violations) {
  if (!history.meta.envelope.clients_compare_wall_deadlines) return;
  for (Violation& v : violations) {
    if (v.excused() || v.holder < 0) continue;
    std::optional<TimeUs> claim_start_us;  // found once per violation, when a takeover needs it
    for (const Violation& takeover : violations) {
      if (!takeover.excused() || takeover.key != v.key || takeover.time_us > v.time_us) continue;
      if (takeover.entrant == v.entrant) continue;  // the taker itself: judged on its own
      const bool same_claim = takeover.invariant == v.invariant && takeover.holder == v.holder &&
                              takeover.claim_since_us == v.claim_since_us;
      if (!same_claim) {
        // The record erased must be that of the acquire that led to this claim.
        const HistoryEvent* erased = overwritten_grant(history, takeover, v.holder);
        if (erased == nullptr) continue;
        if (!claim_start_us) claim_start_us = holder_claim_start_us(history, v);
        if (erased->time_us < *claim_start_us) continue;
      }
      v.excused_by = takeover.excused_by;
      v.excuse = fmt::format("follows from the excused takeover of c{}'s lease at {}us: {}",
                             v.holder, takeover.time_us, takeover.excuse);
      break;
    }
  }
}

}  // namespace

void excuse_violations(const History& history, std::vector<Violation>& violations) {
  for (Violation& v : violations) {
    v.excused_by.reset();
    v.excuse = "not excused";
    if (v.invariant == Invariant::mutual_exclusion) {
      const std::optional<size_t> granted = entrant_grant_servers(history, v);
      if (granted && *granted < static_cast<size_t>(std::max(history.meta.quorum, 1))) {
        v.excuse = fmt::format(
            "not excused: c{} entered on grants from {} server(s), fewer than the quorum of {}",
            v.entrant, *granted, history.meta.quorum);
        continue;
      }
    }
    const TimeUs claim_start_us = holder_claim_start_us(history, v);
    // From the holder's claim start as the drift measure counts it: a holder whose acquire never
    // completed (it crashed) has only its grant to say when its claim began, yet its lease was
    // timed from before (a queued lock's lease runs while it waits its turn).
    TimeUs start_us = window_start_us(history, v);
    if (claim_start_us > 0) start_us = std::min(start_us, claim_start_us);
    // Faults up to the end of the overlap: one that struck after the violation began can only
    // prolong it (a holder paused inside), so it counts only as a part of a joint explanation.
    const TimeUs overrun_end_us = v.time_us + std::max<TimeUs>(v.excess_us, 0);
    std::vector<std::pair<const HistoryEvent*, Explanation>> parts;
    TimeUs explained_us = 0;
    for (const HistoryEvent& fault : history.events()) {
      if (fault.kind != EventKind::fault || !involves(v, fault.client)) continue;
      // A restart is recorded when the server comes back; it struck when the server went down.
      const TimeUs struck_us = fault.fault == FaultKind::server_restart
                                   ? fault.time_us - std::max<int64_t>(fault.amount, 0)
                                   : fault.time_us;
      if (struck_us > overrun_end_us) continue;
      if (!touches_window(fault, struck_us, start_us, overrun_end_us)) continue;
      if (inside_envelope(history, fault) || !can_break(history.meta, fault, v.invariant)) continue;
      const bool after_start = struck_us > v.time_us;
      if (after_start && fault.fault != FaultKind::pause) continue;
      std::optional<Explanation> why = fault.fault == FaultKind::pause
                                           ? holder_overrun(history, fault, v)
                                           : causal(history, fault, v, claim_start_us);
      if (!why) continue;
      if (!after_start && why->can_begin && explains_all(v, why->explains_us)) {
        v.excused_by = fault.index;
        v.excuse = excuse_text(fault, v, *why);
        break;
      }
      explained_us = std::min(explained_us + why->explains_us, kUnbounded);
      parts.emplace_back(&fault, std::move(*why));
    }
    // Faults that each explain a part of the excess, and together all of it (a server clock that
    // ran fast let the other in early, then a pause kept the holder inside longer).
    if (v.excused() || parts.empty() || !explains_all(v, explained_us)) continue;
    const bool one_began_it = std::any_of(parts.begin(), parts.end(), [&v](const auto& part) {
      return part.first->time_us <= v.time_us && part.second.can_begin;
    });
    if (!one_began_it) continue;  // faults that only prolonged an overlap nothing began
    v.excused_by = parts.front().first->index;
    std::string text = "together";
    for (const auto& [fault, why] : parts) text += fmt::format("; {}", excuse_text(*fault, v, why));
    v.excuse = std::move(text);
  }
  excuse_entries_after_excused_takeovers(history, violations);
  excuse_overlaps_of_double_grants(history, violations);
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
