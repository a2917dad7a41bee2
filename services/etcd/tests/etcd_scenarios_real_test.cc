// The Lock RPC's #11456 through the runner against Debian's etcd 3.4.23 (one member the run
// starts): trusted as it answers, it hands out a lock whose lease expired in the queue; the
// adapter's lease check refuses it. Skipped (exit 77) without etcd, failed in CI.
#include <catch2/catch.hpp>

#include "lockstep/registry.h"
#include "report/report.h"
#include "run/runner.h"
#include "services/etcd/tests/etcd_support.h"

namespace lockstep {
namespace {

RunReport run_real(std::vector<std::string> sets) {
  return run_scenario({.scenario = "lease-expires-while-queued",
                       .adapter = "etcd-lock",
                       .world = WorldKind::real,
                       .seed = 1,
                       .fencing_on = true,
                       .sets = std::move(sets)});
}

}  // namespace

TEST_CASE("real: Debian's etcd 3.4.23 hands out the lock whose lease expired in the queue",
          "[etcd][scenarios][real]") {
  testing::require_etcd();
  const RunReport trusting = run_real({"lease_check=off", "members=1"});
  INFO(to_text(trusting));
  CHECK(trusting.end == RunEnd::complete);
  CHECK(trusting.violated() == Expectation{Invariant::valid_on_return});
  CHECK_FALSE(trusting.finding.empty());

  const RunReport careful = run_real({"members=1"});
  INFO(to_text(careful));
  CHECK(careful.end == RunEnd::complete);
  CHECK(careful.violated().empty());
}

}  // namespace lockstep
