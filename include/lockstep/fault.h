#pragma once
// The faults a run can suffer, as the history records them, and the fault envelope: the faults an
// adapter claims to survive. Both are plain data, so a history read back from a file
// (`lockstep check`) can be judged exactly as the run that wrote it.
//
// A fault event names its kind, whom it struck (a client, a server, or everyone: -1 / ""), an
// amount whose unit depends on the kind, and the true-time window [time_us, end_us] in which it
// acted. Kinds whose effect outlives that window (a clock jump, a server that lost its data) say
// so through lasting().
//
// The envelope is declared beside an adapter's registry entry (AdapterTraits::envelope). A fault
// inside it excuses nothing: the adapter promised to stay safe through it. A fault outside it may
// excuse the violations it could cause, but only for the clients, key and time window it touched
// (checkers/excuse.h). A client's stop-the-world pause is in no envelope: a holder that
// is paused past the validity it last checked overruns its lease, which no lease lock can prevent;
// the judge names that the holder's overrun, and fencing must still refuse its stale accesses.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lockstep {

enum class FaultKind {
  pause,              // a client stops the world for a while
  crash,              // a client dies
  clock_drift,        // a client's oscillator runs fast or slow (amount: ppm); both its clocks
  clock_jump,         // a client's wall clock jumps (amount: us, signed); its monotonic does not
  clock_offset,       // a client's wall clock starts off true time (amount: us)
  server_drift,       // servers' clocks run fast or slow (amount: ppm)
  server_clock_jump,  // a server's wall clock jumps (amount: us, signed)
  server_crash,       // a server dies (its volatile state is lost)
  server_restart,     // a server comes back (amount: us it was down)
  server_pause,       // a server stops (SIGSTOP)
  failover,           // a primary dies and a replica that may lack its last writes takes over
  latency,            // one-way latency on the network (amount: us)
  loss,               // messages lost (amount: percent)
  partition,          // a client cut off from servers (amount: 1 two-way, 0 one-way)
  other,              // anything else a scenario does (a fifo clear(), ...): never an excuse
  // The server ends a client's session (pg_terminate_backend) and with it the locks the session
  // held. After `other` so that no earlier kind's value (packed in traces) changes.
  session_end,
  // A client's connections to the servers are reset (an RST: a middlebox, a server's kernel): a
  // request not yet delivered is lost, one already applied loses its reply, and the client hears
  // of it at once (connection_lost); an idle connection fails its next request before sending it
  // (connection_error). After session_end, for the same reason.
  reset,
  // A client's links to the servers stall (amount: 1 two-way, 0 one-way): what is sent meanwhile
  // is held, as TCP retransmits through an outage, and delivered late when they heal, after its
  // caller may have timed out and given up. After reset, for the same reason.
  stall,
};
std::string_view to_string(FaultKind kind);
std::optional<FaultKind> fault_kind_from_string(std::string_view name);
inline constexpr std::array kFaultKindsAll = {FaultKind::pause,
                                              FaultKind::crash,
                                              FaultKind::clock_drift,
                                              FaultKind::clock_jump,
                                              FaultKind::clock_offset,
                                              FaultKind::server_drift,
                                              FaultKind::server_clock_jump,
                                              FaultKind::server_crash,
                                              FaultKind::server_restart,
                                              FaultKind::server_pause,
                                              FaultKind::failover,
                                              FaultKind::latency,
                                              FaultKind::loss,
                                              FaultKind::partition,
                                              FaultKind::session_end,
                                              FaultKind::reset,
                                              FaultKind::stall,
                                              FaultKind::other};
static_assert(kFaultKindsAll.back() == FaultKind::other, "every FaultKind is listed, last last");

// A fault's effect outlives its window: a jumped, offset or drifted client clock stays where it went
// (a drift's error accumulates), a server that lost its data or a failed-over primary does not get
// it back, nor does a client the locks of a session the server ended.
bool lasting(FaultKind kind);

// When a server that lost its memory may come back without breaking a lease lock's claims.
enum class RestartRule {
  never,      // a restart is always outside the envelope
  after_ttl,  // inside once it stayed down at least as long as any lease it had granted (antirez)
  always,     // its data survives a crash (fsync on every write)
};
std::string_view to_string(RestartRule rule);
inline constexpr std::array kRestartRulesAll = {RestartRule::never, RestartRule::after_ttl,
                                                RestartRule::always};

struct FaultEnvelope {
  // Client clock rates its validity allows for: a client whose oscillator runs slow by more than
  // this (ppm) overstays what it believes; running fast only makes it leave early.
  int64_t client_slow_ppm_max = 0;
  // Server clock rates its leases allow for: a server running fast by more than this (ppm) ends
  // leases before the holder's validity; running slow only keeps them longer.
  int64_t server_fast_ppm_max = 0;
  // It times durations and expiry on the monotonic clock: client wall-clock jumps and offsets are
  // nothing to it.
  bool client_wall_clock = true;
  // Its clients read a deadline another client wrote on its own wall clock (a lease in the value,
  // ExpiryClock::client_value): a client whose clock runs fast, inside client_slow_ppm_max or not,
  // reads a live deadline as past by what it gained, so a fast client clock is outside too.
  bool clients_compare_wall_deadlines = false;
  // Its servers expire leases by a clock that does not jump (no Redis or Mongo server does).
  bool server_wall_clock = false;
  // Latency, loss, partitions, stalls and connection resets between clients and servers.
  bool network = true;
  // Of the network faults, connection resets too. Not for a session lock: a reset ends the session
  // and its locks at once, where a cut-off one lasts until keepalive notices.
  bool connection_resets = true;
  // A failover keeps every acknowledged grant and counter (a majority write concern).
  bool failover = false;
  RestartRule server_restart = RestartRule::never;
  // Servers that stop for a while (Redlock: a stopped minority costs neither safety nor waiting).
  bool server_pause = true;
};

}  // namespace lockstep
