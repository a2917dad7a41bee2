// Swarm sweeps: the generator's determinism, shrinking, replay of shrunk reports, shards and their
// merge, --faults validation, the progress line, and the command's exit codes.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "checkers/excuse.h"
#include "explore/calibrate.h"
#include "explore/replay.h"
#include "explore/sweep.h"
#include "explore/sweep_junit.h"
#include "lockstep/registry.h"
#include "report/report.h"
#include "services/known_bad.h"
#include "tests/cli_support.h"

namespace lockstep {
namespace {

using lockstep::testing::CommandResult;

CommandResult lockstep_cli(const std::string& args) {
  return lockstep::testing::run_lockstep(args);
}

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("lockstep-sweep-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  return dir;
}

// The first violating seed of a known-bad adapter in [1, 1000].
SeedOutcome first_violation(const SweepConfig& config) {
  const SwarmCapabilities caps = swarm_capabilities(config.adapter);
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    SeedOutcome o = run_sweep_seed(config, caps, seed);
    if (o.violates()) return o;
  }
  FAIL("no violation within 1000 seeds");
  return {};
}

// A pinned seed of an adapter, with every fault kind its backend can strike.
SeedOutcome pinned_seed(const std::string& adapter, uint64_t seed) {
  return run_sweep_seed({.adapter = adapter}, swarm_capabilities(adapter), seed);
}

// Whether the run reported a violation of `invariant`, excused or not.
bool reports(const SeedOutcome& outcome, Invariant invariant) {
  const std::vector<ReportedViolation>& found = outcome.report.violations;
  return std::any_of(found.begin(), found.end(), [invariant](const ReportedViolation& rv) {
    return rv.violation.invariant == invariant;
  });
}

}  // namespace

TEST_CASE("the same seed draws the same spec and gives the same trace hash", "[sweep]") {
  for (const char* adapter : {"memory", "redis"}) {
    const SwarmCapabilities caps = swarm_capabilities(adapter);
    for (uint64_t seed : {1u, 7u, 42u}) {
      const SwarmSpec a = draw_swarm_spec(caps, seed);
      const SwarmSpec b = draw_swarm_spec(caps, seed);
      CHECK(to_json(a) == to_json(b));
      const SeedOutcome ra = run_swarm_spec(adapter, a, seed, true);
      const SeedOutcome rb = run_swarm_spec(adapter, b, seed, true);
      CHECK(ra.report.trace_hash == rb.report.trace_hash);
      CHECK(swarm_spec_from_json(to_json(a)).step_count() == a.step_count());
    }
    CHECK(to_json(draw_swarm_spec(caps, 1)) != to_json(draw_swarm_spec(caps, 2)));
  }
}

TEST_CASE("every drawn parameter is a param line at the start of the trace", "[sweep]") {
  const SwarmCapabilities caps = swarm_capabilities("redis");
  const SwarmSpec spec = draw_swarm_spec(caps, 3);
  const SeedOutcome o = run_swarm_spec("redis", spec, 3, true, /*keep_trace=*/true);
  for (const std::string& line : describe_params(spec)) {
    bool found = false;
    for (const std::string& t : o.report.trace)
      found |= t.find("param " + line) != std::string::npos;
    CHECK(found);
  }
}

TEST_CASE("careful round-trips, and a spec saved before careful clients reads as not careful",
          "[sweep][careful]") {
  SwarmSpec spec;
  spec.clients = {SwarmClient{.steps = {SwarmStep{}}}};
  spec.careful = true;
  nlohmann::json j = to_json(spec);
  CHECK(swarm_spec_from_json(j).careful);
  j.erase("careful");
  CHECK_FALSE(swarm_spec_from_json(j).careful);
}

TEST_CASE("every drawn lease spec is careful, with pauses and client clock faults still drawn",
          "[sweep][careful]") {
  const SwarmCapabilities caps = swarm_capabilities("redlock");
  int paused = 0;
  int drifted = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    const SwarmSpec spec = draw_swarm_spec(caps, seed);
    CHECK(spec.careful);
    paused += spec.has_fault(FaultKind::pause) ? 1 : 0;
    drifted += spec.has_fault(FaultKind::clock_drift) ? 1 : 0;
  }
  CHECK(paused > 20);
  CHECK(drifted > 10);
  CHECK_FALSE(draw_swarm_spec(swarm_capabilities("keyed-rw"), 1).careful);
}

TEST_CASE("drifts are drawn both inside the envelope and outside it", "[sweep][envelope]") {
  const SwarmCapabilities caps = swarm_capabilities("redlock");
  const int64_t slow_max = caps.envelope.client_slow_ppm_max;
  const int64_t fast_max = caps.envelope.server_fast_ppm_max;
  REQUIRE(slow_max > 0);
  int clients_inside = 0, clients_outside = 0, servers_inside = 0, servers_outside = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    const SwarmSpec spec = draw_swarm_spec(caps, seed);
    for (const SwarmClient& c : spec.clients) {
      if (c.drift_ppm == 0) continue;
      (c.drift_ppm >= -slow_max ? clients_inside : clients_outside) += 1;
    }
    for (const SwarmFault& f : spec.faults) {
      if (f.kind != FaultKind::server_drift) continue;
      (f.amount <= fast_max ? servers_inside : servers_outside) += 1;
    }
  }
  CHECK(clients_inside > 10);
  CHECK(clients_outside > 10);
  CHECK(servers_inside > 10);
  CHECK(servers_outside > 10);
}

