// Lock libraries in other languages through the runner (ext_backend.h), in the real world: every
// lease library on sequential and stolen-lock, a crash that must take the driver down with it,
// Redlock's stopped minority node, advisory-lock's session lock against PostgreSQL, and etcd3's
// lease against an etcd cluster. Skipped (exit 77) without redis-server, PostgreSQL 15, etcd, node
// 20 or services/ext/node/node_modules outside CI; a failure in CI.
#include <catch2/catch.hpp>

#include <signal.h>

#include "report/report.h"
#include "run/runner.h"
#include "services/etcd/tests/etcd_support.h"
#include "services/ext/backend/ext_backend.h"
#include "services/ext/driver/node_drivers.h"
#include "services/ext/tests/ext_test_support.h"
#include "services/postgres/tests/pg_test_support.h"
#include "tests/real_support.h"

namespace lockstep {
namespace {

void require_ext() {
  testing::require_redis_server();
  testing::require_node_drivers();
}

RunReport run_ext(const std::string& scenario, const std::string& adapter,
                  std::vector<std::string> sets = {}) {
  return run_scenario({.scenario = scenario,
                       .adapter = adapter,
                       .world = WorldKind::real,
                       .sets = std::move(sets)});
}

bool violates(const RunReport& r, Invariant invariant) {
  return r.violated().count(invariant) != 0;
}

// Every driver the run started is gone once it is over (the trace names their pids).
void check_drivers_gone(const RunReport& r) {
  int drivers = 0;
  for (const std::string& line : r.trace) {
    const auto at = line.find(") pid ");
    if (line.find(" driver ext:") == std::string::npos || at == std::string::npos) continue;
    ++drivers;
    CHECK(::kill(std::stoi(line.substr(at + 6)), 0) == -1);
  }
  CHECK(drivers > 0);
}

}  // namespace

TEST_CASE("ext: every ext adapter runs sequential safely", "[ext][real][runner]") {
  require_ext();
  for (const std::string& adapter : ext_family()) {
    INFO(adapter);
    const RunReport r = run_ext("sequential", adapter);
    INFO(to_text(r));
    CHECK(r.end == RunEnd::complete);
    CHECK(r.violations.empty());
    CHECK(r.stats.acquisitions == 2);
    check_drivers_gone(r);
  }
}

TEST_CASE("ext: stolen-lock judges ownership for every ext adapter", "[ext][real][runner]") {
  require_ext();
  for (const std::string& adapter : ext_family()) {
    INFO(adapter);
    const RunReport r = run_ext("stolen-lock", adapter);
    INFO(to_text(r));
    CHECK(r.end == RunEnd::complete);
    CHECK_FALSE(
        violates(r, Invariant::ownership));  // A's late release and extend leave B's lock alone
    CHECK(violates(
        r, Invariant::mutual_exclusion));  // A's pause (SIGSTOP of its driver) outlived its lease
    CHECK(r.matches_expectation());
    CHECK(r.stats.acquisitions == 2);  // C found B's lock still there
  }
}

TEST_CASE("ext: a crashed client's driver dies with it, so its lock expires",
          "[ext][real][runner]") {
  require_ext();
  // redis-semaphore refreshes its lock from a timer while its process lives: a driver left running
  // after its client crashed would hold the lock for ever, and B would never get in.
  const RunReport r = run_ext("crash-holder", "ext:redis-semaphore");
  INFO(to_text(r));
  CHECK(r.end == RunEnd::complete);
  CHECK(r.violations.empty());
  CHECK(r.stats.acquisitions == 2);
}

TEST_CASE("ext: a driver that fails ends the run as an error, never as a lock result",
          "[ext][real][runner]") {
  require_ext();
  // A deadline below a Redis round trip through Node: an acquire or release overruns it.
  const RunReport r = run_ext("sequential", "ext:locco-redis", {"ext_deadline_ms=1"});
  INFO(to_text(r));
  CHECK(r.end == RunEnd::error);
  CHECK_THAT(r.end_message, Catch::Contains("hung") && Catch::Contains("within 1 ms"));
}

TEST_CASE("ext: the Redlock libraries on 5 real nodes, one of them stopped",
          "[ext][real][runner]") {
  require_ext();
  for (const std::string& adapter : ext_redlock_family()) {
    INFO(adapter);
    const RunReport r = run_ext("node-pause", adapter, {"pause_ms=1500"});
    INFO(to_text(r));
    CHECK(r.end == RunEnd::complete);
    CHECK_FALSE(violates(r, Invariant::mutual_exclusion));
    CHECK_FALSE(violates(r, Invariant::ownership));
  }
}

// advisory-lock against a private PostgreSQL 15: a session lock outlives a paused holder (no TTL
// to run out), dies with a crashed one's driver, and a terminated session or a reset connection
// ends it under its holder, as its traits say. The backend's record of its sessions is the
// leases: a lease derived from the clients' TTL would outlast a session a crash ended
// (crash-holder reported lease_exclusion so).
TEST_CASE("ext: advisory-lock against a real PostgreSQL, judged by its sessions",
          "[ext][real][runner][postgres]") {
  require_ext();
  testing::require_postgres();
  for (const char* scenario : {"sequential", "gc-pause", "crash-holder"}) {
    const RunReport r = run_ext(scenario, "ext:advisory-lock");
    INFO(scenario << "\n" << to_text(r));
    CHECK(r.end == RunEnd::complete);
    CHECK(r.violations.empty());
    CHECK(r.matches_expectation());
    check_drivers_gone(r);
  }
  for (const char* scenario : {"session-killed", "connection-reset"}) {
    const RunReport r = run_ext(scenario, "ext:advisory-lock");
    INFO(scenario << "\n" << to_text(r));
    CHECK(r.end == RunEnd::complete);
    CHECK(violates(r, Invariant::mutual_exclusion));
    CHECK_FALSE(violates(r, Invariant::lease_exclusion));  // the server ended the first session
    CHECK(r.matches_expectation());
  }
}

// etcd3 against Debian's etcd, 3 members on loopback: its own @grpc/grpc-js over real sockets
// (through the clients' proxies when a scenario cuts them off). A paused holder's keepalive stops
// and its lease runs out under it (gc-pause: the violation its traits expect); a reset connection
// is reconnected and the lease kept; a crashed holder's driver dies with it, so its lease expires
// and the next client gets in. Leases are derived from the clients (a real etcd reports none).
TEST_CASE("ext: etcd3 against a real etcd cluster", "[ext][real][runner][etcd]") {
  require_ext();
  testing::require_etcd();
  for (const char* scenario : {"sequential", "gc-pause", "connection-reset", "partition"}) {
    const RunReport r = run_ext(scenario, "ext:etcd3");
    INFO(scenario << "\n" << to_text(r));
    CHECK(r.end == RunEnd::complete);
    CHECK(r.matches_expectation());
    check_drivers_gone(r);
  }
  const RunReport crashed = run_ext("crash-holder", "ext:etcd3");
  INFO(to_text(crashed));
  CHECK(crashed.end == RunEnd::complete);
  CHECK(crashed.stats.acquisitions == 2);  // B got in once A's lease ran out
  CHECK_FALSE(violates(crashed, Invariant::mutual_exclusion));
}

}  // namespace lockstep
