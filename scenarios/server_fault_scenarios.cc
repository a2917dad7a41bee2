// Scenarios whose fault hits the server or the path to it: slow replies, a fast server clock,
// failover with asynchronous replication, and network partitions.
#include <algorithm>

#include <fmt/format.h>

#include "scenarios/catalogue.h"

namespace lockstep {

namespace {

// What a ttl_minus_elapsed_and_drift validity takes off for drift, as Redlock defines it: its
// default drift_factor (0.001 of the TTL) and drift_constant_ms (5),
// and a millisecond of rounding.
int64_t validity_drift_ms(int64_t ttl_ms) { return ttl_ms / 1000 + 6; }

// Validity rules that take the time spent acquiring off the TTL (once, or wrongly twice).
bool subtracts_elapsed(const AdapterTraits& lock) {
  return lock.validity == ValidityRule::ttl_minus_elapsed_and_drift ||
         lock.validity == ValidityRule::ttl_minus_elapsed_twice;
}

// A grant that came back elapsed_ms after it was sent is reported valid until a moment already
// past: only when the time spent is subtracted twice, and it exceeds what is left.
bool returns_expired(const AdapterTraits& lock, int64_t ttl_ms, int64_t elapsed_ms) {
  return lock.validity == ValidityRule::ttl_minus_elapsed_twice &&
         ttl_ms - validity_drift_ms(ttl_ms) - elapsed_ms < elapsed_ms;
}

// A lock that ignores the time spent acquiring reports a validity that outlasts the servers'
// leases by that time; a holder still relying on it past the lease's end (ttl_ms from the grant,
// which came at the start) breaks validity_within_lease.
bool outlasts_lease(const AdapterTraits& lock, int64_t ttl_ms, int64_t relied_until_ms) {
  return lock.validity == ValidityRule::ttl_ignoring_elapsed && relied_until_ms > ttl_ms;
}

// A's grant comes back pause_ms after it was sent. Every adapter refuses one older than its TTL
// (Lock::acquire); Redlock also subtracts the drift allowance, unless it ignores the time spent
// (bad-redlock-no-elapsed). If A accepts and then works past B's start (ttl + 100, when A's lease
// has run out), both are inside.
Expectation slow_acquire_expected(const AdapterTraits& lock, const Options& options,
                                  bool fencing_on) {
  const int64_t ttl_ms = options.get_int("ttl_ms");
  const int64_t pause_ms = options.get_int("pause_ms");
  const int64_t a_hold_ms = options.get_int("a_hold_ms");
  const int64_t drift_ms = subtracts_elapsed(lock) ? validity_drift_ms(ttl_ms) : 0;
  const bool accepts = pause_ms + drift_ms < ttl_ms;
  Expectation e;
  if (accepts && returns_expired(lock, ttl_ms, pause_ms)) e.insert(Invariant::valid_on_return);
  if (accepts && outlasts_lease(lock, ttl_ms, pause_ms + a_hold_ms))
    e.insert(Invariant::validity_within_lease);
  if (!accepts || a_hold_ms == 0 || pause_ms + a_hold_ms <= ttl_ms + 100) return e;
  e.merge(overlap_expectation(lock, fencing_on));  // without tokens nothing refuses A's write
  return e;
}

// What a lease lost early (the servers ended A's lease while A still works) breaks, for clock-drift
// and server-clock-jump alike.
Expectation lost_lease(const AdapterTraits& lock, bool fencing_on) {
  Expectation e{Invariant::mutual_exclusion, Invariant::lease_exclusion};
  // Fencing refuses A's late write only with monotonic tokens; Redlock has none.
  if (!fencing_on || lock.tokens != TokenKind::monotonic) e.insert(Invariant::no_lost_update);
  // A's late release then deletes B's lock unless the release checks the owner.
  if (lock.release == OwnerCheck::none) e.insert(Invariant::ownership);
  return e;
}

// A's acquire request is on the wire 50 us after it starts (the network's minimum latency is
// larger): stop A for pause_ms, so its grant comes back that late. B comes after A's lease would
// have run out, and takes the key.
void pause_acquire_then_b(ScenarioEnv& env, Client& a, int64_t a_start_us, int64_t pause_ms,
                          int64_t ttl_ms, int64_t hold_ms) {
  env.schedule_fault_us(
      a_start_us + 50, {.kind = FaultKind::pause, .client = a.id(), .amount = pause_ms * 1000},
      fmt::format("pause a for {}ms with its acquire in flight", pause_ms),
      [&env, &a, pause_ms] { env.world().pause(a.node(), pause_ms * 1000); }, pause_ms * 1000);
  env.start(
      env.add_client("b"), ttl_ms + 100,
      [&env, ttl_ms, hold_ms](Client& c) { take_work_release(c, env, ttl_ms, hold_ms); }, 200);
}

}  // namespace

Scenario slow_acquire_scenario() {
  return {
      .name = "slow-acquire",
      .description =
          "A's acquire reply arrives after a pause longer than the TTL: the acquire must fail and "
          "never "
          "return an expired lock; B then takes the key",
      .options = {int_option("ttl_ms", 500, "lock TTL", 1),
                  int_option("pause_ms", 800, "A's pause while its reply is in flight"),
                  int_option("hold_ms", 100, "B's work inside the lock"),
                  int_option("a_hold_ms", 0,
                             "A's work inside the lock, if it accepts its late grant"),
                  retry_delay_option(50), retry_times_option(40)},
      .fits = is_networked_lease,
      .fits_text = "a lease lock whose servers are across a network",
      .worlds = {WorldKind::sim},
      .expected = slow_acquire_expected,
      .build =
          [](ScenarioEnv& env) {
            const int64_t ttl_ms = env.option("ttl_ms");
            const int64_t pause_ms = env.option("pause_ms");
            const int64_t hold_ms = env.option("hold_ms");
            env.require_sim("pausing a client from outside while its reply is on the wire");
            Client& a = env.add_client("a");
            const int64_t a_hold_ms = env.option("a_hold_ms");
            const int64_t a_start_us = env.start(a, 0, [ttl_ms, a_hold_ms](Client& c) {
              std::optional<Lock> lock =
                  c.acquire("resource", ttl_ms);  // one attempt: the late grant must not count
              if (!lock) return;
              c.increment(*lock, a_hold_ms);
              c.release(*lock);
            });
            pause_acquire_then_b(env, a, a_start_us, pause_ms, ttl_ms, hold_ms);
          },
  };
}

Scenario slow_grant_scenario() {
  return {
      .name = "slow-grant",
      .description =
          "A's acquire reply arrives after most of the TTL (a pause of 300 of 500): a valid but "
          "short lease. A, a careful holder, works only while the lock says it is valid; B "
          "arrives after A's lease has run out on the servers. Validity that ignores the time "
          "spent keeps A working beside B; subtracting it twice returns a lock already over",
      .options = {int_option("ttl_ms", 500, "lock TTL", 1),
                  int_option("pause_ms", 300, "A's pause while its reply is in flight"),
                  int_option("a_hold_ms", 400, "A's work, as long as its lock stays valid"),
                  int_option("hold_ms", 100, "B's work inside the lock"), retry_delay_option(50),
                  retry_times_option(40)},
      .fits = is_networked_lease,
      .fits_text = "a lease lock whose servers are across a network",
      .worlds = {WorldKind::sim},
      .expected =
          [](const AdapterTraits& lock, const Options& options, bool fencing_on) {
            const int64_t ttl_ms = options.get_int("ttl_ms");
            const int64_t pause_ms = options.get_int("pause_ms");
            const int64_t drift_ms = subtracts_elapsed(lock) ? validity_drift_ms(ttl_ms) : 0;
            Expectation e;
            if (pause_ms + drift_ms >= ttl_ms) return e;  // refused: nothing to judge but B
            if (returns_expired(lock, ttl_ms, pause_ms)) e.insert(Invariant::valid_on_return);
            // Ignoring the time spent, A believes in its lease until pause + ttl - drift, and
            // works into B's (from ttl + 100); with no token to refuse A's late write.
            const int64_t believed_end_ms = lock.validity == ValidityRule::ttl_ignoring_elapsed
                                                ? pause_ms + ttl_ms - validity_drift_ms(ttl_ms)
                                                : 0;
            const int64_t a_works_until_ms =
                std::min(believed_end_ms, pause_ms + options.get_int("a_hold_ms"));
            if (outlasts_lease(lock, ttl_ms, a_works_until_ms))
              e.insert(Invariant::validity_within_lease);
            if (a_works_until_ms > ttl_ms + 100) {
              e.merge(overlap_expectation(lock, fencing_on));
            }
            return e;
          },
      .build =
          [](ScenarioEnv& env) {
            const int64_t ttl_ms = env.option("ttl_ms");
            const int64_t pause_ms = env.option("pause_ms");
            const int64_t hold_ms = env.option("hold_ms");
            const int64_t a_hold_ms = env.option("a_hold_ms");
            env.require_sim("pausing a client from outside while its reply is on the wire");
            Client& a = env.add_client("a");
            const int64_t a_start_us = env.start(a, 0, [ttl_ms, a_hold_ms](Client& c) {
              std::optional<Lock> lock = c.acquire("resource", ttl_ms);  // one attempt
              if (!lock) return;
              // Careful: reads, works while the lock is valid, writes only if it still is.
              const std::optional<int64_t> value = c.read(*lock);
              const int64_t left_us = c.validity_end_us(*lock) - c.clock().monotonic_us();
              if (left_us > 1) c.clock().sleep_for_us(std::min(a_hold_ms * 1000, left_us - 1));
              if (value && c.clock().monotonic_us() < c.validity_end_us(*lock))
                c.write(*lock, *value + 1);
              c.leave(*lock);
              c.release(*lock);
            });
            pause_acquire_then_b(env, a, a_start_us, pause_ms, ttl_ms, hold_ms);
          },
  };
}

Scenario clock_drift_scenario() {
  return {
      .name = "clock-drift",
      .description =
          "the server's clock runs 25% fast: A's lease ends early by the server's clock while A "
          "still "
          "believes it holds; B gets the key inside A's promised lease",
      .options = {int_option("ttl_ms", 1000, "lock TTL", 1),
                  int_option("drift_ppm", 250'000, "server clock drift", 0, 900'000),
                  int_option("hold_ms", 900, "A's work inside the lock"), retry_delay_option(20),
                  retry_times_option(100)},
      .fits = has_drifting_servers,
      .fits_text = "a lease lock whose server clocks can drift",
      .expected =
          [](const AdapterTraits& lock, const Options& options, bool fencing_on) {
            // The server expires the key at ttl / (1 + drift): is A still working then?
            const int64_t ttl_ms = options.get_int("ttl_ms");
            const int64_t server_ttl_ms =
                ttl_ms * 1'000'000 / (1'000'000 + options.get_int("drift_ppm"));
            // A lease that lasts with its session has no expiry for a clock to hasten.
            // Nor has one whose deadline the clients compare.
            if (options.get_int("hold_ms") <= server_ttl_ms || !expires_by_server_clock(lock))
              return Expectation{};
            return lost_lease(lock, fencing_on);
          },
      .build =
          [](ScenarioEnv& env) {
            const int64_t ttl_ms = env.option("ttl_ms");
            const int64_t hold_ms = env.option("hold_ms");
            const int64_t drift_ppm = env.option("drift_ppm");
            // Set now, so a backend that cannot make its servers drift refuses before anything
            // runs; the fault at 0 records it in the history (setting the same drift again is a
            // no-op).
            env.backend().set_server_drift(drift_ppm);
            // It never heals: recorded as lasting past both clients' work (A's hold, B's tries
            // and hold), so it touches every lease of the run.
            const int64_t drifting_ms = hold_ms + 3 * ttl_ms;
            env.schedule_fault(
                0, {.kind = FaultKind::server_drift, .amount = drift_ppm},
                fmt::format("server clock drift {:+}ppm", drift_ppm),
                [&env, drift_ppm] { env.backend().set_server_drift(drift_ppm); }, drifting_ms);
            env.start(
                env.add_client("a"), 1,
                [&env, ttl_ms, hold_ms](Client& c) { take_work_release(c, env, ttl_ms, hold_ms); },
                200);
            // B keeps trying from just before the server would expire A's lease.
            const int64_t server_ttl_ms = ttl_ms * 1'000'000 / (1'000'000 + drift_ppm);
            env.start(
                env.add_client("b"), std::max<int64_t>(2, server_ttl_ms - 50),
                [&env, ttl_ms](Client& c) { take_work_release(c, env, ttl_ms, 100); }, 200);
          },
  };
}

Scenario server_clock_jump_scenario() {
  return {
      .name = "server-clock-jump",
      .description =
          "every server's wall clock jumps forward past A's TTL while A holds (an NTP step): a "
          "server that expires leases by its wall clock ends A's lease at once and lets B in; one "
          "that times them on a monotonic clock keeps it",
      .options = {int_option("ttl_ms", 1000, "lock TTL", 1),
                  int_option("hold_ms", 900, "A's work inside the lock"),
                  int_option("jump_at_ms", 300, "when the servers' clocks jump"),
                  int_option("jump_ms", 2000, "how far they jump forward", 1, kTtlMaxMs),
                  retry_delay_option(20), retry_times_option(100)},
      .fits = has_jumping_servers,
      .fits_text = "a lease lock whose servers' wall clocks can jump",
      .worlds = {WorldKind::sim},
      .expected =
          [](const AdapterTraits& lock, const Options& options, bool fencing_on) {
            // A jump while A holds, past what is left of its lease, with A still working after it.
            const bool lease_cut = options.get_int("jump_at_ms") < options.get_int("hold_ms") &&
                                   options.get_int("jump_at_ms") + options.get_int("jump_ms") >=
                                       options.get_int("ttl_ms");
            if (lock.server_expiry == ExpiryClock::monotonic || !expires_by_server_clock(lock) ||
                !lease_cut)
              return Expectation{};
            return lost_lease(lock, fencing_on);
          },
      .build =
          [](ScenarioEnv& env) {
            const int64_t ttl_ms = env.option("ttl_ms");
            const int64_t hold_ms = env.option("hold_ms");
            const int64_t jump_at_ms = env.option("jump_at_ms");
            const int64_t jump_ms = env.option("jump_ms");
            env.start(
                env.add_client("a"), 1,
                [&env, ttl_ms, hold_ms](Client& c) { take_work_release(c, env, ttl_ms, hold_ms); },
                200);
            env.schedule_fault(jump_at_ms,
                               {.kind = FaultKind::server_clock_jump, .amount = jump_ms * 1000},
                               fmt::format("every server's wall clock jumps {}ms forward", jump_ms),
                               [&env, jump_ms] {
                                 for (int s = 0; s < env.backend().server_count(); ++s)
                                   env.backend().jump_server_clock(s, jump_ms * 1000);
                               });
            // B keeps trying from just after the jump.
            env.start(
                env.add_client("b"), jump_at_ms + 10,
                [&env, ttl_ms](Client& c) { take_work_release(c, env, ttl_ms, 100); }, 200);
          },
  };
}

Scenario failover_scenario() {
  return {
      .name = "failover",
      .description =
          "A locks on a primary whose replica has not received it; the primary dies and the "
          "replica is "
          "promoted (Mongo: elected); B acquires on it while A still works: asynchronous "
          "replication (Mongo "
          "w:1) loses the lock and reissues A's fencing token; Mongo w:majority is safe",
      .options = {int_option("ttl_ms", 5000, "lock TTL", 1),
                  int_option("hold_ms", 1000, "A's work inside the lock"),
                  int_option(
                      "failover_at_ms", 100,
                      "how long after A's grant the primary dies and the replica takes over"),
                  retry_delay_option(50), retry_times_option(40),
                  int_option("replicas", 1, "asynchronous replicas", 1, 1),
                  int_option("replication_delay_ms", 1000, "replica lag"),
                  int_option(
                      "command_timeout_ms", 10000,
                      "client command timeout (Mongo: a w:majority write waits up to its wtimeout "
                      "for the replication delay)",
                      1, 60'000),
                  int_option("election_timeout_ms", 500,
                             "Mongo: how long the secondaries wait before electing "
                             "a new primary (mongod's default is 10000)",
                             50, 600'000)},
      .fits = can_fail_over,
      .fits_text = "a lease lock whose primary can fail over",
      .expected =
          [](const AdapterTraits& lock, const Options& options, bool) {
            if (options.get_int("replication_delay_ms") < options.get_int("failover_at_ms"))
              return Expectation{};
            if (lock.servers == ServerLayout::replica_set) {
              // A majority write concern acknowledges only what the next primary has (the
              // envelope says a failover keeps every grant); w:1 loses A's lock if the election
              // is over while A still works.
              if (lock.envelope.failover) return Expectation{};
              const int64_t elected_by_ms =
                  options.get_int("failover_at_ms") + options.get_int("election_timeout_ms");
              if (elected_by_ms >= options.get_int("hold_ms")) return Expectation{};
            }
            Expectation e{Invariant::mutual_exclusion, Invariant::no_lost_update};
            // A lease with an expiry is owed until then and the promoted replica grants it again;
            // one that lasts with its session ended with the primary's sessions (the server says
            // so), so only A, who works on without asking, overlaps B.
            if (expires(lock)) e.insert(Invariant::lease_exclusion);
            // ... and since the server says the session's lease ended, the validity A was told
            // outlived it while A relied on it.
            if (lasts_with_session(lock)) e.insert(Invariant::validity_within_lease);
            // The replica reissues token 1 to B: the tokens repeat, so fencing cannot refuse A's
            // write either. A lock without tokens has none to repeat.
            if (lock.tokens == TokenKind::monotonic) e.insert(Invariant::fencing);
            return e;
          },
      .build =
          [](ScenarioEnv& env) {
            const int64_t ttl_ms = env.option("ttl_ms");
            const int64_t hold_ms = env.option("hold_ms");
            const int64_t failover_at_ms = env.option("failover_at_ms");
            Client& a = env.add_client("a");
            Client& b = env.add_client("b");
            const std::string what = "failover: the primary crashes, a replica takes over";
            if (env.sim() == nullptr) {
              // Real threads cannot be started once the run is under way: a fixed timeline, the
              // failover at failover_at_ms of true time (a real Redis grants in well under it).
              env.start(
                  a, 0,
                  [&env, ttl_ms, hold_ms](Client& c) {
                    take_work_release(c, env, ttl_ms, hold_ms);
                  },
                  200);
              env.schedule_failover_us(failover_at_ms * 1000, what);
              env.start(
                  b, failover_at_ms + 100,
                  [&env, ttl_ms](Client& c) { take_work_release(c, env, ttl_ms, 100); }, 200);
              return;
            }
            // The premise: A holds when the primary dies. In the simulator the failover is timed
            // from A's grant (a w:majority acquire alone takes three replication delays), and B
            // comes after it.
            env.start(
                a, 0,
                [&env, &b, ttl_ms, hold_ms, failover_at_ms, what](Client& c) {
                  std::optional<Lock> lock = c.acquire("resource", ttl_ms, retry_from(env));
                  if (!lock) return;
                  const int64_t failover_us = env.world().now_us() + failover_at_ms * 1000;
                  env.schedule_failover_us(failover_us, what);
                  env.start(
                      b, failover_us / 1000 + 100,
                      [&env, ttl_ms](Client& other) { take_work_release(other, env, ttl_ms, 100); },
                      200);
                  c.increment(*lock, hold_ms);
                  c.release(*lock);
                },
                200);
          },
  };
}

Scenario partition_scenario() {
  return {
      .name = "partition",
      .description =
          "the holder is cut off from the server, its lease expires, B proceeds, the partition "
          "heals: "
          "no double grant, A's release fails cleanly, and A acquires again after the heal "
          "(liveness)",
      .options = {int_option("ttl_ms", 500, "lock TTL", 1),
                  int_option("hold_ms", 300, "A's work inside the lock"),
                  int_option("partition_at_ms", 100, "when A is cut off"),
                  int_option("partition_ms", 1000, "how long the partition lasts"),
                  {.name = "direction",
                   .default_value = "two-way",
                   .help = "two-way, or one-way (replies to A lost)",
                   .choices = {"two-way", "one-way"}},
                  retry_delay_option(50),
                  retry_times_option(40)},
      .fits = is_networked_lease,
      .fits_text = "a lease lock whose servers are across a network",
      .expected = [](const AdapterTraits&, const Options&, bool) { return Expectation{}; },
      .build =
          [](ScenarioEnv& env) {
            const int64_t ttl_ms = env.option("ttl_ms");
            const int64_t hold_ms = env.option("hold_ms");
            const int64_t at_ms = env.option("partition_at_ms");
            const int64_t length_ms = env.option("partition_ms");
            const bool two_way = env.options().get("direction") == "two-way";
            Client& a = env.add_client("a");
            env.start(
                a, 0,
                [&env, ttl_ms, hold_ms, at_ms, length_ms](Client& c) {
                  const int64_t started_ms =
                      c.clock().monotonic_us() / 1000;  // A's clock runs true here
                  take_work_release(c, env, ttl_ms,
                                    hold_ms);  // its release falls inside the partition
                  c.sleep_ms(std::max<int64_t>(
                      0, started_ms + at_ms + length_ms + 100 - c.clock().monotonic_us() / 1000));
                  take_work_release(c, env, ttl_ms, 50);  // after the heal: must get in (liveness)
                },
                200);
            env.schedule_fault(
                at_ms, {.kind = FaultKind::partition, .client = a.id(), .amount = two_way ? 1 : 0},
                fmt::format("partition a {} server for {}ms", two_way ? "<->" : "<-", length_ms),
                [&env, &a, two_way] { env.backend().partition(a.node(), two_way); }, length_ms);
            env.schedule_fault(at_ms + length_ms, {}, "heal partition",
                               [&env] { env.backend().heal(); });
            env.start(
                env.add_client("b"), ttl_ms + 100,
                [&env, ttl_ms](Client& c) { take_work_release(c, env, ttl_ms, 100); }, 200);
            env.meta().liveness_bound_us = 4 * env.option("retry_delay_ms") * 1000 + ttl_ms * 1000;
          },
  };
}

}  // namespace lockstep
