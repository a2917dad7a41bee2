// Properties of the in-memory adapter over random workloads and pauses (RapidCheck; shrinks a
// failure to a small workload, printed readably; RC_PARAMS="seed=N" reproduces it).
#include <rapidcheck.h>
#include <rapidcheck/catch.h>
#include <catch2/catch.hpp>

#include "property_tests/workload_gen.h"
#include "report/report.h"
#include "run/runner.h"
#include "services/known_bad.h"

namespace lockstep {
namespace {

RunReport run_workload(const WorkloadSpec& spec, const std::string& adapter, bool fencing_on) {
  const uint64_t seed = *rc::gen::inRange<uint64_t>(1, 1'000'000).as("seed");
  return run_scenario(
      make_workload_scenario(spec),
      {.adapter = adapter, .seed = seed, .fencing_on = fencing_on, .keep_trace = false});
}

bool holds(const RunReport& r, Invariant invariant) { return r.violated().count(invariant) == 0; }

}  // namespace

TEST_CASE(
    "memory with fencing on: no lost update, fencing, ownership and lease exclusion always hold",
    "[property][memory]") {
  rc::prop("any workload, any pauses", [] {
    const WorkloadSpec spec = *gen_workload({.long_pauses = true});
    const RunReport r = run_workload(spec, "memory", /*fencing_on=*/true);
    RC_ASSERT(r.end == RunEnd::complete);
    RC_ASSERT(holds(r, Invariant::no_lost_update));
    RC_ASSERT(holds(r, Invariant::fencing));
    RC_ASSERT(holds(r, Invariant::ownership));
    RC_ASSERT(holds(r, Invariant::lease_exclusion));
    RC_TAG(r.violated().count(Invariant::mutual_exclusion) ? "exclusion lost under a pause"
                                                           : "exclusive");
  });
}

TEST_CASE("memory without pauses longer than the TTL: every invariant holds",
          "[property][memory]") {
  rc::prop("holds and pauses shorter than the TTL", [] {
    const WorkloadSpec spec = *gen_workload({.long_pauses = false});
    RC_PRE(spec.longest_hold_ms() < spec.ttl_ms);
    const bool fencing_on = *rc::gen::arbitrary<bool>().as("fencing_on");
    const RunReport r = run_workload(spec, "memory", fencing_on);
    RC_ASSERT(r.end == RunEnd::complete);
    RC_ASSERT(r.violations.empty());
  });
}

TEST_CASE("the known-bad in-memory release without owner check is caught",
          "[property][known-bad]") {
  register_known_bad_adapters();
  // The property must fail for the broken adapter: rc::check returns false and prints the shrunk
  // counterexample.
  const bool held = rc::check("ownership holds for bad-memory-no-owner-check", [] {
    const WorkloadSpec spec = *gen_workload({.long_pauses = true});
    const RunReport r = run_workload(spec, "bad-memory-no-owner-check", /*fencing_on=*/true);
    RC_ASSERT(holds(r, Invariant::ownership));
  });
  CHECK_FALSE(held);
}

}  // namespace lockstep