TEST_CASE("a sweep seed is judged by its violations' excuses, never globally",
          "[sweep][envelope]") {
  // Some seed of the production Redis adapter has a violation its faults excuse: each such
  // violation names the fault outside the envelope, and the seed does not count as violating.
  const SwarmCapabilities caps = swarm_capabilities("redis");
  int excused_seeds = 0;
  for (uint64_t seed = 1; seed <= 200 && excused_seeds < 3; ++seed) {
    const SeedOutcome o = run_swarm_spec("redis", draw_swarm_spec(caps, seed), seed, true);
    if (o.report.violations.empty()) continue;
    for (const ReportedViolation& rv : o.report.violations) {
      REQUIRE(rv.violation.excused());
      const HistoryEvent& fault = o.report.history[*rv.violation.excused_by];
      CHECK(fault.kind == EventKind::fault);
      CHECK_FALSE(inside_envelope(o.report.history, fault));
      CHECK(rv.violation.excuse.find(std::string(to_string(fault.fault))) != std::string::npos);
    }
    CHECK_FALSE(o.violates());
    CHECK(o.excused_by.size() == o.report.violations.size());
    ++excused_seeds;
  }
  CHECK(excused_seeds == 3);
}

// Seeds on which an adapter reported an error (nothing happened) for a write the servers had
// applied, found by error_not_applied when it came: a Redlock release that a quorum may have
// carried out, unanswered; an etcd acquire that gave up while the revoke of its queued key went
// unanswered; an etcd extend whose keepalive took effect before a check of its key timed out.
// Seeds 11795 and 18390 of etcd: a put applied late (its acquire had given up, unanswered)
// was judged as the client's next acquire's, which had failed with an error; the lease facts
// now take the owner from the key's value.
TEST_CASE("seeds where an error once hid an applied write now hold", "[sweep][error_not_applied]") {
  // The first three were drawn before `stall` joined the sweep's kinds: pinned to those kinds, a
  // seed draws the schedule it was found with.
  std::vector<FaultKind> before_stall = sweep_fault_kinds();
  std::erase(before_stall, FaultKind::stall);
  const struct {
    const char* adapter;
    uint64_t seed;
    bool before_stall;
  } kSeeds[] = {{"redlock", 50, true},
                {"etcd", 625, true},
                {"etcd", 1078, true},
                {"etcd", 11795, false},
                {"etcd", 18390, false}};
  for (const auto& [adapter, seed, pinned] : kSeeds) {
    INFO(adapter << " seed " << seed);
    SweepConfig config{.adapter = adapter};
    if (pinned) config.faults = before_stall;
    // And all were drawn before etcd's connections could be reset.
    SwarmCapabilities caps = swarm_capabilities(adapter);
    caps.connection_resets = caps.connection_resets && adapter != std::string("etcd");
    const SeedOutcome outcome = run_sweep_seed(config, caps, seed);
    CHECK_FALSE(outcome.violates());
  }
}

// Redlock seed 7 of `--faults stall`: an attempt refused by the majority cleans up the nodes it got;
// the clean-up, held by the stall on a connection the client then gave up on, went out at its next
// retransmission, after the reconnected client's next attempt had won those nodes with the same
// value, and deleted that grant: the client worked on without a quorum (validity_within_lease).
// Each attempt now writes a value of its own (Lock::unique_value).
TEST_CASE("a late clean-up of a refused Redlock attempt never deletes a later attempt's grant",
          "[sweep][stall]") {
  SweepConfig config{.adapter = "redlock", .faults = {FaultKind::stall}, .faults_named = true};
  const SeedOutcome outcome = run_sweep_seed(config, swarm_capabilities("redlock"), 7);
  INFO(to_text(outcome.report));
  CHECK(outcome.spec.has_fault(FaultKind::stall));
  CHECK_FALSE(outcome.violates());
}

// etcd seeds 7798 and 13366 (every fault kind): an acquire gave up (its connection reset) while
// its key waited in the queue; the key's lease, refreshed while a leader's clock ran far too fast,
// ran out early, after the key had won. The excuse measured that drift from the client's next
// acquire, too late to see it: the grant now says when its lease's term began (lease_since_us).
TEST_CASE("a queued etcd key's lease shortened by a fast leader before it won is excused",
          "[sweep][excuse]") {
  for (const uint64_t seed : {7798, 13366}) {
    INFO("etcd seed " << seed);
    const SeedOutcome outcome = pinned_seed("etcd", seed);
    INFO(to_text(outcome.report));
    CHECK(outcome.spec.has_fault(FaultKind::server_drift));
    CHECK_FALSE(outcome.excused_by.empty());
    CHECK_FALSE(outcome.violates());
  }
}

// memory seed 46929: c1's retry was granted the key at the very instant c0's validity (and its
// lease, had the server's clock not run fast) ended; c0's exit ran after that grant within the
// same instant, touching nothing. The two stays touch, they do not overlap (mutual_exclusion).
TEST_CASE("a grant at the instant the last holder's validity ends is not an overlap",
          "[sweep][mutual_exclusion]") {
  const SeedOutcome outcome = pinned_seed("memory", 46929);
  INFO(to_text(outcome.report));
  CHECK(outcome.exercised());
  CHECK_FALSE(reports(outcome, Invariant::mutual_exclusion));
  CHECK_FALSE(outcome.violates());
}

// postgres-session seeds 136628, 146279 and 241763: a holder paused with its grant in its buffer
// and its connection reset meanwhile; the grant came after the validity it could promise, and
// giving it back failed (no connection). The session, and the lock, stay on the server until it
// notices: an unknown outcome, which the adapter had reported as an error (no effect).
TEST_CASE("a late grant that cannot be given back is an unknown outcome, not an error",
          "[sweep][error_not_applied]") {
  for (const uint64_t seed : {136628, 146279, 241763}) {
    INFO("postgres-session seed " << seed);
    const SeedOutcome outcome = pinned_seed("postgres-session", seed);
    INFO(to_text(outcome.report));
    CHECK_FALSE(reports(outcome, Invariant::error_not_applied));
    CHECK_FALSE(outcome.violates());
  }
}

