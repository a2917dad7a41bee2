// lost-extension: an auto-extending holder is cut off from the servers just after an extension,
// so its next extension cannot succeed; another client takes the lock once the lease ends. The
// holder must learn of the loss (Lock::lost) no later than its validity ends, however long the
// failing extension takes to time out: node-redlock's using() and redis-semaphore's onLockLost
// signalled only when the extension failed, after the next owner was already inside.
//
// unanswered-renewal: the same cut, with renewals often enough that the doomed one times out
// while the validity still runs. A renewal whose reply never came may not have landed: the holder
// must go on by the validity its last answered renewal gave, not count the unanswered one (a
// client's own watchdog, LockAdapter::renews_itself, that does is my-whole-client-hopeful).
#include <string>
#include <utility>

#include <fmt/format.h>

#include "scenarios/catalogue.h"

namespace lockstep {

namespace {

constexpr int64_t kStepMs = 5;  // the holder asks lost() before each write, this often

// A auto-extends every `every_ms` and works on; just after its first extension it is cut off; B
// asks from just before A's validity ends.
Scenario cut_off_renewer(std::string name, std::string description, int64_t every_ms_default) {
  return {
      .name = std::move(name),
      .description = std::move(description),
      .options = {int_option("ttl_ms", 300, "lock TTL", 20, kHalfLeaseMaxMs),
                  int_option("every_ms", every_ms_default, "A's extension interval (below the TTL)",
                             1, kHalfLeaseMaxMs),
                  int_option("work_ms", 2000, "A's work, if nothing stops it"),
                  int_option("partition_ms", 3000, "how long A is cut off"),
                  int_option("hold_ms", 200, "B's work inside the lock")},
      // B gets the lock when A's lease expires: a lease that lasts with its session ends only when
      // the server gives up on A's connection.
      .fits =
          [](const AdapterTraits& lock) {
            return is_networked_lease(lock) && expires(lock) && lock.extends;
          },
      .fits_text =
          "a lease lock that expires, with an extend call, whose servers are across a "
          "network",
      .worlds = {WorldKind::sim},
      .expected =
          [](const AdapterTraits& lock, const Options&, bool fencing_on) {
            Expectation e;
            if (lock.validity != ValidityRule::until_extension_fails) return e;
            // Its validity lasts until an extension fails, which it learns only after the lease
            // ran out: A relies on it past the lease's end, and B gets in meanwhile.
            e.insert(Invariant::validity_within_lease);
            e.merge(overlap_expectation(lock, fencing_on));
            return e;
          },
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t ttl_ms = o.get_int("ttl_ms");
            const int64_t every_ms = o.get_int("every_ms");
            const int64_t partition_ms = o.get_int("partition_ms");
            const int64_t hold_ms = o.get_int("hold_ms");
            if (every_ms >= ttl_ms) {
              throw WorldUnsupported(
                  fmt::format("every_ms ({}) must be below ttl_ms ({})", every_ms, ttl_ms));
            }
            ScenarioSpec spec;
            spec.needs_sim = "a holder whose extensions run on a fiber its pauses and cuts reach";
            const int a = spec.add_client("a");
            // Its release fails while cut off: the lease is long gone.
            spec.start(a, 0,
                       {acquire_step(ttl_ms),
                        step(StepKind::auto_extend, every_ms),
                        {.kind = StepKind::work_until_lost,
                         .ms = o.get_int("work_ms"),
                         .step_ms = kStepMs},
                        step(StepKind::release)});
            // Cut off just after the first extension's round trip: the second one is doomed.
            const int64_t cut_at_ms = every_ms + every_ms / 10 + 5;
            spec.strike(
                partition_fault(a, cut_at_ms, partition_ms, /*two_way=*/true,
                                fmt::format("partition a <-> servers for {}ms", partition_ms)));
            spec.strike(heal_fault(cut_at_ms + partition_ms, "heal partition"));
            // B asks from just before A's validity ends, retrying every 5 ms.
            const RetrySettings retry{.retry_delay_ms = 5, .retry_times = 400};
            spec.start(spec.add_client("b"), every_ms + ttl_ms - 20,
                       take_work_release_steps(ttl_ms + hold_ms, hold_ms, retry));
            return spec;
          },
  };
}

}  // namespace

Scenario lost_extension_scenario() {
  return cut_off_renewer(
      "lost-extension",
      "A auto-extends (TTL 300, every 250) and works on in 5 ms steps; just after its first "
      "extension it is cut off, so the next one times out after the validity ended; B takes "
      "the lock once the lease ends: A must stop at its validity's end, not at the timeout",
      250);
}

Scenario unanswered_renewal_scenario() {
  return cut_off_renewer(
      "unanswered-renewal",
      "A auto-extends (TTL 300, every 100) and works on in 5 ms steps; just after its first "
      "extension it is cut off, so the next one goes unanswered while the validity still runs; B "
      "takes the lock once the lease ends: A must go by its last answered extension, not count "
      "the unanswered one",
      100);
}

}  // namespace lockstep
