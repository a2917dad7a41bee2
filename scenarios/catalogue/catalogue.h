#pragma once
// Pieces of the scenario catalogue kept in their own files (one family of faults each), and the
// adapter families they apply to. scenarios() in catalogue.cc lists them all.
#include <string>
#include <vector>

#include "scenarios/harness/scenario.h"

namespace lockstep {

// An integer option in [min, max] with its default and a one-line help.
OptionSpec int_option(std::string name, int64_t default_value, std::string help, int64_t min = 0,
                      int64_t max = 86'400'000);
// The retry settings of the scenario's retry_delay_ms and retry_times options.
RetrySettings retry_from(const ScenarioEnv& env);
// The plain client step: acquire "resource" (retrying as the options say), increment the guarded
// counter over hold_ms of work, release.
void take_work_release(Client& c, const ScenarioEnv& env, int64_t ttl_ms, int64_t hold_ms);

// Adapters that talk to one Redis server: the production one and the known-bad variants whose
// outcome in a scripted timeline does not depend on the seed.
std::vector<std::string> redis_family();
// Every TTL-lease adapter (memory and the Redis family).
std::vector<std::string> lease_family();
// Redlock and its known-bad variants (their scenarios need N nodes).
std::vector<std::string> redlock_family();
// The lease family plus bad-random-token, which needs many grants to show (retry-storm), and the
// ext adapters.
std::vector<std::string> storm_family();
// The lease family plus the lock libraries in other languages (backends/ext.h), and Redlock's family
// plus the ext libraries that run Redlock over N nodes.
std::vector<std::string> lease_and_ext_family();
// The lease and ext families plus the known-bad variants a same-instant race exposes
// (bad-mongo-no-unique).
std::vector<std::string> race_family();
std::vector<std::string> redlock_and_ext_family();

// Server faults: scenarios/catalogue/server_fault_scenarios.cc.
Scenario slow_acquire_scenario();
Scenario clock_drift_scenario();
Scenario failover_scenario();
Scenario partition_scenario();
// Redlock's node faults: scenarios/catalogue/redlock_scenarios.cc.
Scenario clock_jump_scenario();
Scenario crash_restart_scenario();
Scenario split_vote_scenario();
Scenario node_pause_scenario();  // scenarios/catalogue/node_pause_scenario.cc
// Client faults and contention: their own files.
Scenario pause_in_release_scenario();
Scenario retry_storm_scenario();
// The Mongo lock's clock source: scenarios/catalogue/mongo_scenarios.cc.
Scenario client_clock_ahead_scenario();

}  // namespace lockstep
