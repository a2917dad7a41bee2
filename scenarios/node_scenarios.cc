// Redlock's own faults: a node's clock jumps forward (Kleppmann), a node that granted a lock
// crashes and restarts empty (antirez's remedy: restart no sooner than the max TTL, or fsync
// always), and a split vote that every client must clean up.
#include <algorithm>

#include <fmt/format.h>

#include "scenarios/catalogue.h"

namespace lockstep {

namespace {

// A takes the lock on nodes 0..2 only (cut off from 3 and 4); B, cut off from 0 and 1, can reach
// 2, 3, 4. Node 2 is the shared one whose fault lets B in.
constexpr int kNodes = 5;  // every scenario here is written for five nodes (--set nodes=5)

// A and B, with A reaching nodes 0-2 only and B nodes 2-4 only: node 2 is their only common one.
ScenarioSpec a_and_b_cut() {
  ScenarioSpec spec;
  spec.servers_required = kNodes;
  const int a = spec.add_client("a");
  const int b = spec.add_client("b");
  for (int i = 3; i < kNodes; ++i) spec.cut(a, i, /*two_way=*/true);
  for (int i = 0; i < 2; ++i) spec.cut(b, i, /*two_way=*/true);
  return spec;
}

// A acquires at 0 and works for hold_ms; B tries from b_start_ms, retrying.
void a_holds_b_tries(ScenarioSpec& spec, const Options& o, int64_t b_start_ms) {
  const int64_t ttl_ms = o.get_int("ttl_ms");
  spec.start(0, 0, take_work_release_steps(ttl_ms, o.get_int("hold_ms"), std::nullopt),
             kStartJitterUs);
  spec.start(1, b_start_ms, take_work_release_steps(ttl_ms, 100, retry_from(o)), kStartJitterUs);
}

}  // namespace

Scenario clock_jump_scenario() {
  return {
      .name = "clock-jump",
      .description =
          "Redlock, 5 nodes: A locks 3 of them; one of those jumps its clock forward past the TTL; "
          "B "
          "locks that node and the 2 others: two majorities at once (Kleppmann)",
      .options = {int_option("ttl_ms", 5000, "lock TTL", 1),
                  int_option("hold_ms", 2000, "A's work inside the lock"),
                  int_option("jump_at_ms", 200, "when node 2's clock jumps"),
                  int_option("jump_ms", 10'000, "how far node 2's clock jumps forward", 0),
                  retry_delay_option(50, "delay between B's attempts"),
                  retry_times_option(40, "B's retries after the first attempt")},
      .fits = on_independent_nodes,
      .fits_text = "a lock over N independent nodes, a quorum of whose grants makes it (Redlock)",
      .expected =
          [](const AdapterTraits& lock, const Options& options, bool) {
            if (options.get_int("jump_ms") < options.get_int("ttl_ms")) {
              // Without the jump only N/2 grants let B in (on nodes 3 and 4): exclusion, not two
              // majorities.
              if (lock.majority_quorum) return Expectation{};
              // B is told it holds a lock only 2 of 5 nodes granted (valid_on_return).
              return Expectation{Invariant::mutual_exclusion, Invariant::no_lost_update,
                                 Invariant::valid_on_return};
            }
            Expectation e{Invariant::mutual_exclusion, Invariant::lease_exclusion};
            e.insert(Invariant::no_lost_update);  // Redlock has no token to refuse A's late write
            return e;
          },
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t jump_at_ms = o.get_int("jump_at_ms");
            const int64_t jump_ms = o.get_int("jump_ms");
            ScenarioSpec spec = a_and_b_cut();
            spec.strike({.action = SpecAction::jump_server_clock,
                         .at_us = jump_at_ms * 1000,
                         .server = 2,
                         .amount = jump_ms * 1000,
                         .tag = {.kind = FaultKind::server_clock_jump,
                                 .server = "redis-2",
                                 .amount = jump_ms * 1000},
                         .what = fmt::format("node redis-2's clock jumps {}ms forward", jump_ms)});
            a_holds_b_tries(spec, o, jump_at_ms + 100);
            return spec;
          },
  };
}

Scenario crash_restart_scenario() {
  return {
      .name = "crash-restart",
      .description =
          "Redlock: a node that granted A's lock crashes and restarts; restarted at once and empty "
          "(persistence none or everysec), it lets B win a majority while A holds; restarted after "
          "the "
          "max TTL (restart_delay_ms), or with persistence always, it is safe",
      .options = {int_option("ttl_ms", 5000, "lock TTL (the max TTL in this scenario)", 1),
                  int_option("hold_ms", 2000, "A's work inside the lock"),
                  int_option("crash_at_ms", 200, "when node 2 crashes"),
                  int_option("restart_delay_ms", 0, "how long node 2 stays down"),
                  {.name = "persistence",
                   .default_value = "none",
                   .help = "every node's persistence across a crash",
                   .choices = {"none", "everysec", "always"}},
                  retry_delay_option(50, "delay between B's attempts"),
                  retry_times_option(40, "B's retries after the first attempt")},
      .fits = on_independent_nodes,
      .fits_text = "a lock over N independent nodes, a quorum of whose grants makes it (Redlock)",
      .expected =
          [](const AdapterTraits&, const Options& options, bool) {
            // everysec loses A's grant too: the crash comes well within the fsync period after it.
            const bool loses_grant = options.get("persistence") != "always";
            const bool back_in_time =
                options.get_int("restart_delay_ms") < options.get_int("ttl_ms");
            if (!loses_grant || !back_in_time) return Expectation{};
            return Expectation{Invariant::mutual_exclusion, Invariant::lease_exclusion,
                               Invariant::no_lost_update};
          },
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t crash_at_ms = o.get_int("crash_at_ms");
            const int64_t delay_ms = o.get_int("restart_delay_ms");
            ScenarioSpec spec = a_and_b_cut();
            spec.strike(
                {.action = SpecAction::crash_server,
                 .at_us = crash_at_ms * 1000,
                 .server = 2,
                 .duration_us = delay_ms * 1000,
                 .tag = {.kind = FaultKind::server_crash, .server = "redis-2"},
                 .what = fmt::format("node redis-2 crashes, restarts after {}ms", delay_ms)});
            spec.strike({.action = SpecAction::restart_server,
                         .at_us = (crash_at_ms + delay_ms) * 1000,
                         .server = 2,
                         .tag = {.kind = FaultKind::server_restart,
                                 .server = "redis-2",
                                 .amount = delay_ms * 1000},
                         .what = "node redis-2 restarts"});
            a_holds_b_tries(spec, o, crash_at_ms + delay_ms + 50);
            return spec;
          },
  };
}

}  // namespace lockstep

