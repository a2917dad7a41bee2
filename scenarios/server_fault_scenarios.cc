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

// A starts at 0 with its one attempt to acquire and then a_steps; its request is on the wire 50 us
// later (the network's minimum latency is larger): stop A for pause_ms, so its grant comes back
// that late. B comes after A's lease would have run out, and takes the key.
ScenarioSpec pause_acquire_then_b(const Options& o, std::vector<SpecStep> a_steps) {
  const int64_t ttl_ms = o.get_int("ttl_ms");
  const int64_t pause_ms = o.get_int("pause_ms");
  ScenarioSpec spec;
  spec.needs_sim = "pausing a client from outside while its reply is on the wire";
  const int a = spec.add_client("a");
  a_steps.insert(a_steps.begin(),
                 acquire_step(ttl_ms));  // one attempt: a late grant must not count
  spec.start(a, 0, std::move(a_steps));
  spec.strike(
      pause_client_fault(a, 50, pause_ms * 1000,
                         fmt::format("pause a for {}ms with its acquire in flight", pause_ms)));
  spec.start(spec.add_client("b"), ttl_ms + 100,
             take_work_release_steps(ttl_ms, o.get_int("hold_ms"), retry_from(o)), kStartJitterUs);
  return spec;
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
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            return pause_acquire_then_b(
                o, {step(StepKind::increment, o.get_int("a_hold_ms")), step(StepKind::release)});
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
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            // Careful: reads, works while the lock is valid, writes only if it still is.
            return pause_acquire_then_b(o,
                                        {step(StepKind::careful_increment, o.get_int("a_hold_ms")),
                                         step(StepKind::release)});
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
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t ttl_ms = o.get_int("ttl_ms");
            const int64_t hold_ms = o.get_int("hold_ms");
            const int64_t drift_ppm = o.get_int("drift_ppm");
            ScenarioSpec spec;
            // Set before anything runs, so a backend that cannot make its servers drift refuses
            // at once; the fault at 0 records it in the history (setting the same drift again is
            // a no-op). It never heals: recorded as lasting past both clients' work (A's hold,
            // B's tries and hold), so it touches every lease of the run.
            spec.server_drift_ppm = drift_ppm;
            spec.strike({.action = SpecAction::server_drift,
                         .amount = drift_ppm,
                         .duration_us = (hold_ms + 3 * ttl_ms) * 1000,
                         .tag = {.kind = FaultKind::server_drift, .amount = drift_ppm},
                         .what = fmt::format("server clock drift {:+}ppm", drift_ppm)});
            spec.start(spec.add_client("a"), 1,
                       take_work_release_steps(ttl_ms, hold_ms, retry_from(o)), kStartJitterUs);
            // B keeps trying from just before the server would expire A's lease.
            const int64_t server_ttl_ms = ttl_ms * 1'000'000 / (1'000'000 + drift_ppm);
            spec.start(spec.add_client("b"), std::max<int64_t>(2, server_ttl_ms - 50),
                       take_work_release_steps(ttl_ms, 100, retry_from(o)), kStartJitterUs);
            return spec;
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
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t ttl_ms = o.get_int("ttl_ms");
            const int64_t jump_at_ms = o.get_int("jump_at_ms");
            const int64_t jump_us = o.get_int("jump_ms") * 1000;
            ScenarioSpec spec;
            spec.start(spec.add_client("a"), 1,
                       take_work_release_steps(ttl_ms, o.get_int("hold_ms"), retry_from(o)),
                       kStartJitterUs);
            spec.strike({.action = SpecAction::jump_server_clocks,
                         .at_us = jump_at_ms * 1000,
                         .amount = jump_us,
                         .tag = {.kind = FaultKind::server_clock_jump, .amount = jump_us},
                         .what = fmt::format("every server's wall clock jumps {}ms forward",
                                             o.get_int("jump_ms"))});
            // B keeps trying from just after the jump.
            spec.start(spec.add_client("b"), jump_at_ms + 10,
                       take_work_release_steps(ttl_ms, 100, retry_from(o)), kStartJitterUs);
            return spec;
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
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind world) {
            const int64_t ttl_ms = o.get_int("ttl_ms");
            const int64_t failover_at_ms = o.get_int("failover_at_ms");
            ScenarioSpec spec;
            const int a = spec.add_client("a");
            const int b = spec.add_client("b");
            spec.start(a, 0, take_work_release_steps(ttl_ms, o.get_int("hold_ms"), retry_from(o)),
                       kStartJitterUs);
            // The premise: A holds when the primary dies. In the simulator the failover is timed
            // from A's grant (a w:majority acquire alone takes three replication delays), and B
            // comes after it. Real threads cannot be started once the run is under way: a fixed
            // timeline there, the failover at failover_at_ms of true time (a real Redis grants in
            // well under it).
            const bool from_grant = world == WorldKind::sim;
            spec.strike({.action = SpecAction::failover,
                         .at_us = failover_at_ms * 1000,
                         .what = "failover: the primary crashes, a replica takes over"});
            if (from_grant) spec.anchor_last(a, 0);
            spec.start(b, failover_at_ms + 100, take_work_release_steps(ttl_ms, 100, retry_from(o)),
                       kStartJitterUs);
            if (from_grant) spec.anchor_last(a, 0);
            return spec;
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
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t ttl_ms = o.get_int("ttl_ms");
            const int64_t at_ms = o.get_int("partition_at_ms");
            const int64_t length_ms = o.get_int("partition_ms");
            const bool two_way = o.get("direction") == "two-way";
            ScenarioSpec spec;
            const int a = spec.add_client("a");
            // A's release falls inside the partition; after the heal it must get in (liveness).
            // A refused first acquire goes on to the second.
            std::vector<SpecStep> steps =
                take_work_release_steps(ttl_ms, o.get_int("hold_ms"), retry_from(o));
            steps.front().end_if_refused = false;
            steps.push_back(step(StepKind::sleep_until_whole_ms, at_ms + length_ms + 100));
            spec.start(a, 0, joined(steps, take_work_release_steps(ttl_ms, 50, retry_from(o))),
                       kStartJitterUs);
            spec.strike(partition_fault(
                a, at_ms, length_ms, two_way,
                fmt::format("partition a {} server for {}ms", two_way ? "<->" : "<-", length_ms)));
            spec.strike(heal_fault(at_ms + length_ms, "heal partition"));
            spec.start(spec.add_client("b"), ttl_ms + 100,
                       take_work_release_steps(ttl_ms, 100, retry_from(o)), kStartJitterUs);
            spec.liveness_bound_us = 4 * o.get_int("retry_delay_ms") * 1000 + ttl_ms * 1000;
            return spec;
          },
  };
}

}  // namespace lockstep
