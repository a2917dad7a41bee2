#pragma once
// Swarm testing: every seed draws its own workload and fault mix (a SwarmSpec), and a spec is plain
// data, so a sweep can run it, shrink it (explore/shrink.h), print it, save it in a
// report and replay it.
//
// A run of a spec has two phases. The safety phase (true time [0, safety_ms)): the clients run
// their steps (a step starts only inside the phase) and the faults strike. At safety_ms every fault
// heals (partitions, loss, latency spikes, server and client clock drift), then heal_clients fresh
// clients each take a key once: `liveness` is judged with a bound that covers whatever the safety
// phase may legitimately still hold (liveness_bound_us()).
//
// Invariants of a valid spec (validate() throws std::invalid_argument naming the bound): at most
// kClientsMax clients of at most kStepsMax steps, at most kFaultsMax faults, keys in [1, kKeysMax],
// every key, client index and duration in range. draw_swarm_spec() is a pure function of its
// arguments: it draws only from a Prng seeded from the seed (no other randomness), so a sweep
// seed's run is a pure function of (adapter, seed, build).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/scenario.h"

namespace lockstep {

// The fault kinds (include/lockstep/fault.h) a sweep draws:
//   pause         stop-the-world of a client (random time, inside a critical section, mid-release)
//   crash         a client dies (random time, or while its acquire is on the wire)
//   clock-drift   a client's clocks run fast or slow (healed at safety_ms)
//   clock-jump    a client's wall clock jumps forward or back
//   server-drift  every server's clock runs fast or slow for a while
//   server-clock-jump  every server's wall clock jumps forward or back
//   failover      the primary dies and a replica takes over (a Redis replica, a replica set)
//   server-restart  a server dies and comes back after a while (what it had not persisted, lost)
//   server-pause  a server stops (SIGSTOP) for a while
//   latency       fixed one-way latency for the whole run, or a spike for a while
//   loss          messages lost with a probability for a while
//   partition     a client cut off from the servers (one-way or two-way) for a while
// Drifts are drawn inside the adapter's envelope (as slow or fast as it claims to tolerate) or
// outside it, half and half, so a sweep tests both the claim and the judge's excuses.
const std::vector<FaultKind>& sweep_fault_kinds();
std::string sweep_fault_kind_names();  // "pause, crash, ..." for error messages

// What a sweep may do to an adapter, from its declaration (swarm_capabilities).
struct SwarmCapabilities {
  bool keyed_rw = false;    // an in-process keyed shared/exclusive lock: steps take a mode
  bool keyed_fifo = false;  // an in-process FIFO keyed lock
  bool network = false;     // partitions, loss, latency reach it
  // Lost messages: not for a simulated replica set, whose members re-send a lost replication
  // message only at their next heartbeat (seconds), where TCP would retransmit within
  // milliseconds, so a loss outlives the heal as no real one does.
  bool message_loss = false;
  bool server_clock = false;
  bool server_clock_jump = false;
  bool elections = false;  // a lost primary is replaced by an election (a replica set)
  bool failover = false;   // a primary that can be replaced
  bool server_restart = false;
  bool server_pause = false;
  bool slow_servers = false;  // some servers slower to reach than others (Backend::slow_server)
  bool connection_resets = false;  // a client's connections reset (Backend::reset_connections)
  bool extends = true;  // AdapterTraits::extends: a holder may extend, by hand or automatically
  // The failover needs its replica asked for (`replicas=1`, an option of the adapter's): see
  // swarm_sets.
  bool replica_option = false;
  bool replication_delay_option = false;
  bool concurrent_calls = true;  // AdapterTraits::concurrent_calls: a client may be concurrent
  FaultEnvelope envelope;        // as declared: where drifts are drawn inside or outside it
  bool keyed() const { return keyed_rw || keyed_fifo; }
};
// From the adapter's declaration (AdapterEntry::family and sim_faults). By name: UsageError for an
// unknown adapter or one that does not run in the simulator.
SwarmCapabilities swarm_capabilities(const AdapterEntry& adapter);
SwarmCapabilities swarm_capabilities(const std::string& adapter);
// The sweep's fault kinds this adapter's simulated backend can strike, in sweep order.
std::vector<FaultKind> strikable_fault_kinds(const SwarmCapabilities& caps);

struct SwarmStep {
  int key = 0;
  int64_t gap_ms = 0;         // before the acquire
  int64_t ttl_ms = 0;         // this acquire's TTL (0: the spec's)
  int64_t hold_ms = 0;        // work inside the critical section
  int64_t pause_ms = 0;       // stop-the-world inside the critical section (0: none)
  bool extend = false;        // extend after the pause, before the write
  int64_t extend_ttl_ms = 0;  // the TTL the extend asks for (0: the acquire's)
  // >= 0: once its validity ended and it left, wait this long, then extend and release anyway: a
  // lock must refuse both, and touch nobody else's.
  int64_t late_ms = -1;
  bool release = true;  // false: walk away and let the lease expire
  // Instead of the hold (and extend): start the lock's auto-extension and work for hold_ms,
  // several TTLs, step by step, asking lost() before every write (Client::work_until_lost).
  bool auto_extend = false;
  bool shared = false;  // keyed-rw: a reader
  bool clear = false;   // keyed-fifo: instead of holding, clear() the lock (rejects the waiters)
  // Faults timed from the step's own calls, so they stay aimed when shrinking moves the step.
  int64_t release_pause_after_us =
      -1;  // pause release_pause_ms this long after the release is sent
  int64_t release_pause_ms = 0;
  int64_t acquire_crash_after_us = -1;  // die this long after the acquire is sent
  // Stop the world acquire_pause_ms, this long after the acquire is sent: its grant comes back
  // late by the holder's clock (the swarm's slow-acquire).
  int64_t acquire_pause_after_us = -1;
  int64_t acquire_pause_ms = 0;
};

struct SwarmClient {
  int64_t start_ms = 0;
  int64_t drift_ppm = 0;  // the client's clock rate (healed to 0 at safety_ms)
  // Its odd steps run on a second fiber of the same process, concurrently with the even ones,
  // over the same lock client (its Locker, adapter and connections), as two threads of one
  // program would.
  bool concurrent = false;
  std::vector<SwarmStep> steps;
};

struct SwarmFault {
  FaultKind kind = FaultKind::pause;
  int64_t at_ms = 0;        // true time, inside the safety phase
  int64_t duration_ms = 0;  // pause, server_drift, latency, loss, partition, server_pause
  int client = 0;           // pause, crash, clock_jump, partition
  int server = 0;           // server_restart, server_pause: taken modulo the backend's servers
  // clock_jump, server_clock_jump: delta ms; server_drift: ppm; latency: one-way us; loss: percent;
  // partition: 1 two-way; server_restart: ms down.
  int64_t amount = 0;
};

struct SwarmSpec {
  LockFamily family = LockFamily::lease;  // what the steps call
  int keys = 1;
  int64_t ttl_ms = 1000;
  int64_t retry_delay_ms = 50;
  int retry_times = 10;
  int64_t retry_jitter_ms = 0;
  int64_t fixed_latency_us = 0;       // 0: the network's own latency distribution
  int64_t replication_delay_ms = -1;  // >= 0: run with one asynchronous replica (failover)
  // By server index: how much longer each message to and from it takes, through the safety phase
  // (a latency fault; a fan-out's last answer arrives well after the others). Empty: none. An
  // index past the backend's servers is ignored.
  std::vector<int64_t> server_delays_us;
  int64_t safety_ms = 1000;
  int heal_clients = 1;
  // Every safety client is a careful holder (every drawn lease spec is): it works (reads, sleeps,
  // extends, writes) only while its lock's validity, as the adapter reports it
  // (LockAdapter::validity_end_us), lasts, keeps working until that validity ends, and then leaves
  // the critical section. Such clients cannot overrun a lease by hearing late, so no network
  // fault excuses a lost exclusion, and an adapter that overstates validity is caught. Only a
  // pause inside the critical section makes one overrun (the judge names it so). false: specs
  // saved before careful holders, whose clients work regardless.
  bool careful = false;
  std::vector<SwarmClient> clients;
  std::vector<SwarmFault> faults;

