#include "scenarios/keyed_scenarios.h"

#include <fmt/format.h>

#include "scenarios/catalogue.h"

namespace lockstep {

Scenario writer_starvation_scenario() {
  return {
      .name = "writer-starvation",
      .description =
          "keyed-rw: a new reader every 70 (each holds 100), a writer arrives at 10: with writer "
          "preference the writer gets in at 100; a lock that lets readers pass a queued writer "
          "starves it",
      .options = {int_option("reader_every_ms", 70, "gap between readers", 1),
                  int_option("hold_ms", 100, "how long each reader and the writer hold", 1),
                  int_option("writer_at_ms", 10, "when the writer asks"),
                  int_option("readers", 8, "how many readers arrive", 1, 64)},
      .fits = is_keyed_rw,
      .fits_text = "an in-process keyed shared/exclusive lock",
      .expected =
          [](const AdapterTraits& lock, const Options& options, bool) {
            const int64_t every_ms = options.get_int("reader_every_ms");
            const int64_t hold_ms = options.get_int("hold_ms");
            Expectation expected;
            // Readers overlap only if a new one comes before the last leaves.
            if (!lock.writers_first && every_ms < hold_ms)
              expected = {Invariant::writer_preference, Invariant::liveness};
            // A writer that arrives while a reader holds queues; the last reader out must wake
            // it. (Start jitters are far below the margin of a whole millisecond either side.)
            if (!lock.wakes_waiters) {
              const int64_t writer_at_ms = options.get_int("writer_at_ms");
              for (int64_t i = 0; i < options.get_int("readers"); ++i) {
                if (i * every_ms < writer_at_ms - 1 && writer_at_ms + 1 < i * every_ms + hold_ms)
                  expected.insert(Invariant::liveness);
              }
            }
            return expected;
          },
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t every_ms = o.get_int("reader_every_ms");
            const int64_t hold_ms = o.get_int("hold_ms");
            ScenarioSpec spec;
            for (int64_t i = 0; i < o.get_int("readers"); ++i) {
              spec.start(spec.add_client(fmt::format("reader{}", i)), i * every_ms,
                         {{.kind = StepKind::rw_hold, .ms = hold_ms, .shared = true}},
                         kStartJitterUs);
            }
            spec.start(spec.add_client("writer"), o.get_int("writer_at_ms"),
                       {{.kind = StepKind::rw_hold, .ms = hold_ms}}, kStartJitterUs);
            // The writer waits for at most the readers already inside; a reader for at most one
            // reader and the writer. A starved writer waits for every reader.
            spec.liveness_bound_us = (2 * hold_ms + 1) * 1000;
            return spec;
          },
  };
}

Scenario fifo_queue_scenario() {
  return {
      .name = "fifo-queue",
      .description =
          "fifo: callers of one key queue in arrival order; one gives up (max wait) without "
          "disturbing "
          "the holder or the others; clear() rejects a waiter while a holder runs and a caller "
          "after "
          "clear() still waits for that holder; another key runs in parallel",
      .options = {int_option("hold_ms", 100, "how long each caller holds", 1),
                  int_option("max_wait_ms", 50, "the impatient caller's max wait"),
                  int_option("clear_at_ms", 260, "when clear() is called")},
      .fits = is_keyed_fifo,
      .fits_text = "an in-process FIFO keyed lock",
      .expected =
          [](const AdapterTraits& lock, const Options& options, bool) {
            // Callers of "order" arrive every 10 (the impatient one gives up) and hold it back to
            // back until 3 holds have passed. A clear() that drops the holder in that span lets
            // the next caller (the one 10 after it at the latest) run beside it.
            const int64_t hold_ms = options.get_int("hold_ms");
            const int64_t clear_at_ms = options.get_int("clear_at_ms");
            const bool held_throughout = hold_ms >= 11;  // no gap between the first callers
            if (lock.clear_keeps_exclusion || !held_throughout || clear_at_ms < 1 ||
                clear_at_ms + 11 >= 3 * hold_ms) {
              return Expectation{};
            }
            return Expectation{Invariant::mutual_exclusion};
          },
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t hold_ms = o.get_int("hold_ms");
            const int64_t clear_at_ms = o.get_int("clear_at_ms");
            auto hold = [hold_ms](std::string key, std::optional<int64_t> max_wait_ms = {}) {
              return std::vector<SpecStep>{{.kind = StepKind::fifo_hold,
                                            .key = std::move(key),
                                            .ms = hold_ms,
                                            .max_wait_ms = max_wait_ms}};
            };
            ScenarioSpec spec;
            spec.start(spec.add_client("a"), 0, hold("order"), kStartJitterUs);
            spec.start(spec.add_client("b"), 10, hold("order"), kStartJitterUs);
            spec.start(spec.add_client("impatient"), 20, hold("order", o.get_int("max_wait_ms")),
                       kStartJitterUs);
            spec.start(spec.add_client("d"), 30, hold("order"), kStartJitterUs);
            spec.start(spec.add_client("other-key"), 40, hold("other"), kStartJitterUs);
            spec.start(spec.add_client("cleared"), 2 * hold_ms + 50, hold("order"), kStartJitterUs);
            spec.start(spec.add_client("after-clear"), clear_at_ms + 10, hold("order"),
                       kStartJitterUs);
            spec.strike({.action = SpecAction::fifo_clear,
                         .at_us = clear_at_ms * 1000,
                         .what = "fifo clear()"});
            return spec;
          },
  };
}

}  // namespace lockstep