namespace lockstep {

Scenario split_vote_scenario() {
  return {
      .name = "split-vote",
      .description =
          "Redlock: three clients reach only a minority of nodes each ({0,1}, {2,3}, {4}) until "
          "the "
          "partitions heal; every first attempt fails and must be cleaned up, then each gets in "
          "(liveness); locks left on a minority block everyone until their TTL",
      .options = {int_option("ttl_ms", 3000, "lock TTL", 1),
                  int_option("hold_ms", 100, "work inside the lock"),
                  int_option("heal_at_ms", 100, "when the partitions heal"), retry_delay_option(50),
                  int_option("retry_jitter_ms", 50, "random extra delay", 0),
                  retry_times_option(200)},
      .fits = on_independent_nodes,
      .fits_text = "a lock over N independent nodes, a quorum of whose grants makes it (Redlock)",
      .expected =
          [](const AdapterTraits& lock, const Options&, bool) {
            // N/2 grants count as a majority: {0,1} and {2,3} both win at once.
            if (!lock.majority_quorum) {
              // Each is told it holds a lock fewer than a majority granted (valid_on_return).
              return Expectation{Invariant::mutual_exclusion, Invariant::no_lost_update,
                                 Invariant::valid_on_return};
            }
            if (!lock.releases_partial_grants) return Expectation{Invariant::liveness};
            return Expectation{};
          },
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t hold_ms = o.get_int("hold_ms");
            const int64_t heal_at_ms = o.get_int("heal_at_ms");
            const RetrySettings retry{.retry_delay_ms = o.get_int("retry_delay_ms"),
                                      .retry_times = static_cast<int>(o.get_int("retry_times")),
                                      .retry_jitter_ms = o.get_int("retry_jitter_ms")};
            ScenarioSpec spec;
            spec.servers_required = kNodes;
            const std::vector<std::vector<int>> reach = {{0, 1}, {2, 3}, {4}};
            for (size_t i = 0; i < reach.size(); ++i) {
              const int c = spec.add_client(std::string(1, static_cast<char>('a' + i)));
              for (int server = 0; server < kNodes; ++server) {
                if (std::find(reach[i].begin(), reach[i].end(), server) == reach[i].end())
                  spec.cut(c, server, /*two_way=*/true);
              }
              spec.start(c, 0, take_work_release_steps(o.get_int("ttl_ms"), hold_ms, retry),
                         kStartJitterUs);
            }
            // The cuts above are the partition: recorded from 0 until the heal.
            spec.strike({.action = SpecAction::none,
                         .duration_us = heal_at_ms * 1000,
                         .tag = {.kind = FaultKind::partition},
                         .what = "clients a, b, c each cut off from all but a minority of nodes"});
            spec.strike(heal_fault(heal_at_ms, "heal every partition"));
            // After the heal, three holds one after the other, with retry gaps: far less than a
            // TTL.
            const int64_t round_ms =
                hold_ms + o.get_int("retry_delay_ms") + o.get_int("retry_jitter_ms") + 60;
            spec.liveness_bound_us = 4 * round_ms * 1000;
            return spec;
          },
  };
}

}  // namespace lockstep