  static constexpr int kClientsMax = 12;
  static constexpr int kStepsMax = 16;
  static constexpr int kKeysMax = 4;
  static constexpr int kFaultsMax = 12;
  static constexpr int kSlowServersMax = 7;             // Redlock's largest deployment
  static constexpr int64_t kServerDelayUsMax = 20'000;  // each way: within a 50 ms round
  void validate() const;

  // How long a healed-phase acquire may wait after the heal: the leftovers of the safety phase
  // (one step in flight per client, each holding, extending or walking away) plus retry rounds.
  int64_t liveness_bound_us() const;
  bool has_fault(FaultKind kind) const;  // also counts step faults and per-client drift
  bool slows_servers() const;            // some server_delays_us above 0
  size_t step_count() const;
};

struct SwarmDrawOptions {
  std::vector<FaultKind> faults = sweep_fault_kinds();  // the kinds a draw may use
};

// The spec of a sweep seed: a pure function of (capabilities, seed, options).
SwarmSpec draw_swarm_spec(const SwarmCapabilities& caps, uint64_t seed,
                          const SwarmDrawOptions& options = {});

// Every drawn parameter, one "NAME=VALUE" per line (printed as `param` lines in the trace).
std::vector<std::string> describe_params(const SwarmSpec& spec);
std::string describe(const SwarmSpec& spec);
// One fault as the trace and the `param` lines name it ("pause at=12ms c1 for=300ms").
std::string describe_fault(const SwarmFault& fault);

nlohmann::json to_json(const SwarmSpec& spec);
// Throws std::invalid_argument when j is not a valid spec.
SwarmSpec swarm_spec_from_json(const nlohmann::json& j);

// The RunConfig `--set` overrides a spec needs (a replica to fail over to, where the adapter has
// that option).
std::vector<std::string> swarm_sets(const SwarmSpec& spec, const SwarmCapabilities& caps);

Scenario make_swarm_scenario(SwarmSpec spec);

}  // namespace lockstep
