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
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t hold_ms = o.get_int("hold_ms");
            const int64_t pause_us = o.get_int("pause_ms") * 1000;
            ScenarioSpec spec;
            spec.servers_required = 5;
            // Recorded without a duration on purpose: a stopped minority excuses no waiting.
            spec.strike(
                {.action = SpecAction::pause_server,
                 .at_us = 50'000,
                 .server = 2,
                 .amount = pause_us,
                 .tag = {.kind = FaultKind::server_pause, .server = "redis-2", .amount = pause_us},
                 .what = fmt::format("node redis-2 stops for {}ms", o.get_int("pause_ms"))});
            const std::vector<SpecStep> steps =
                take_work_release_steps(o.get_int("ttl_ms"), hold_ms, retry_from(o));
            spec.start(spec.add_client("a"), 100, steps, kStartJitterUs);
            spec.start(spec.add_client("b"), 100 + 2 * hold_ms + 10, steps, kStartJitterUs);
            spec.liveness_bound_us = (hold_ms + 2 * o.get_int("retry_delay_ms")) * 1000;
            return spec;
          },
  };
}

}  // namespace lockstep
