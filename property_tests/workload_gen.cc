#include "property_tests/workload_gen.h"

namespace lockstep {

namespace {

rc::Gen<WorkloadStep> gen_step(int keys, int64_t ttl_ms, bool long_pauses) {
  const int64_t hold_max_ms = ttl_ms / 2;
  return rc::gen::mapcat(rc::gen::inRange<int64_t>(0, hold_max_ms + 1), [=](int64_t hold_ms) {
    // Without long pauses, hold + pause < ttl: the lease outlives every critical section.
    const int64_t pause_max_ms = long_pauses ? 3 * ttl_ms : ttl_ms - 1 - hold_ms;
    return rc::gen::apply(
        [hold_ms](int key, int64_t gap_ms, int64_t pause_ms, bool paused, bool walk_away) {
          return WorkloadStep{.key = key,
                              .gap_ms = gap_ms,
                              .hold_ms = hold_ms,
                              .pause_ms = paused ? pause_ms : 0,
                              .release = !walk_away};
        },
        rc::gen::inRange(0, keys), rc::gen::inRange<int64_t>(0, 500),
        rc::gen::inRange<int64_t>(0, pause_max_ms + 1),
        rc::gen::weightedElement<bool>({{3, false}, {1, true}}),
        rc::gen::weightedElement<bool>({{9, false}, {1, true}}));
  });
}

}  // namespace

rc::Gen<WorkloadSpec> gen_workload(WorkloadGenOptions options) {
  auto gen_plan = [options](int keys, int64_t ttl_ms) {
    return rc::gen::mapcat(rc::gen::inRange(1, options.steps_max + 1), [=](int steps) {
      return rc::gen::container<std::vector<WorkloadStep>>(
          steps, gen_step(keys, ttl_ms, options.long_pauses));
    });
  };
  auto spec = rc::gen::mapcat(
      rc::gen::tuple(rc::gen::inRange(1, options.keys_max + 1),
                     rc::gen::inRange<int64_t>(100, 2001), rc::gen::inRange<int64_t>(10, 201),
                     rc::gen::inRange(0, 31), rc::gen::inRange(1, options.clients_max + 1)),
      [gen_plan](const std::tuple<int, int64_t, int64_t, int, int>& shape) {
        const auto [keys, ttl_ms, retry_delay_ms, retry_times, clients] = shape;
        return rc::gen::map(rc::gen::container<std::vector<std::vector<WorkloadStep>>>(
                                clients, gen_plan(keys, ttl_ms)),
                            [=](std::vector<std::vector<WorkloadStep>> plans) {
                              return WorkloadSpec{.keys = keys,
                                                  .ttl_ms = ttl_ms,
                                                  .retry_delay_ms = retry_delay_ms,
                                                  .retry_times = retry_times,
                                                  .clients = std::move(plans)};
                            });
      });
  // RapidCheck scales integer ranges by its size parameter, which would keep every pause far below
  // the TTL in most cases. Fault magnitudes must cover their whole range from the first case;
  // lengths are drawn explicitly above, and shrinking still moves every number to its minimum.
  return rc::gen::resize(rc::kNominalSize, spec);
}

void showValue(const WorkloadSpec& spec, std::ostream& os) { os << describe(spec); }

}  // namespace lockstep
