// The ext adapters co-simulated (services/ext/backend/ext_sim.h, services/ext/PROTOCOL.md version 2): a
// real Node driver whose time, network and randomness are the simulator's. Each run must be a
// function of (scenario, seed, build) like any other: the same seed gives the same trace hash.
// Skipped (exit 77) without node 20 or services/ext/node/node_modules outside CI; a failure in CI.
#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "explore/swarm.h"
#include "explore/sweep.h"
#include "real/server_errors.h"
#include "report/report.h"
#include "run/runner.h"
#include "services/ext/driver/node_drivers.h"
#include "services/ext/driver/sim_driver_pool.h"
#include "services/ext/tests/ext_test_support.h"
#include "services/keep_warm.h"
#include "tests/real_support.h"

namespace lockstep {
namespace {

RunReport run_sim(const std::string& scenario, const std::string& adapter, uint64_t seed) {
  return run_scenario(
      {.scenario = scenario, .adapter = adapter, .world = WorldKind::sim, .seed = seed});
}

}  // namespace

TEST_CASE("ext sim: locco-redis takes turns and races safely, in virtual time", "[ext][sim]") {
  testing::require_node_drivers();
  const RunReport sequential = run_sim("sequential", "ext:locco-redis", 1);
  INFO(to_text(sequential));
  CHECK(sequential.end == RunEnd::complete);
  CHECK(sequential.violations.empty());
  CHECK(sequential.matches_expectation());
  CHECK(sequential.stats.acquisitions == 2);
  // The library's commands went through the simulated node's RESP front, over the network.
  bool saw_set = false;
  for (const std::string& line : sequential.trace) {
    saw_set = saw_set || (line.find("stream c0:1 at redis-0: SET resource") != std::string::npos &&
                          line.find("PX 1000 NX -> OK") != std::string::npos);
  }
  CHECK(saw_set);

  for (uint64_t seed : {1, 2, 3}) {
    const RunReport race = run_sim("concurrent-race", "ext:locco-redis", seed);
    INFO("seed " << seed << "\n" << to_text(race));
    CHECK(race.end == RunEnd::complete);
    CHECK(race.violations.empty());
    CHECK(race.matches_expectation());
    CHECK(race.stats.acquisitions == 1);  // exactly one wins, the other is told it is contended
  }
}

// Every co-simulated library: both scenarios pass, and twice the same seed is the same run.
const char* const kCoSimulated[] = {"ext:locco-redis", "ext:node-redlock", "ext:redis-semaphore",
                                    "ext:redis-semaphore-redlock"};

TEST_CASE("ext sim: the same seed gives the same trace hash twice", "[ext][sim][determinism]") {
  testing::require_node_drivers();
  for (const char* adapter : kCoSimulated) {
    for (const char* scenario : {"sequential", "concurrent-race"}) {
      const RunReport first = run_sim(scenario, adapter, 7);
      const RunReport second = run_sim(scenario, adapter, 7);
      INFO(adapter << " " << scenario << "\n" << to_text(first));
      CHECK(first.end == RunEnd::complete);
      CHECK(first.violations.empty());
      CHECK(first.matches_expectation());
      CHECK(first.stats.acquisitions == (std::string(scenario) == "sequential" ? 2 : 1));
      CHECK(first.trace_hash == second.trace_hash);
      CHECK(first.trace == second.trace);
      // Another seed is another run (latencies, jitter, the library's random lock values).
      CHECK(run_sim(scenario, adapter, 8).trace_hash != first.trace_hash);
    }
  }
}

TEST_CASE("ext sim: node-redlock returns a lock already over after a slow acquire",
          "[ext][sim][redlock]") {
  testing::require_node_drivers();
  // A is paused 800 ms with its acquire on the wire (TTL 500): node-redlock computes its validity
  // (start + TTL - drift) but never checks it before returning, so A is told it holds a lock whose
  // validity had ended: valid_on_return. lockstep's own redlock fails that acquire instead.
  const RunReport first = run_sim("slow-acquire", "ext:node-redlock", 1);
  INFO(to_text(first));
  CHECK(first.end == RunEnd::complete);
  CHECK(first.violated().count(Invariant::valid_on_return) == 1);
  CHECK(run_sim("slow-acquire", "ext:node-redlock", 1).trace_hash == first.trace_hash);
  const RunReport own = run_sim("slow-acquire", "redlock", 1);
  INFO(to_text(own));
  CHECK(own.violated().count(Invariant::valid_on_return) == 0);

  const RunReport sequential = run_sim("sequential", "ext:node-redlock", 1);
  INFO(to_text(sequential));
  CHECK(sequential.violations.empty());
  CHECK(sequential.stats.acquisitions == 2);
  const RunReport race = run_sim("concurrent-race", "ext:node-redlock", 1);
  INFO(to_text(race));
  CHECK(race.violations.empty());
  CHECK(race.stats.acquisitions == 1);
}

TEST_CASE("ext sim: a partition delays the library's bytes, it does not lose them",
          "[ext][sim][network]") {
  testing::require_node_drivers();
  // A's release is written while it is cut off: the stream retransmits it (TCP), so once the
  // partition heals the release lands, A's lock goes, and A gets the key again: no hang, no error.
  const RunReport r = run_sim("partition", "ext:locco-redis", 1);
  INFO(to_text(r));
  CHECK(r.end == RunEnd::complete);
  CHECK(r.matches_expectation());
  CHECK(r.stats.acquisitions == 3);
  bool retransmitted = false;
  for (const std::string& line : r.trace) {
    retransmitted = retransmitted || line.find("retransmits piece") != std::string::npos;
  }
  CHECK(retransmitted);
}

// A failover as lockstep's redis backend does it: the primary dies, its lagging replica is
// promoted, and the library's connections follow it. The replica never got A's lock, so B takes
// the key while A still works: what the scenario expects of asynchronous replication. Before
// failovers were co-simulated the scenario did not apply to the ext libraries.
TEST_CASE("ext sim: a failover moves the library's connections to the promoted replica",
          "[ext][sim][failover]") {
  testing::require_node_drivers();
  for (const char* adapter : {"ext:locco-redis", "ext:redis-semaphore"}) {
    const RunReport r = run_sim("failover", adapter, 1);
    INFO(adapter << "\n" << to_text(r));
    CHECK(r.end == RunEnd::complete);
    CHECK(r.matches_expectation());
    CHECK(r.stats.acquisitions == 2);
    CHECK_FALSE(r.violations.empty());
    bool followed = false;
    for (const std::string& line : r.trace) {
      followed = followed || line.find("now to redis-1 (failover)") != std::string::npos;
    }
    CHECK(followed);
    CHECK(run_sim("failover", adapter, 1).trace_hash == r.trace_hash);
  }
  // The real world's ext backend has no replica: the scenario cannot run there (`run`: exit 2,
  // `matrix`: not applicable), before any server starts, rather than failing at the failover.
  CHECK_THROWS_AS(
      run_scenario(
          {.scenario = "failover", .adapter = "ext:locco-redis", .world = WorldKind::real}),
      WorldUnsupportedError);
}

}  // namespace lockstep

