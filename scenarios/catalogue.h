#pragma once
// Pieces of the scenario catalogue kept in their own files (one family of faults each), and the
// predicates on adapter traits they apply by. scenarios() in catalogue.cc lists them all. Each
// scenario's timeline is a spec (harness/scenario_spec.h) made from its options: steps and faults
// as data, which the one engine (harness/spec_engine.h) runs.
#include <functional>
#include <string>
#include <vector>

#include "adapters/core/locker.h"
#include "adapters/core/retry.h"
#include "harness/scenario.h"

namespace lockstep {

// An integer option in [min, max] with its default and a one-line help. The default max is the
// longest lease a lock accepts (kTtlMaxMs): a duration beyond it would fail in the adapter.
OptionSpec int_option(std::string name, int64_t default_value, std::string help, int64_t min = 0,
                      int64_t max = kTtlMaxMs);
// The options retry_from reads, their bounds in one place: the delay between attempts (at least
// 1 ms) and the retries after the first attempt.
OptionSpec retry_delay_option(int64_t default_ms, std::string help = "delay between attempts");
OptionSpec retry_times_option(int64_t default_times,
                              std::string help = "retries after the first attempt");
// A client asks for a lease of ttl_ms + work_ms + kLeaseSlackMs to outlast its work: each of the
// two may be at most half the longest lease, so their sum never exceeds kTtlMaxMs.
inline constexpr int64_t kLeaseSlackMs = 1000;
// Seeded start jitter of every scripted client, far below every gap of the timelines: it keeps
// the scripts and varies the traces.
inline constexpr int64_t kStartJitterUs = 200;
inline constexpr int64_t kHalfLeaseMaxMs = kTtlMaxMs / 2;
inline constexpr int64_t kWorkInLeaseMaxMs = kTtlMaxMs / 2 - kLeaseSlackMs;
// The retry settings of the scenario's retry_delay_ms and retry_times options.
RetrySettings retry_from(const Options& options);
// A holds `resource` (options ttl_ms) and works hold_ms unaware; at struck_at_ms `strike` hits
// it, recorded as a fault of `kind` (`what` in the trace); B asks from 50 ms later, retrying with
// the scenario's settings, and works b_hold_ms once in (session-killed, connection-reset).
ScenarioSpec holder_struck_spec(const Options& options, int64_t struck_at_ms, SpecAction strike,
                                FaultKind kind, std::string what);

// The adapters scenarios apply to, by what they are (AdapterTraits), never by name.
// A holder working on beside the next owner: mutual_exclusion, and a lost update unless fencing
// (on, with monotonic tokens) refuses the holder's stale write.
Expectation overlap_expectation(const AdapterTraits& lock, bool fencing_on);
bool is_lease(const AdapterTraits& lock);
bool is_keyed_rw(const AdapterTraits& lock);
bool is_keyed_fifo(const AdapterTraits& lock);
// A lease lock whose servers are across the simulated network (a reply can be late or cut off).
bool is_networked_lease(const AdapterTraits& lock);
// A lease lock whose servers' clocks can be made to drift.
bool has_drifting_servers(const AdapterTraits& lock);
bool has_jumping_servers(const AdapterTraits& lock);  // servers whose wall clock can jump (sim)
// A lease lock whose primary can die and be replaced (a Redis replica, a Mongo election).
bool can_fail_over(const AdapterTraits& lock);
// A lease lock whose servers expire a lease by a clock (a TTL), or one that lasts as long as its
// holder's session and never expires (AdapterTraits::server_expiry == ExpiryClock::none).
bool expires(const AdapterTraits& lock);
bool lasts_with_session(const AdapterTraits& lock);
// One that expires, by a clock of its servers: not a deadline in the value that the clients
// compare (ExpiryClock::client_value), which no server clock drift or jump hastens.
bool expires_by_server_clock(const AdapterTraits& lock);
// The shape of its servers (AdapterTraits::servers).
bool on_one_server(const AdapterTraits& lock);
bool on_independent_nodes(const AdapterTraits& lock);
bool on_a_replica_set(const AdapterTraits& lock);

// Server faults: scenarios/server_fault_scenarios.cc.
Scenario slow_acquire_scenario();
Scenario slow_grant_scenario();
Scenario clock_drift_scenario();
Scenario server_clock_jump_scenario();
Scenario failover_scenario();
Scenario partition_scenario();
// Redlock's node faults: scenarios/redlock_scenarios.cc.
Scenario clock_jump_scenario();
Scenario crash_restart_scenario();
Scenario split_vote_scenario();
Scenario node_pause_scenario();  // scenarios/node_pause_scenario.cc
// Client faults and contention: their own files.
Scenario pause_in_release_scenario();
Scenario lost_extension_scenario();      // scenarios/lost_extension_scenario.cc
Scenario unanswered_renewal_scenario();  // scenarios/lost_extension_scenario.cc
Scenario lost_reply_scenario();          // scenarios/lost_reply_scenario.cc
Scenario shared_client_scenario();       // scenarios/shared_client_scenario.cc
Scenario retry_storm_scenario();
// An acquire waiting its turn in a queue past its lease: scenarios/queued_lease_scenario.cc.
Scenario lease_expires_while_queued_scenario();
// The Mongo lock's clock source: scenarios/mongo_scenarios.cc.
Scenario client_clock_ahead_scenario();
// A session lock's session ended under a working holder: scenarios/session_scenarios.cc.
Scenario session_killed_scenario();
// A holder's connections reset under it: scenarios/connection_reset_scenario.cc.
Scenario connection_reset_scenario();

}  // namespace lockstep
