#pragma once
// Random workloads: many clients taking a few keys with random holds, gaps, pauses and walk-aways.
//
// A WorkloadSpec is plain data, so a property-based test can generate and shrink it and a report
// can print it. make_workload_scenario() turns it into a Scenario the runner runs like any named
// one. Every client step: wait gap_ms, acquire key (retrying), read the guarded counter, maybe
// pause (stop-the-world) pause_ms, work hold_ms, write counter+1, then release (or walk away and
// let the lease expire).
#include <cstdint>
#include <string>
#include <vector>

#include "harness/scenario.h"

namespace lockstep {

struct WorkloadStep {
  int key = 0;           // index into the workload's keys
  int64_t gap_ms = 0;    // before the acquire
  int64_t hold_ms = 0;   // work inside the critical section
  int64_t pause_ms = 0;  // stop-the-world inside the critical section (0: none)
  bool release = true;   // false: walk away and let the lease expire
};

struct WorkloadSpec {
  int keys = 1;
  int64_t ttl_ms = 1000;
  int64_t retry_delay_ms = 50;
  int retry_times = 50;
  std::vector<std::vector<WorkloadStep>> clients;  // one list of steps per client

  // Bounds that keep a generated run small: a spec outside them is rejected by validate().
  static constexpr int kClientsMax = 16;
  static constexpr int kStepsMax = 32;
  static constexpr int kKeysMax = 8;
  void validate() const;  // throws std::invalid_argument naming the bound
  // The longest time any step keeps its client inside the critical section.
  int64_t longest_hold_ms() const;
};

// Readable one-line-per-client form, for RapidCheck's show and for reports.
std::string describe(const WorkloadSpec& spec);

Scenario make_workload_scenario(const WorkloadSpec& spec);

}  // namespace lockstep
