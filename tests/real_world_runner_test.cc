// Scenarios in the real world: the same catalogue, judged against redis-server processes the
// backend starts and stops, with real faults (client pauses, a partition through the proxy, a
// failover to a replica that missed the lock).
#include <catch2/catch.hpp>

#include <signal.h>

#include "report/report.h"
#include "run/runner.h"
#include "tests/real_support.h"

namespace lockstep {
namespace {

RunReport run_real(const std::string& scenario, bool fencing_on = false,
                   std::vector<std::string> sets = {}) {
  return run_scenario({.scenario = scenario,
                       .adapter = "redis",
                       .world = WorldKind::real,
                       .fencing_on = fencing_on,
                       .sets = std::move(sets)});
}

bool violates(const RunReport& r, Invariant invariant) {
  return r.violated().count(invariant) != 0;
}

}  // namespace

TEST_CASE("real: stolen-lock keeps ownership, like the simulator", "[real][runner]") {
  testing::require_redis_server();
  const RunReport real = run_real("stolen-lock");
  INFO(to_text(real));
  CHECK(real.end == RunEnd::complete);
  CHECK_FALSE(violates(real, Invariant::ownership));
  CHECK(violates(real, Invariant::mutual_exclusion));  // A's pause outlived its lease
  CHECK(real.matches_expectation());
  const RunReport sim = run_scenario({.scenario = "stolen-lock", .adapter = "redis"});
  CHECK(sim.violated() == real.violated());
}

TEST_CASE("real: a failover to a lagging replica loses the lock and reissues the token",
          "[real][runner]") {
  testing::require_redis_server();
  const RunReport r = run_real("failover", /*fencing_on=*/true);
  INFO(to_text(r));
  CHECK(violates(r, Invariant::mutual_exclusion));
  CHECK(violates(r, Invariant::fencing));
  CHECK(r.matches_expectation());
}

TEST_CASE("real: a partition heals and the cut-off client gets back in", "[real][runner]") {
  testing::require_redis_server();
  const RunReport r = run_real("partition");
  INFO(to_text(r));
  CHECK(r.ok());
  CHECK(r.stats.acquisitions == 3);
}

TEST_CASE("real: scenarios that need the simulator are refused, and nothing is left running",
          "[real][runner]") {
  testing::require_redis_server();
  CHECK_THROWS_AS(run_real("pause-in-release"), UsageError);
  CHECK_THROWS_AS(run_real("crash-holder", false, {"crash_at=in-acquire"}), UsageError);
  const RunReport r = run_real("sequential");
  CHECK(r.ok());
  // The backend stopped its server: the history's trace names its pid; it must be gone.
  for (const std::string& line : r.trace) {
    const auto at = line.find("server redis-0 pid ");
    if (at == std::string::npos) continue;
    const pid_t pid = std::stoi(line.substr(at + 19));
    CHECK(::kill(pid, 0) == -1);
  }
}

}  // namespace lockstep