namespace lockstep {
namespace {

// A client's wall clock stepping back (an NTP step) moves the driver's Date only: the durations
// the driver reports stay on the monotonic clock, never negative (which failed as a malformed
// line, "t1_ns is before t0_ns", before the driver timed them on the harness's monotonic time).
TEST_CASE("ext sim: a backward wall-clock jump of the client leaves the driver's timing sane",
          "[ext][sim][clock]") {
  testing::require_node_drivers();
  const SwarmCapabilities caps = swarm_capabilities("ext:locco-redis");
  const SwarmSpec spec = draw_swarm_spec(caps, 2, {.faults = {FaultKind::clock_jump}});
  REQUIRE(spec.has_fault(FaultKind::clock_jump));
  const SeedOutcome outcome = run_swarm_spec("ext:locco-redis", spec, 2, /*fencing_on=*/true);
  CHECK(outcome.report.end == RunEnd::complete);
  CHECK(outcome.report.end_message.find("t1_ns is before t0_ns") == std::string::npos);
}

// A server's crash, then a failover while it is down, then its restart: the restart brings back
// the node that crashed, not the replica a failover put in its place (which is alive: restarting
// it failed a check in the simulator, an internal error of sweep seed 214).
TEST_CASE("ext sim: a restart after a failover brings back the crashed node",
          "[ext][sim][failover]") {
  testing::require_node_drivers();
  const SwarmCapabilities caps = swarm_capabilities("ext:locco-redis");
  SwarmSpec spec = draw_swarm_spec(caps, 3, {.faults = {FaultKind::failover}});
  REQUIRE(spec.replication_delay_ms >= 0);
  spec.faults = {
      {.kind = FaultKind::server_restart, .at_ms = 100, .server = 0, .amount = 300},
      {.kind = FaultKind::failover, .at_ms = 200},
  };
  REQUIRE(spec.safety_ms > 400);
  const SeedOutcome outcome = run_swarm_spec("ext:locco-redis", spec, 3, /*fencing_on=*/true);
  INFO(to_text(outcome.report));
  CHECK(outcome.report.end == RunEnd::complete);
}

// ext:locco-memory: one driver shared by every client (its store is the process's memory), on a
// node of its own. Leases come from the clients (no keyspace to watch), which must not cry wolf
// where the store answers without latency: an extend sent at the instant of its own grant was
// judged an extend of the previous owner's lock (ownership, sweep seed 2), and a grant won after
// retries was given the lease of the first attempt's send time, over before it began
// (valid_on_return, sweep seed 9).
TEST_CASE("ext sim: locco-memory shares one driver and is judged by what its clients saw",
          "[ext][sim][memory]") {
  testing::require_node_drivers();
  const RunReport sequential = run_sim("sequential", "ext:locco-memory", 1);
  INFO(to_text(sequential));
  CHECK(sequential.end == RunEnd::complete);
  CHECK(sequential.violations.empty());
  CHECK(sequential.stats.acquisitions == 2);
  for (uint64_t seed : {1, 2, 3}) {
    const RunReport race = run_sim("concurrent-race", "ext:locco-memory", seed);
    INFO("seed " << seed << "\n" << to_text(race));
    CHECK(race.violations.empty());
    CHECK(race.stats.acquisitions == 1);
    CHECK(run_sim("concurrent-race", "ext:locco-memory", seed).trace_hash == race.trace_hash);
  }
  bool shared = false;
  for (const std::string& line : sequential.trace) {
    shared = shared || line.find("driver ext:locco-memory shared:") != std::string::npos;
  }
  CHECK(shared);

  const SwarmCapabilities caps = swarm_capabilities("ext:locco-memory");
  int retried_grants = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const SeedOutcome outcome = run_swarm_spec("ext:locco-memory", draw_swarm_spec(caps, seed, {}),
                                               seed, /*fencing_on=*/true, /*keep_trace=*/true);
    INFO("seed " << seed << "\n" << to_text(outcome.report));
    CHECK(outcome.report.violated().count(Invariant::ownership) == 0);
    CHECK(outcome.report.violated().count(Invariant::valid_on_return) == 0);
    for (const std::string& line : outcome.report.trace) {
      const bool granted = line.find("complete acquire ok") != std::string::npos;
      retried_grants += granted && line.find("(attempts=1)") == std::string::npos ? 1 : 0;
    }
  }
  CHECK(retried_grants > 0);  // the premise: grants won after retries were judged
}

// More clients than a run starts Node processes for share kSimDriversMax drivers (retry-storm's
// 200), as threads of one process each: every client still gets in, and the leases are the
// clients'.
TEST_CASE("ext sim: many clients share a few drivers", "[ext][sim][pool]") {
  testing::require_node_drivers();
  const RunReport r = run_scenario({.scenario = "retry-storm",
                                    .adapter = "ext:locco-redis",
                                    .world = WorldKind::sim,
                                    .seed = 1,
                                    .sets = {"clients=40"}});
  INFO(to_text(r));
  CHECK(r.end == RunEnd::complete);
  CHECK(r.matches_expectation());
  CHECK(r.stats.acquisitions == 40);
  int drivers = 0;
  for (const std::string& line : r.trace) {
    drivers += line.find("(co-simulated)") != std::string::npos ? 1 : 0;
  }
  CHECK(drivers == 16);
}

// A sweep keeps drivers warm (services/keep_warm.h): a driver reset after one run serves
// the next, also after its client crashed. Each run must still be the run a fresh process gives:
// the same trace hash seed by seed, whatever ran in that driver before.
TEST_CASE("ext sim: a driver kept warm gives every run the trace of a fresh one",
          "[ext][sim][determinism][pool]") {
  testing::require_node_drivers();
  for (const char* adapter : kCoSimulated) {
    const SwarmCapabilities caps = swarm_capabilities(adapter);
    // A sweep's seed, with its trace kept.
    auto run_seed = [&](uint64_t seed) {
      return run_swarm_spec(adapter, draw_swarm_spec(caps, seed, {}), seed, /*fencing_on=*/true,
                            /*keep_trace=*/true);
    };
    constexpr uint64_t kSeeds = 3;
    std::vector<std::string> fresh;
    for (uint64_t seed = 1; seed <= kSeeds; ++seed)
      fresh.push_back(run_seed(seed).report.trace_hash);
    REQUIRE(ext::SimDriverPool::idle_count() == 0);  // no scope: every driver was killed
    const uint64_t started_before = ext::SimDriverPool::started_count();
    uint64_t clients = 0;
    bool crashed = false;
    {
      const KeepBackendsWarm warm;
      // Twice over, so the first seed runs in drivers the last one used.
      for (int round = 0; round < 2; ++round) {
        for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
          const SeedOutcome warm_run = run_seed(seed);
          INFO(adapter << " seed " << seed << " round " << round << "\n"
                       << to_text(warm_run.report));
          CHECK(warm_run.report.trace_hash == fresh[seed - 1]);
          for (const std::string& line : warm_run.report.trace) {
            clients += line.find(" (co-simulated)") != std::string::npos ? 1 : 0;
            crashed = crashed || line.find("killed (its client crashed)") != std::string::npos;
          }
        }
      }
      CHECK(ext::SimDriverPool::idle_count() > 0);
    }
    INFO(adapter);
    CHECK(ext::SimDriverPool::idle_count() == 0);  // the scope's end stopped them
    CHECK(crashed);  // a crashed client's driver was reset too (the swarm's seeds crash clients)
    // Fewer drivers started than clients ran: the rest were reused.
    CHECK(ext::SimDriverPool::started_count() - started_before < clients / 2);
  }
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

// The `reset` fault reaches the co-simulated Redis libraries: their driver's streams are reset
// (services/redis/sim/sim_redis_stream.h), ioredis hears it and reconnects, and the run goes on.
// Before, their backend could not reset a connection, so no sweep drew the fault. An in-memory
// library has no connection to reset.
TEST_CASE("ext sim: a reset strikes a Redis library's connections, and its driver reconnects",
          "[ext][sim][reset]") {
  testing::require_node_drivers();
  for (const char* adapter : kCoSimulated) {
    const SwarmCapabilities caps = swarm_capabilities(adapter);
    INFO(adapter);
    CHECK(caps.connection_resets);
    const std::vector<FaultKind> kinds = strikable_fault_kinds(caps);
    CHECK(std::find(kinds.begin(), kinds.end(), FaultKind::reset) != kinds.end());
  }
  CHECK_FALSE(swarm_capabilities("ext:locco-memory").connection_resets);

  int reset_heard = 0;
  int doomed = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const SwarmCapabilities caps = swarm_capabilities("ext:locco-redis");
    const SwarmSpec spec = draw_swarm_spec(caps, seed, {.faults = {FaultKind::reset}});
    REQUIRE(spec.has_fault(FaultKind::reset));
    const SeedOutcome outcome = run_swarm_spec("ext:locco-redis", spec, seed, /*fencing_on=*/true,
                                               /*keep_trace=*/true);
    INFO("seed " << seed << "\n" << to_text(outcome.report));
    CHECK(outcome.report.end == RunEnd::complete);
    CHECK(outcome.report.stats.acquisitions > 0);
    for (const std::string& line : outcome.report.trace) {
      reset_heard += line.find("reset at the client") != std::string::npos ? 1 : 0;
      doomed += line.find("written during a reset") != std::string::npos ? 1 : 0;
    }
  }
  CHECK(reset_heard > 0);
  CHECK(doomed > 0);  // a reconnect during a window was reset too
}

