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
      .build =
          [](ScenarioEnv& env) {
            const int64_t ttl_ms = env.option("ttl_ms");
            const int64_t pause_ms = env.option("pause_ms");
            env.require_sim("pausing a client from outside between the calls of its release");
            env.backend().set_fixed_latency(kFixedLatency_us);
            const int64_t release_at_ms = ttl_ms - ttl_ms / 5;
            Client& a = env.add_client("a");
            env.start(a, 0, [ttl_ms, release_at_ms](Client& c) {
              // A starts at true time 0 with a true clock: its release begins exactly at
              // release_at_ms.
              const int64_t started_us = c.clock().monotonic_us();
              std::optional<Lock> lock = c.acquire("resource", ttl_ms);
              if (!lock) return;
              c.increment(*lock, 0);
              c.clock().sleep_for_us(started_us + release_at_ms * 1000 - c.clock().monotonic_us());
              c.release(*lock);
            });
            // A's release request reaches the server 0.5 ms after it is sent and its reply is back
            // 0.5 ms later: stop A while that first reply is on its way. (A one-script release is
            // already done by then, or retries the same atomic script after NOSCRIPT.)
            const int64_t pause_at_us = release_at_ms * 1000 + 3 * kFixedLatency_us / 2;
            env.schedule_fault_us(
                pause_at_us,
                {.kind = FaultKind::pause, .client = a.id(), .amount = pause_ms * 1000},
                fmt::format("pause a for {}ms mid-release", pause_ms),
                [&env, &a, pause_ms] { env.world().pause(a.node(), pause_ms * 1000); },
                pause_ms * 1000);
            auto retry = RetrySettings{.retry_delay_ms = 20, .retry_times = 100};
            env.start(env.add_client("b"), ttl_ms + 10, [ttl_ms, pause_ms, retry](Client& c) {
              std::optional<Lock> lock =
                  c.acquire("resource", ttl_ms + pause_ms + kLeaseSlackMs, retry);
              if (!lock) return;
              c.increment(*lock, pause_ms + 100);  // still working when A's pause ends
              c.release(*lock);
            });
            env.start(env.add_client("c"), release_at_ms + pause_ms + 50, [ttl_ms](Client& c) {
              std::optional<Lock> lock = c.acquire("resource", ttl_ms);  // must find B's lock
              if (!lock) return;
              c.increment(*lock, 0);
              c.release(*lock);
            });
          },
  };
}

}  // namespace lockstep
