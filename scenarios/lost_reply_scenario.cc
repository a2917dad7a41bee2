// lost-reply: A's release reaches the server and is applied, but the reply never comes back (the
// path from the servers to A is cut). A write sent whole and not answered may have been applied:
// the lock must say "outcome unknown", never "failed" (an error says nothing took effect, and a
// caller that trusts it believes it still holds a lock that is gone, or that a lock it never got
// is free). The original bug: the Redis and Mongo adapters read a reset after the request as a
// backend error.
#include <fmt/format.h>

#include "scenarios/catalogue.h"

namespace lockstep {

Scenario lost_reply_scenario() {
  return {
      .name = "lost-reply",
      .description =
          "A takes and releases the lock, takes it again and works; replies to A are cut (one-way) "
          "before its release, which the "
          "servers apply but whose reply never comes: the release must end as an unknown "
          "outcome, not as an error that says nothing happened",
      .options = {int_option("ttl_ms", 2000, "lock TTL", 1),
                  int_option("hold_ms", 100, "A's work inside the lock"),
                  int_option("cut_at_ms", 50, "when replies to A are cut"),
                  int_option("cut_ms", 3000, "how long they stay cut")},
      // A whole library behind a driver promises nothing of its errors (and the npm ones over
      // ioredis have no command timeout: the reply cut off comes when the cut heals).
      .fits =
          [](const AdapterTraits& lock) {
            return is_networked_lease(lock) && lock.errors_mean_not_applied;
          },
      .fits_text =
          "a lease lock under lockstep's adapter contract whose servers are across a network",
      .worlds = {WorldKind::sim},
      .expected =
          [](const AdapterTraits& lock, const Options&, bool) {
            Expectation e;
            if (!lock.unknown_outcomes_reported) e.insert(Invariant::error_not_applied);
            return e;
          },
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t ttl_ms = o.get_int("ttl_ms");
            const int64_t cut_at_ms = o.get_int("cut_at_ms");
            const int64_t cut_ms = o.get_int("cut_ms");
            ScenarioSpec spec;
            spec.needs_sim = "a one-way cut that lets A's release through and loses its reply";
            const int a = spec.add_client("a");
            // A first round, so that the release is no first use (a Redis server that lacks a
            // script refuses before running anything). The second release is applied; its reply
            // is lost.
            SpecStep first = acquire_step(ttl_ms);
            first.end_if_refused = false;
            spec.start(a, 0,
                       joined({first, step(StepKind::release)},
                              take_work_release_steps(ttl_ms, o.get_int("hold_ms"), std::nullopt)));
            spec.strike(partition_fault(a, cut_at_ms, cut_ms, /*two_way=*/false,
                                        fmt::format("partition a <- servers for {}ms", cut_ms)));
            spec.strike(heal_fault(cut_at_ms + cut_ms, "heal partition"));
            return spec;
          },
  };
}

}  // namespace lockstep