// `lockstep sweep --adapter ext:node-redlock --faults reset`: before, a usage error (the backend
// could not strike it); now the sweep draws resets, inside the adapter's envelope.
TEST_CASE("ext sim: a sweep with --faults reset draws resets", "[ext][sim][reset]") {
  testing::require_node_drivers();
  SweepConfig config{.adapter = "ext:node-redlock",
                     .seeds = 4,
                     .faults = {FaultKind::reset},
                     .faults_named = true,
                     .keep_going = true,
                     .shrink_max = 0,
                     .report_dir = ""};
  const SweepResult result = run_sweep(config);
  INFO(to_text(result));
  CHECK(result.seeds_run == 4);
  CHECK(result.named_faults_drawn);
  int resets = 0;
  for (const auto& [where, kinds] : result.faults) {
    if (auto it = kinds.find("reset"); it != kinds.end()) resets += it->second;
  }
  CHECK(resets > 0);
}

}  // namespace

TEST_CASE("ext sim: advisory-lock speaks PostgreSQL's wire protocol to the simulated server",
          "[ext][sim][postgres]") {
  testing::require_node_drivers();
  const RunReport sequential = run_sim("sequential", "ext:advisory-lock", 1);
  INFO(to_text(sequential));
  CHECK(sequential.end == RunEnd::complete);
  CHECK(sequential.violations.empty());
  CHECK(sequential.matches_expectation());
  CHECK(sequential.stats.acquisitions == 2);
  // Its own SQL (the key's SHA-256 as two int4) ran on a session of its own, and the server's
  // lease facts name the acquire that took it.
  int tries = 0;
  int grants = 0;
  int session_ends = 0;
  for (const std::string& line : sequential.trace) {
    tries += line.find("at postgres-0: SELECT pg_try_advisory_lock(") != std::string::npos &&
             line.find(") -> t") != std::string::npos;
    grants += line.find("server=postgres grant key=resource owner=c") != std::string::npos;
    session_ends += line.find("ends: the client closed the connection") != std::string::npos;
  }
  CHECK(tries == 2);
  CHECK(grants == 2);
  CHECK(session_ends == 2);  // unlock closes the session

  // A session lock outlives a paused acquire: no TTL to run out (slow-acquire is safe), and a
  // session the server ends under its holder is a violation the traits expect.
  const RunReport slow = run_sim("slow-acquire", "ext:advisory-lock", 1);
  INFO(to_text(slow));
  CHECK(slow.violations.empty());
  CHECK(slow.matches_expectation());
  const RunReport killed = run_sim("session-killed", "ext:advisory-lock", 1);
  INFO(to_text(killed));
  CHECK(killed.end == RunEnd::complete);
  CHECK(killed.matches_expectation());
  CHECK_FALSE(killed.violations.empty());
}

// Sweep seeds 5 and 10: a careful holder spent its lock's whole validity, which for a session
// lock is the session's (2 h 11 min), and the healed client waited past the liveness bound. It
// works for its TTL now, as a budget of its own (explore/swarm_run.cc).
TEST_CASE("ext sim: a sweep's careful holder of a session lock leaves by its TTL",
          "[ext][sim][postgres]") {
  testing::require_node_drivers();
  for (const uint64_t seed : {5, 10}) {
    const SweepResult result = run_sweep({.adapter = "ext:advisory-lock",
                                          .first_seed = seed,
                                          .seeds = 1,
                                          .keep_going = true,
                                          .shrink_max = 0,
                                          .report_dir = ""});
    INFO("seed " << seed << "\n" << to_text(result));
    CHECK(result.seeds_run == 1);
    CHECK(result.violating_seeds == 0);
  }
}

}  // namespace lockstep
