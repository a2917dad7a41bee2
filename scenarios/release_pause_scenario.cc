// pause-in-release: the holder is stopped in the middle of its release, between the network calls
// of a release that takes two (GET, then DEL). A single compare-and-delete script has no "middle".
#include <fmt/format.h>

#include "scenarios/catalogue.h"

namespace lockstep {

namespace {

constexpr int64_t kFixedLatency_us =
    500;  // one way: makes "the middle of the release" a known instant

}  // namespace

Scenario pause_in_release_scenario() {
  return {
      .name = "pause-in-release",
      .description =
          "A releases just before its lease ends and is paused between the calls of its release; B "
          "takes the expired lock and C arrives later: a two-step release deletes B's lock",
      .options = {{.name = "ttl_ms",
                   .default_value = "500",
                   .help = "lock TTL",
                   .min = 10,
                   .max = kHalfLeaseMaxMs},
                  {.name = "pause_ms",
                   .default_value = "300",
                   .help = "A's pause mid-release",
                   .min = 0,
                   .max = kWorkInLeaseMaxMs}},
      .fits = on_one_server,
      .fits_text = "a lease lock on one server",
      .worlds = {WorldKind::sim},
      .expected =
          [](const AdapterTraits& lock, const Options&, bool fencing_on) {
            if (lock.release != OwnerCheck::check_then_act) return Expectation{};
            Expectation e{Invariant::ownership, Invariant::mutual_exclusion};
            if (!fencing_on) e.insert(Invariant::no_lost_update);
            return e;
          },
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t ttl_ms = o.get_int("ttl_ms");
            const int64_t pause_ms = o.get_int("pause_ms");
            ScenarioSpec spec;
            spec.needs_sim = "pausing a client from outside between the calls of its release";
            spec.fixed_latency_us = kFixedLatency_us;
            const int64_t release_at_ms = ttl_ms - ttl_ms / 5;
            // A starts at true time 0 with a true clock: its release begins exactly at
            // release_at_ms.
            const int a = spec.add_client("a");
            spec.start(a, 0,
                       {acquire_step(ttl_ms), step(StepKind::increment, 0),
                        step(StepKind::sleep_until, release_at_ms), step(StepKind::release)});
            // A's release request reaches the server 0.5 ms after it is sent and its reply is back
            // 0.5 ms later: stop A while that first reply is on its way. (A one-script release is
            // already done by then, or retries the same atomic script after NOSCRIPT.)
            spec.strike(pause_client_fault(a, release_at_ms * 1000 + 3 * kFixedLatency_us / 2,
                                           pause_ms * 1000,
                                           fmt::format("pause a for {}ms mid-release", pause_ms)));
            // B is still working when A's pause ends; C must find B's lock.
            spec.start(
                spec.add_client("b"), ttl_ms + 10,
                take_work_release_steps(ttl_ms + pause_ms + kLeaseSlackMs, pause_ms + 100,
                                        RetrySettings{.retry_delay_ms = 20, .retry_times = 100}));
            spec.start(spec.add_client("c"), release_at_ms + pause_ms + 50,
                       take_work_release_steps(ttl_ms, 0, std::nullopt));
            return spec;
          },
  };
}

}  // namespace lockstep