// postgres-session seeds 303157 and 370070: a holder's clock drift healed while it waited on a
// renewal; the wait's timeout, fixed in true time at the drift it began with, fired before the
// holder's own clock reached the validity it went by, and the adapter closed the session under
// it. Seed 373046: the server's clock ran fast, then true, during a keepalive interval fixed in
// true time at the fast rate: the session ended sooner than even the fast clock explains. Timers
// on a node's clock now follow its drift changes.
TEST_CASE("timeouts and keepalives follow drift changes on the clock that measures them",
          "[sweep][sim]") {
  for (const uint64_t seed : {303157, 370070, 373046}) {
    INFO("postgres-session seed " << seed);
    const SeedOutcome outcome = pinned_seed("postgres-session", seed);
    INFO(to_text(outcome.report));
    CHECK_FALSE(outcome.violates());
  }
}

// postgres-xact seed 186656: a holder paused 4.3 s while its extend was on the wire; the reply came
// within the TTL asked, but after the validity the adapter could promise for it (cut to the
// session-loss bound), and the Locker reported it held. It refuses such an extend now.
TEST_CASE("an extend whose validity ended before it returned is not reported held",
          "[sweep][valid_on_return]") {
  const SeedOutcome outcome = pinned_seed("postgres-xact", 186656);
  INFO(to_text(outcome.report));
  CHECK_FALSE(reports(outcome, Invariant::valid_on_return));
  CHECK_FALSE(outcome.violates());
}

// etcd-lock seed 159053: an acquire erred (its lease check timed out, its revoke found no lease)
// while its key's lease ran, by the leader's promise, 57 ms past the call; the leader's clock had
// run fast and ended it before. The server drift (outside the envelope) excuses it.
TEST_CASE("a lease an erring acquire left behind, ended early by a fast leader, is excused",
          "[sweep][excuse]") {
  const SeedOutcome outcome = pinned_seed("etcd-lock", 159053);
  INFO(to_text(outcome.report));
  CHECK(outcome.spec.has_fault(FaultKind::server_drift));
  CHECK_FALSE(outcome.excused_by.empty());
  CHECK_FALSE(outcome.violates());
}

TEST_CASE("careful clients catch a Redlock that ignores the time spent acquiring",
          "[sweep][careful][shrink]") {
  register_known_bad_adapters();
  const auto dir = fresh_dir("no-elapsed");
  const SweepConfig config{.adapter = "bad-redlock-no-elapsed", .report_dir = dir.string()};
  const SeedOutcome original = first_violation(config);
  CHECK(original.spec.careful);
  // Its validity outlasts the servers' leases by the time spent acquiring: the invariant that
  // names this bug, whether or not another client got in meanwhile.
  CHECK(original.target() == "validity_within_lease");
  const Counterexample cx = shrink_counterexample(config, original);
  CHECK(cx.shrunk_ops <= 20);
  REQUIRE_FALSE(cx.replay_file.empty());
  const ReplaySpec replay = read_replay_spec(cx.replay_file);
  CHECK(replay_run(replay).trace_hash == replay.trace_hash);
  // The production Redlock on the same spec keeps exclusion.
  CHECK_FALSE(run_swarm_spec("redlock", original.spec, original.seed, true).violates());
  std::filesystem::remove_all(dir);
}

namespace {

// One step as a spec's JSON has it (every field).
nlohmann::json step_json(const SwarmStep& step) {
  SwarmSpec one;
  one.clients.push_back(SwarmClient{.steps = {step}});
  return to_json(one).at("clients").at(0).at("steps").at(0);
}

}  // namespace

TEST_CASE("auto-extending holders are drawn from a stream of their own, for locks that extend",
          "[sweep][auto-extend]") {
  const SwarmCapabilities caps = swarm_capabilities("redis");
  REQUIRE(caps.extends);
  SwarmCapabilities no_extends = caps;
  no_extends.extends = false;
  int eligible = 0;
  int auto_extending = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    const SwarmSpec spec = draw_swarm_spec(caps, seed);
    const SwarmSpec plain = draw_swarm_spec(no_extends, seed);
    REQUIRE(spec.clients.size() == plain.clients.size());
    for (size_t c = 0; c < spec.clients.size(); ++c) {
      REQUIRE(spec.clients[c].steps.size() == plain.clients[c].steps.size());
      for (size_t i = 0; i < spec.clients[c].steps.size(); ++i) {
        const SwarmStep& s = spec.clients[c].steps[i];
        SwarmStep before = plain.clients[c].steps[i];
        CHECK_FALSE(before.auto_extend);
        // Only a plain hold: released, not extended by hand, not late, no pause inside.
        const bool plain_hold =
            before.release && !before.extend && before.late_ms < 0 && before.pause_ms == 0;
        eligible += plain_hold ? 1 : 0;
        if (!s.auto_extend) {
          CHECK(step_json(s) == step_json(before));  // the workload's own draws are untouched
          continue;
        }
        ++auto_extending;
        CHECK(plain_hold);
        const int64_t ttl_ms = s.ttl_ms > 0 ? s.ttl_ms : spec.ttl_ms;
        CHECK(s.hold_ms >= ttl_ms);  // several renewals
        CHECK(s.hold_ms <= 3 * ttl_ms);
        before.auto_extend = true;
        before.hold_ms = s.hold_ms;
        CHECK(step_json(s) == step_json(before));
      }
    }
    // Never for a keyed lock, nor for a lock that does not extend.
    for (const SwarmClient& c : draw_swarm_spec(swarm_capabilities("keyed-rw"), seed).clients) {
      for (const SwarmStep& s : c.steps) CHECK_FALSE(s.auto_extend);
    }
  }
  REQUIRE(eligible > 200);
  CHECK(auto_extending * 16 > eligible);  // one in eight of them, give or take
  CHECK(auto_extending * 4 < eligible);
}

