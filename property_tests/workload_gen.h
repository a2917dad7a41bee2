#pragma once
// RapidCheck generators for random workloads (explore/workload.h). Generated specs shrink
// towards fewer clients, fewer steps, and shorter gaps, holds and pauses.
#include <ostream>

#include <rapidcheck.h>

#include "explore/workload.h"

namespace lockstep {

struct WorkloadGenOptions {
  int keys_max = 3;
  int clients_max = 5;
  int steps_max = 5;
  // false: every step's hold + pause stays below the TTL (no lease can expire under a holder).
  bool long_pauses = true;
};

rc::Gen<WorkloadSpec> gen_workload(WorkloadGenOptions options);

// How RapidCheck prints a counterexample.
void showValue(const WorkloadSpec& spec, std::ostream& os);

}  // namespace lockstep
