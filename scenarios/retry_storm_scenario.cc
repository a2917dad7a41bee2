// retry-storm: many clients want one key at once; jittered retries must make progress.
#include <fmt/format.h>

#include "scenarios/catalogue.h"

namespace lockstep {

Scenario retry_storm_scenario() {
  return {
      .name = "retry-storm",
      .description =
          "200 clients want one key at once, each holding it briefly: no violation, every client "
          "gets "
          "in, jittered retry makes progress (and random fencing tokens show up as out of order)",
      .options =
          {{.name = "clients", .default_value = "200", .help = "contenders", .min = 1, .max = 2000},
           {.name = "ttl_ms",
            .default_value = "1000",
            .help = "lock TTL",
            .min = 1,
            .max = kTtlMaxMs},
           {.name = "hold_ms",
            .default_value = "2",
            .help = "work inside the lock",
            .min = 0,
            .max = 60'000},
           {.name = "retry_delay_ms",
            .default_value = "20",
            .help = "delay between attempts",
            .min = 1,
            .max = 60'000},
           {.name = "retry_jitter_ms",
            .default_value = "20",
            .help = "random extra delay",
            .min = 0,
            .max = 60'000}},
      .fits = is_lease,
      .fits_text = "a lease lock",
      .expected =
          [](const AdapterTraits& lock, const Options&, bool) {
            // Random tokens claimed as fencing tokens: many grants make a decreasing pair certain.
            return lock.tokens == TokenKind::random ? Expectation{Invariant::fencing}
                                                    : Expectation{};
          },
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t clients = o.get_int("clients");
            const int64_t ttl_ms = o.get_int("ttl_ms");
            const int64_t hold_ms = o.get_int("hold_ms");
            const RetrySettings retry{.retry_delay_ms = o.get_int("retry_delay_ms"),
                                      .retry_times = 100'000,
                                      .retry_jitter_ms = o.get_int("retry_jitter_ms")};
            ScenarioSpec spec;
            const std::vector<SpecStep> steps = take_work_release_steps(ttl_ms, hold_ms, retry);
            for (int64_t i = 0; i < clients; ++i)
              spec.start(spec.add_client(fmt::format("s{}", i)), 0, steps, 1000);
            // Everyone gets in: the last one waits for all the others' holds and round trips.
            const int64_t round_us =
                (hold_ms + o.get_int("retry_delay_ms") + o.get_int("retry_jitter_ms")) * 1000;
            spec.liveness_bound_us = 2 * clients * round_us + ttl_ms * 1000;
            return spec;
          },
  };
}

}  // namespace lockstep
