// lease-expires-while-queued: B asks for a key A holds for longer than B's TTL, so B's acquire
// waits (in the server's queue, or retrying) past the end of the lease it started with. An acquire
// that waits in a queue must check that its lease outlived the wait: etcd 3.4's Lock RPC did not,
// and answered a waiter whose lease had expired in the queue that it held the lock
// (etcd-io/etcd#11456, found by Jepsen's etcd 3.4 analysis).
#include "scenarios/catalogue.h"
#include "scenarios/premises.h"

namespace lockstep {

Scenario lease_expires_while_queued_scenario() {
  return {
      .name = "lease-expires-while-queued",
      .description =
          "A holds the key for 3 s (TTL 5 s); B asks for it at 200 ms with a 1 s TTL and waits its "
          "turn (in the server's queue, or retrying): B must never be told it holds a lock whose "
          "lease ended while it waited (etcd-io/etcd#11456)",
      .options = {int_option("a_ttl_ms", 5000, "A's lock TTL", 1, kHalfLeaseMaxMs),
                  int_option("a_hold_ms", 3000, "A's work inside the lock", 0, kWorkInLeaseMaxMs),
                  int_option("ttl_ms", 1000, "B's lock TTL (shorter than A's hold)", 1),
                  int_option("b_start_ms", 200, "when B asks"),
                  int_option("hold_ms", 100, "B's work inside the lock"), retry_delay_option(50),
                  retry_times_option(200)},
      .fits =
          [](const AdapterTraits& lock) {
            return is_lease(lock) && lock.queued_grant != QueuedGrant::none;
          },
      .fits_text = "a lease lock whose acquire waits its turn in a queue",
      .expected =
          [](const AdapterTraits& lock, const Options& options, bool) {
            Expectation e;
            // A waiter that trusts its turn is told it holds a lock whose lease ran out in the
            // queue: reported valid until a moment already past.
            if (lock.queued_grant == QueuedGrant::trusted &&
                options.get_int("a_hold_ms") >
                    options.get_int("ttl_ms") + options.get_int("b_start_ms"))
              e.insert(Invariant::valid_on_return);
            return e;
          },
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            ScenarioSpec spec;
            spec.start(spec.add_client("a"), 0,
                       take_work_release_steps(o.get_int("a_ttl_ms"), o.get_int("a_hold_ms"),
                                               std::nullopt));
            spec.start(
                spec.add_client("b"), o.get_int("b_start_ms"),
                take_work_release_steps(o.get_int("ttl_ms"), o.get_int("hold_ms"), retry_from(o)));
            return spec;
          },
      .premise = "B asks for the key while A holds it",
      .premise_held =
          [](const History& h, const Options&) {
            return premises::contended(h) && premises::entered(h, 0);
          },
  };
}

}  // namespace lockstep
