// node-pause: one Redlock node (a minority) stops (SIGSTOP in the real world) while two clients
// take the key one after the other. Redlock's promise is that a minority's failure costs nothing:
// neither client may wait for the stopped node, so the pause is recorded as an instant fault and
// liveness is judged during it.
#include <fmt/format.h>

#include "scenarios/catalogue.h"

namespace lockstep {

Scenario node_pause_scenario() {
  return {
      .name = "node-pause",
      .description =
          "Redlock, 5 nodes: node 2 stops (SIGSTOP) for pause_ms while A, then B, take the key: a "
          "stopped minority must cost neither a wait (liveness, judged during the pause) nor "
          "safety",
      .options = {int_option("ttl_ms", 2000, "lock TTL", 1),
                  int_option("hold_ms", 100, "work inside the lock"),
                  int_option("pause_ms", 3000, "how long node 2 stays stopped"),
                  retry_delay_option(50), retry_times_option(40)},
      .fits = on_independent_nodes,
      .fits_text = "a lock over N independent nodes, a quorum of whose grants makes it (Redlock)",
      .expected = [](const AdapterTraits&, const Options&, bool) { return Expectation{}; },
      .build =
          [](ScenarioEnv& env) {
            if (env.backend().server_count() != 5)
              throw WorldUnsupported("node-pause is written for 5 nodes (--set nodes=5)");
            const int64_t ttl_ms = env.option("ttl_ms");
            const int64_t hold_ms = env.option("hold_ms");
            const int64_t pause_ms = env.option("pause_ms");
            // Recorded without a duration on purpose: a stopped minority excuses no waiting.
            env.schedule_fault(
                50,
                {.kind = FaultKind::server_pause, .server = "redis-2", .amount = pause_ms * 1000},
                fmt::format("node redis-2 stops for {}ms", pause_ms),
                [&env, pause_ms] { env.backend().pause_server(2, pause_ms * 1000); });
            auto program = [&env, ttl_ms, hold_ms](Client& c) {
              take_work_release(c, env, ttl_ms, hold_ms);
            };
            env.start(env.add_client("a"), 100, program, kStartJitterUs);
            env.start(env.add_client("b"), 100 + 2 * hold_ms + 10, program, kStartJitterUs);
            env.meta().liveness_bound_us = (hold_ms + 2 * env.option("retry_delay_ms")) * 1000;
          },
  };
}

}  // namespace lockstep