TEST_CASE("slow servers are drawn for Redis and Redlock from a stream of their own, within bounds",
          "[sweep][slow]") {
  const SwarmCapabilities caps = swarm_capabilities("redlock");
  REQUIRE(caps.slow_servers);
  REQUIRE(swarm_capabilities("redis").slow_servers);
  SwarmCapabilities unslowed = caps;
  unslowed.slow_servers = false;
  int slowed = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const SwarmSpec spec = draw_swarm_spec(caps, seed);
    // Everything else is what the seed drew before servers could be slow.
    nlohmann::json rest = to_json(spec);
    rest.erase("server_delays_us");
    nlohmann::json before = to_json(draw_swarm_spec(unslowed, seed));
    before.erase("server_delays_us");
    CHECK(rest == before);
    CHECK(draw_swarm_spec(unslowed, seed).server_delays_us.empty());
    slowed += spec.slows_servers() ? 1 : 0;
    const int64_t delay_us_max =
        std::clamp<int64_t>(spec.ttl_ms * 100, 1'000, SwarmSpec::kServerDelayUsMax);
    CHECK(spec.server_delays_us.size() <= static_cast<size_t>(SwarmSpec::kSlowServersMax));
    for (int64_t delay_us : spec.server_delays_us) {
      CHECK(delay_us >= 0);
      CHECK(delay_us <= delay_us_max);
    }
    if (spec.slows_servers()) CHECK(spec.has_fault(FaultKind::latency));
    // Not where latency is not asked for, nor where the backend cannot slow a server.
    CHECK_FALSE(draw_swarm_spec(caps, seed, {.faults = {FaultKind::pause}}).slows_servers());
    CHECK_FALSE(draw_swarm_spec(swarm_capabilities("mongo"), seed).slows_servers());
    CHECK_FALSE(draw_swarm_spec(swarm_capabilities("memory"), seed).slows_servers());
  }
  CHECK(slowed > 120);  // 3 in 4 seeds, each server slow by half
  CHECK(slowed < 180);
  // A spec round-trips them; one saved before slow servers has none.
  SwarmSpec spec;
  spec.clients = {SwarmClient{.steps = {SwarmStep{}}}};
  spec.server_delays_us = {0, 2'000, 0};
  nlohmann::json j = to_json(spec);
  CHECK(swarm_spec_from_json(j).server_delays_us == spec.server_delays_us);
  j.erase("server_delays_us");
  CHECK(swarm_spec_from_json(j).server_delays_us.empty());
  spec.server_delays_us = {SwarmSpec::kServerDelayUsMax + 1};
  CHECK_THROWS_WITH(spec.validate(), Catch::Contains("a server delay must be in"));
}

TEST_CASE("a slow node shows a Redlock whose validity ignores the time spent acquiring",
          "[sweep][slow]") {
  register_known_bad_adapters();
  // One client takes a 200 ms lease on five nodes and works to the end of its validity. Node 2
  // answers 30 ms after the others: the round lasts that long, beyond the drift allowance
  // (0.1% of the TTL and 5 ms), while the other four leases ran from its start.
  SwarmSpec spec;
  spec.ttl_ms = 200;
  spec.retry_times = 0;
  spec.safety_ms = 600;
  spec.careful = true;
  spec.clients = {SwarmClient{.start_ms = 10, .steps = {SwarmStep{.key = 0, .hold_ms = 150}}}};
  spec.validate();
  SwarmSpec slow = spec;
  slow.server_delays_us = {0, 0, 15'000, 0, 0};
  const SeedOutcome bad_slow = run_swarm_spec("bad-redlock-no-elapsed", slow, 1, true, true);
  CHECK(bad_slow.violates());
  CHECK(bad_slow.target() == "validity_within_lease");
  // The slowness is recorded as a latency fault on that server, and traced.
  bool recorded = false;
  for (const HistoryEvent& e : bad_slow.report.history.events()) {
    recorded |= e.kind == EventKind::fault && e.fault == FaultKind::latency && e.server == "2" &&
                e.amount == 15'000;
  }
  CHECK(recorded);
  bool traced = false;
  for (const std::string& line : bad_slow.report.trace)
    traced |= line.find("server #2 slow: +15000us each way") != std::string::npos;
  CHECK(traced);
  // The production Redlock subtracts the round's time; without the slow node the bug is hidden.
  CHECK_FALSE(run_swarm_spec("redlock", slow, 1, true).violates());
  CHECK_FALSE(run_swarm_spec("bad-redlock-no-elapsed", spec, 1, true).violates());
}

TEST_CASE("a sweep counts, per fault kind, the seeds where it excused a violation",
          "[sweep][excuse]") {
  const SweepResult r =
      run_sweep({.adapter = "memory", .seeds = 200, .keep_going = true, .report_dir = ""});
  REQUIRE(r.excused_seeds > 0);
  int most = 0;
  int sum = 0;
  for (const auto& [kind, seeds] : r.excused_seeds_by) {
    CHECK(r.excused_by.contains(kind));     // a kind that excused a seed excused a violation
    CHECK(seeds <= r.excused_by.at(kind));  // each of its seeds had at least one
    most = std::max(most, seeds);
    sum += seeds;
  }
  CHECK(r.excused_seeds_by.size() == r.excused_by.size());
  CHECK(most <= r.excused_seeds);  // a seed excused by two kinds counts once in the total
  CHECK(sum >= r.excused_seeds);
  const std::string text = to_text(r);
  CHECK_THAT(text, Catch::Contains("seeds with excused violations: "));
  CHECK_THAT(text, Catch::Contains(fmt::format("; any {} ({:.1f}%)", r.excused_seeds,
                                               100.0 * r.excused_seeds / 200)));
}

TEST_CASE(
    "an auto-extending holder keeps its lock through several TTLs, and a failed extension never "
    "hands it to another inside its validity",
    "[sweep][auto-extend]") {
  // One holder auto-extends a 300 ms lock (every 100 ms, from about 20 ms) and works 900 ms in
  // 75 ms steps. From 190 ms every message takes 30 ms each way: its second extension (at about
  // 220 ms) cannot be answered within Redlock's 50 ms round, while the validity it was given still
  // runs (to about 313 ms from its acquire, 413 ms from the first extension). A lock that deleted
  // its leases on that failure would do so at about 300 ms, inside the step the holder began at
  // about 245 ms.
  SwarmSpec spec;
  spec.ttl_ms = 300;
  spec.retry_times = 0;
  spec.safety_ms = 1200;
  spec.careful = true;
  // A first step of a 20 ms lease (worked to its validity's end, about 15 ms) loads the release
  // script on the nodes: a first EVALSHA answers NOSCRIPT.
  spec.clients = {SwarmClient{
      .start_ms = 0,
      .steps = {SwarmStep{.ttl_ms = 20}, SwarmStep{.hold_ms = 900, .auto_extend = true}}}};
  spec.validate();
  const SeedOutcome held = run_swarm_spec("redlock", spec, 1, true, true);
  CHECK_FALSE(held.violates());
  int extends = 0;  // the servers' lease facts: the auto-extension's calls are not operations
  for (const HistoryEvent& e : held.report.history.events()) extends += e.kind == EventKind::extend;
  CHECK(extends >= 2 * 5);  // 900 ms of work on a 300 ms lease, on each of 5 nodes
  SwarmSpec spike = spec;
  spike.faults = {
      SwarmFault{.kind = FaultKind::latency, .at_ms = 190, .duration_ms = 300, .amount = 30'000}};
  spike.validate();
  // Redlock deleted its leases everywhere when an extend failed: a step of the holder's was then
  // unprotected (validity_within_lease, and mutual exclusion where another client got in).
  CHECK_FALSE(run_swarm_spec("redlock", spike, 1, true).violates());
  // A spec round-trips auto-extension; one saved before it has none.
  nlohmann::json j = to_json(spike);
  CHECK(swarm_spec_from_json(j).clients[0].steps[1].auto_extend);
  j["clients"][0]["steps"][1].erase("auto_extend");
  CHECK_FALSE(swarm_spec_from_json(j).clients[0].steps[1].auto_extend);
}

TEST_CASE("a fault list restricts the kinds a spec draws", "[sweep]") {
  const SwarmCapabilities caps = swarm_capabilities("redis");
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    const SwarmSpec spec = draw_swarm_spec(caps, seed, {.faults = {FaultKind::partition}});
    for (FaultKind k : sweep_fault_kinds()) {
      if (k != FaultKind::partition) CHECK_FALSE(spec.has_fault(k));
    }
  }
  CHECK(parse_fault_list("pause,crash") ==
        std::vector<FaultKind>{FaultKind::pause, FaultKind::crash});
  CHECK_THROWS_WITH(parse_fault_list("pause,meteor"), Catch::Contains("valid kinds: pause, crash"));
  // A kind the history knows but a sweep does not draw is refused the same way.
  CHECK_THROWS_WITH(parse_fault_list("server-crash"), Catch::Contains("valid kinds: pause, crash"));
}

TEST_CASE(
    "shrinking gives a smaller spec that still violates, and its replay file reproduces the hash",
    "[sweep][shrink]") {
  register_known_bad_adapters();
  const auto dir = fresh_dir("shrink");
  const SweepConfig config{.adapter = "bad-del-release", .report_dir = dir.string()};
  const SeedOutcome original = first_violation(config);
  const Counterexample cx = shrink_counterexample(config, original);
  CHECK(cx.invariant == original.target());
  CHECK(cx.shrunk_ops <= cx.ops);
  CHECK(cx.shrunk.step_count() + cx.shrunk.faults.size() <=
        original.spec.step_count() + original.spec.faults.size());
  CHECK(cx.shrunk_ops <= 20);
  const SeedOutcome again = run_swarm_spec(config.adapter, cx.shrunk, cx.seed, true);
  CHECK(again.violates());
  CHECK(again.target() == cx.invariant);

  REQUIRE_FALSE(cx.replay_file.empty());
  const ReplaySpec replay = read_replay_spec(cx.replay_file);
  REQUIRE_FALSE(replay.workload.is_null());
  CHECK(replay_run(replay).trace_hash == replay.trace_hash);
  CHECK(replay.trace_hash == cx.shrunk_trace_hash);
  std::filesystem::remove_all(dir);
}

TEST_CASE("shrink stops within its run budget and never grows a spec", "[shrink]") {
  const SwarmSpec spec = draw_swarm_spec(swarm_capabilities("memory"), 11);
  int calls = 0;
  const ShrinkResult r =
      shrink(spec, [&](const SwarmSpec&) { return ++calls % 2 == 0; }, {.runs_max = 30});
  CHECK(r.runs <= 30);
  CHECK(calls == r.runs);
  CHECK(r.spec.clients.size() <= spec.clients.size());
  for (const SwarmSpec& c : shrink_candidates(spec)) CHECK_NOTHROW(c.validate());
}

TEST_CASE("shards cover every seed exactly once and the merge adds them up", "[sweep][shard]") {
  for (int count = 1; count <= 5; ++count) {
    for (uint64_t seed = 10; seed < 60; ++seed) {
      int owners = 0;
      for (int i = 0; i < count; ++i) owners += seed_in_shard(seed, 10, i, count) ? 1 : 0;
      CHECK(owners == 1);
    }
  }
  SweepConfig config{
      .adapter = "memory", .first_seed = 5, .seeds = 30, .keep_going = true, .report_dir = ""};
  const SweepResult whole = run_sweep(config);
  std::vector<nlohmann::json> shards;
  int seeds = 0;
  for (int i = 0; i < 3; ++i) {
    config.shard_index = i;
    config.shard_count = 3;
    const SweepResult part = run_sweep(config);
    seeds += part.seeds_run;
    shards.push_back(to_json(part));
  }
  CHECK(seeds == 30);
  const nlohmann::json merged = merge_sweeps(shards);
  CHECK(merged.at("seeds_run") == whole.seeds_run);
  CHECK(merged.at("violating_seeds") == whole.violating_seeds);
  CHECK(merged.at("stats").at("ops") == whole.ops);
  CHECK(merged.at("tolerated") == to_json(whole).at("tolerated"));
  CHECK(merged.at("excused_seeds_by") == to_json(whole).at("excused_seeds_by"));
  CHECK_THROWS_WITH(merge_sweeps({shards[0], shards[2]}), Catch::Contains("missing shards: 1/3"));
  CHECK_THROWS_WITH(merge_sweeps({shards[0], shards[0], shards[1], shards[2]}),
                    Catch::Contains("given twice"));
  CHECK(parse_shard("2/4") == std::pair<int, int>{2, 4});
  CHECK_THROWS_AS(parse_shard("4/4"), UsageError);
  CHECK_THROWS_AS(parse_shard("x"), UsageError);
}

TEST_CASE("median seeds and time to the first counterexample", "[calibrate]") {
  // Caught at 1 and 3 (0-based) of 4: starts 0..3 need 2, 1, 2, 1 seeds and 30, 20, 70, 40 us.
  const FirstCatch fc = median_first_catch({false, true, false, true}, {10, 20, 30, 40});
  REQUIRE(fc.median_seeds);
  CHECK(*fc.median_seeds == Approx(1.5));
  REQUIRE(fc.median_time_us);
  CHECK(*fc.median_time_us == Approx((30 + 40) / 2.0));
  CHECK_FALSE(median_first_catch({false, false, false}, {1, 1, 1}).median_seeds);
}

TEST_CASE("calibrate judges the median time only when asked to", "[calibrate]") {
  // A row that is caught and shrinks small, but slowly (on a busy machine, say).
  CalibrationRow slow{.caught = 3, .caught_on_breaks = 3, .median_time_us = 5e6};
  slow.first = Counterexample{.shrunk_ops = 4};
  CalibrateConfig by_hand;
  CHECK_FALSE(slow.meets_targets(by_hand));
  CalibrateConfig ci{.judge_time = false};  // ctest: what does not depend on speed
  CHECK(slow.meets_targets(ci));
  slow.first->shrunk_ops = ci.target_shrunk_ops + 1;
  CHECK_FALSE(slow.meets_targets(ci));  // the shrunk size is still judged
  CHECK(to_json(CalibrationResult{.config = ci})["targets"]["median_time_to_first_us"].is_null());
}

// A judged row of 200 seeds, caught and shrunk small, with a target share of 0.2 on ownership.
CalibrationRow share_row(int caught_on_breaks) {
  CalibrationRow row{.adapter = "bad-a",
                     .breaks = "ownership",
                     .catch_share_min = 0.2,
                     .seeds_run = 200,
                     .caught = 120,
                     .caught_on_breaks = caught_on_breaks};
  row.first = Counterexample{.seed = 3, .invariant = "ownership", .shrunk_ops = 4};
  return row;
}

TEST_CASE("a row caught on its invariant in less than its target share is missed", "[calibrate]") {
  const CalibrateConfig config{.seeds = 200, .judge_time = false};
  CalibrationResult r{.config = config, .rows = {share_row(41)}};
  CHECK(r.rows[0].share_judged(config));
  CHECK(r.rows[0].meets_targets(config));
  CHECK(r.verdict() == "ok");
  // 39 of 200 (19.5%) is under 20%: caught, shrunk small, and still missed.
  r.rows[0].caught_on_breaks = 39;
  CHECK_FALSE(r.rows[0].share_met(config));
  CHECK(r.rows[0].judged(config));
  CHECK_FALSE(r.rows[0].meets_targets(config));
  CHECK(r.verdict() == "missed");
  const nlohmann::json row = to_json(r).at("adapters").at(0);
  CHECK(row.at("breaks") == "ownership");
  CHECK(row.at("share_on_breaks").get<double>() == Approx(0.195));
  CHECK(row.at("detection_rate").get<double>() == Approx(0.6));
  CHECK(row.at("catch_share_min").get<double>() == Approx(0.2));
  CHECK(row.at("share") == "missed");
  CHECK(row.at("meets_targets") == false);
  const std::string text = to_text(r);
  CHECK(text.find("  19.5%   60.0%   20.0% missed") != std::string::npos);
  CHECK(text.find("MISSED") != std::string::npos);
  const std::vector<JUnitCase> cases = junit_cases(r);
  REQUIRE(cases.size() == 1);
  CHECK_FALSE(cases[0].passed);
  CHECK(cases[0].failure_message.find("caught on ownership in 19.5% of seeds, under its 20.0%") !=
        std::string::npos);
}

TEST_CASE("a share is judged only over a whole range of enough seeds", "[calibrate]") {
  // Too few seeds for a share to mean anything: caught on its invariant once is enough.
  const CalibrateConfig few{.seeds = kShareSeedsMin - 1, .judge_time = false};
  CalibrationRow row = share_row(1);
  row.seeds_run = few.seeds;
  CHECK_FALSE(row.share_judged(few));
  CHECK(row.meets_targets(few));
  CHECK(to_text(CalibrationResult{.config = few, .rows = {row}}).find("shares not judged") !=
        std::string::npos);
  // A range the budget cut: not judged on its share either.
  const CalibrateConfig cut{.seeds = 1000, .judge_time = false};
  row.seeds_run = 200;
  CHECK_FALSE(row.share_judged(cut));
  CHECK(row.meets_targets(cut));
  // Caught on its invariant never: missed whatever the seed count.
  row.caught_on_breaks = 0;
  row.seeds_run = few.seeds;
  CHECK_FALSE(row.meets_targets(few));
}

TEST_CASE("a seed caught only on another invariant does not count toward the share",
          "[calibrate]") {
  SeedOutcome other;
  other.untolerated = {Invariant::fencing};
  const SeedCatch on_other = seed_catch(other, "ownership");
  CHECK(on_other.any);
  CHECK_FALSE(on_other.on_breaks);
  SeedOutcome own;
  own.untolerated = {Invariant::fencing, Invariant::ownership};
  CHECK(seed_catch(own, "ownership").on_breaks);
  // An excused violation of its invariant is no catch at all.
  SeedOutcome excused;
  excused.tolerated = {Invariant::ownership};
  CHECK_FALSE(seed_catch(excused, "ownership").any);
  CHECK_FALSE(seed_catch(excused, "ownership").on_breaks);
  // A run that did not complete is caught, but on no invariant.
  SeedOutcome stuck;
  stuck.report.end = RunEnd::event_bound;
  CHECK(seed_catch(stuck, "liveness").any);
  CHECK_FALSE(seed_catch(stuck, "liveness").on_breaks);
  // Every seed caught, none on its invariant: a miss of its own design.
  const CalibrateConfig config{.seeds = 200, .judge_time = false};
  CalibrationRow row = share_row(0);
  row.caught = 200;
  CHECK(row.share_any() == Approx(1.0));
  CHECK(row.share_on_breaks() == Approx(0.0));
  CHECK_FALSE(row.meets_targets(config));
  CHECK(CalibrationResult{.config = config, .rows = {row}}.verdict() == "missed");
}

TEST_CASE("every registered known-bad declares its invariant and a target share above 0, at most 1",
          "[calibrate]") {
  register_known_bad_adapters();
  int known_bad = 0;
  for (const AdapterEntry& entry : adapters()) {
    if (!entry.known_bad) continue;
    INFO(entry.name);
    ++known_bad;
    CHECK(invariant_from_string(entry.breaks).has_value());
    CHECK(entry.catch_share_min > 0);
    CHECK(entry.catch_share_min <= 1);
  }
  CHECK(known_bad >= 19);
}

TEST_CASE("sweep exit codes: 0 no violation, 1 violation with a replay line, 2 bad usage",
          "[sweep][cli]") {
  const auto dir = fresh_dir("cli");
  const CommandResult ok = lockstep_cli("sweep --adapter memory --seeds 20");
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find("0 violating") != std::string::npos);

  const CommandResult bad = lockstep_cli(
      "sweep --adapter bad-memory-no-owner-check --seeds 1000 --report " + dir.string());
  CHECK(bad.exit_code == 1);
  const size_t at = bad.out.find("replay: lockstep replay ");
  REQUIRE(at != std::string::npos);
  const std::string file = bad.out.substr(at + 24, bad.out.find('\n', at) - at - 24);
  const CommandResult replay = lockstep_cli("replay " + file);
  CHECK(replay.err.find("reproduced") != std::string::npos);
  CHECK(replay.err.find("NOT reproduced") == std::string::npos);

  const CommandResult faults = lockstep_cli("sweep --adapter memory --faults pause,meteor");
  CHECK(faults.exit_code == 2);
  CHECK(faults.err.find("valid kinds: pause, crash") != std::string::npos);
  CHECK(lockstep_cli("sweep --adapter nosuch").exit_code == 2);
  CHECK(lockstep_cli("sweep --adapter memory --shard 3/3").exit_code == 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("no progress line when stderr is not a terminal", "[sweep][cli]") {
  const CommandResult r = lockstep_cli("sweep --adapter memory --seeds 50");
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("seeds/s") == std::string::npos);
  CHECK(r.err.find('\r') == std::string::npos);
}

TEST_CASE("sweep-merge of shard reports written by the command", "[sweep][cli]") {
  const auto dir = fresh_dir("merge");
  for (int i = 0; i < 2; ++i) {
    const CommandResult r = lockstep_cli("sweep --adapter memory --seeds 20 --shard " +
                                         std::to_string(i) + "/2 --report " + dir.string());
    REQUIRE(r.exit_code == 0);
  }
  const CommandResult merged = lockstep_cli("sweep-merge " + dir.string() + " --json");
  REQUIRE(merged.exit_code == 0);
  CHECK(nlohmann::json::parse(merged.out).at("seeds_run") == 20);
  std::filesystem::remove(dir / "sweep.memory.seeds1-20.shard1of2.json");
  CHECK(lockstep_cli("sweep-merge " + dir.string()).exit_code == 2);
  std::filesystem::remove_all(dir);
}

}  // namespace lockstep

namespace lockstep {
namespace {

TEST_CASE("a fifo waiter turned away by clear() while paused is refused when clear() decides",
          "[sweep][fifo]") {
  // c0 holds k0 for 100 ms; c1 queues behind it at 10 and is paused from 20 for 200 ms; c2 calls
  // clear() at 30; c3 asks at 150, after c0 is done. c1 learns of its refusal only at 220, but
  // the lock refused it at 30: c3's grant overtakes nobody.
  SwarmSpec spec;
  spec.family = LockFamily::keyed_fifo;
  spec.safety_ms = 400;
  spec.heal_clients = 0;
  spec.clients = {
      SwarmClient{.steps = {SwarmStep{.hold_ms = 100}}},
      SwarmClient{.start_ms = 10, .steps = {SwarmStep{.hold_ms = 1}}},
      SwarmClient{.start_ms = 30, .steps = {SwarmStep{.clear = true}}},
      SwarmClient{.start_ms = 150, .steps = {SwarmStep{.hold_ms = 1}}},
  };
  spec.faults = {
      SwarmFault{.kind = FaultKind::pause, .at_ms = 20, .duration_ms = 200, .client = 1}};
  const SeedOutcome o = run_swarm_spec("fifo", spec, 1, true);
  CHECK(o.report.violations.empty());
  bool refused_at_clear = false;
  for (const HistoryEvent& e : o.report.history.events()) {
    refused_at_clear |= e.kind == EventKind::complete && e.client == 1 && e.op == Op::acquire &&
                        e.outcome == Outcome::error && e.time_us < 40'000;
  }
  CHECK(refused_at_clear);
  // The known-bad fifo whose clear() drops the holder lets c3 in beside c0 when it asks early.
  spec.clients[3].start_ms = 40;
  register_known_bad_adapters();
  CHECK(run_swarm_spec("bad-fifo-clear-admits", spec, 1, true)
            .untolerated.count(Invariant::mutual_exclusion) == 1);
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

nlohmann::json without_wall_times(nlohmann::json j) {
  j["stats"].erase("wall_time_us");
  for (auto& cx : j["counterexamples"]) cx.erase("shrink_wall_time_us");
  return j;
}

TEST_CASE("a sweep on two workers gives what one process gives, to the first counterexample",
          "[sweep][jobs]") {
  register_known_bad_adapters();
  const auto dir = fresh_dir("jobs");
  for (const bool keep_going : {false, true}) {
    SweepConfig config{.adapter = "bad-del-release",
                       .seeds = 300,
                       .keep_going = keep_going,
                       .report_dir = dir.string()};
    const SweepResult one = run_sweep(config);
    config.jobs = 2;
    const SweepResult two = run_sweep(config);
    REQUIRE_FALSE(one.ok());  // there is a counterexample to agree on
    CHECK(without_wall_times(to_json(one)) == without_wall_times(to_json(two)));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

// The JSON a command prints, wall-time fields removed (they are the only ones --jobs may change).
nlohmann::json json_without_wall_times(const CommandResult& r) {
  nlohmann::json j = nlohmann::json::parse(r.out);
  if (j.contains("adapters")) {
    for (auto& row : j["adapters"]) {
      row.erase("wall_time_us");
      row.erase("median_time_to_first_us");
    }
  }
  return j;
}

TEST_CASE("matrix and calibrate print on two workers what they print on one", "[jobs][cli]") {
  const std::string matrix =
      "matrix --adapter memory --adapter redis --adapter bad-del-release --scenario stolen-lock "
      "--scenario gc-pause --scenario slow-acquire --seeds 2 --fencing both --json --jobs ";
  const CommandResult matrix_one = lockstep_cli(matrix + "1");
  const CommandResult matrix_two = lockstep_cli(matrix + "2");
  INFO(matrix_one.err << matrix_two.err);
  CHECK(matrix_one.exit_code == matrix_two.exit_code);
  REQUIRE(nlohmann::json::parse(matrix_one.out).at("cells").size() >= 10);
  CHECK(matrix_one.out == matrix_two.out);  // nothing in a matrix's JSON is a wall time

  const std::string calibrate =
      "calibrate --adapter bad-del-release --adapter bad-pexpire-extend --adapter "
      "bad-setnx-expire --seeds 40 --no-time-target --json --jobs ";
  const CommandResult calibrate_one = lockstep_cli(calibrate + "1");
  const CommandResult calibrate_two = lockstep_cli(calibrate + "3");
  INFO(calibrate_one.err << calibrate_two.err);
  CHECK(calibrate_one.exit_code == calibrate_two.exit_code);
  const nlohmann::json one = json_without_wall_times(calibrate_one);
  REQUIRE(one.at("adapters").size() == 3);
  CHECK(one.at("adapters")[0].contains("first_counterexample"));  // a shrink to agree on
  CHECK(one == json_without_wall_times(calibrate_two));
}

TEST_CASE("a seed run without its trace hash is the same run", "[sweep][trace]") {
  register_known_bad_adapters();
  for (const char* adapter : {"redis", "redlock", "mongo", "bad-del-release"}) {
    const SweepConfig config{.adapter = adapter};
    const SwarmCapabilities caps = swarm_capabilities(adapter);
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      const SeedOutcome hashed = run_sweep_seed(config, caps, seed, true);
      const SeedOutcome counted = run_sweep_seed(config, caps, seed, false);
      INFO(adapter << " seed " << seed);
      CHECK(hashed.report.trace_hash.size() == 16);
      CHECK(counted.report.trace_hash.empty());
      CHECK(counted.report.stats.events == hashed.report.stats.events);
      CHECK(counted.report.history.size() == hashed.report.history.size());
      CHECK(counted.report.end == hashed.report.end);
      CHECK(counted.untolerated == hashed.untolerated);
      CHECK(counted.tolerated == hashed.tolerated);
      CHECK(counted.excused_by == hashed.excused_by);
    }
  }
}

TEST_CASE("sweep, matrix and calibrate bound their worker count alike", "[jobs][cli]") {
  for (const std::string command :
       {"sweep --adapter memory --seeds 1", "matrix --scenario sequential --adapter memory",
        "calibrate --adapter bad-del-release --seeds 1"}) {
    const CommandResult zero = lockstep_cli(command + " --jobs 0");
    CHECK(zero.exit_code == 2);
    CHECK(zero.err.find("[1, 256]") != std::string::npos);
    CHECK(lockstep_cli(command + " --jobs 257").exit_code == 2);
  }
}

}  // namespace
// A replica set's failover is the fault its w:majority (Mongo) or Raft (etcd) claim rests on: the
// sweep strikes it in most seeds, the run's liveness bound allows the election it takes, and the
// production locks hold. A backend without a primary to lose refuses the kind (exit 2).
TEST_CASE("a replica set's lost primary is swept: failovers in most seeds, and the locks hold",
          "[sweep][failover]") {
  for (const std::string adapter : {"mongo", "etcd", "etcd-lock"}) {
    const SweepConfig config{.adapter = adapter,
                             .seeds = 200,
                             .faults = {FaultKind::failover},
                             .faults_named = true,
                             .keep_going = true};
    const SweepResult result = run_sweep(config);
    INFO(adapter);
    CHECK(result.violating_seeds == 0);
    CHECK(result.enough_exercised());
    const auto inside = result.faults.find("inside");
    REQUIRE(inside != result.faults.end());
    const auto failovers = inside->second.find("failover");
    REQUIRE(failovers != inside->second.end());
    CHECK(failovers->second > config.seeds / 2);
  }
  CHECK_THROWS_WITH(
      run_sweep(SweepConfig{
          .adapter = "memory", .seeds = 1, .faults = {FaultKind::failover}, .faults_named = true}),
      Catch::Contains("cannot be struck by it in the simulator"));
}

}  // namespace lockstep
