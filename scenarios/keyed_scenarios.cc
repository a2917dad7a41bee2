#include "scenarios/keyed_scenarios.h"

#include <fmt/format.h>

#include "scenarios/catalogue.h"
#include "services/keyed/backend/keyed_backend.h"

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
      .build =
          [](ScenarioEnv& env) {
            KeyedSteps& steps = keyed_backend(env.backend()).steps();
            const int64_t every_ms = env.option("reader_every_ms");
            const int64_t hold_ms = env.option("hold_ms");
            for (int64_t i = 0; i < env.option("readers"); ++i) {
              env.start(
                  env.add_client(fmt::format("reader{}", i)), i * every_ms,
                  [&steps, hold_ms](Client& c) {
                    steps.rw_hold(c, "resource", keyed::RwMode::shared, hold_ms);
                  },
                  kStartJitterUs);
            }
            env.start(
                env.add_client("writer"), env.option("writer_at_ms"),
                [&steps, hold_ms](Client& c) {
                  steps.rw_hold(c, "resource", keyed::RwMode::exclusive, hold_ms);
                },
                kStartJitterUs);
            // The writer waits for at most the readers already inside; a reader for at most one
            // reader and the writer. A starved writer waits for every reader.
            env.meta().liveness_bound_us = (2 * hold_ms + 1) * 1000;
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
      .build =
          [](ScenarioEnv& env) {
            KeyedSimBackend& backend = keyed_backend(env.backend());
            KeyedSteps& steps = backend.steps();
            const int64_t hold_ms = env.option("hold_ms");
            const int64_t max_wait_ms = env.option("max_wait_ms");
            auto caller = [&steps, hold_ms](std::string key, std::optional<int64_t> wait_max) {
              return [&steps, hold_ms, key = std::move(key), wait_max](Client& c) {
                steps.fifo_hold(c, key, hold_ms, wait_max);
              };
            };
            env.start(env.add_client("a"), 0, caller("order", {}), kStartJitterUs);
            env.start(env.add_client("b"), 10, caller("order", {}), kStartJitterUs);
            env.start(env.add_client("impatient"), 20, caller("order", max_wait_ms),
                      kStartJitterUs);
            env.start(env.add_client("d"), 30, caller("order", {}), kStartJitterUs);
            env.start(env.add_client("other-key"), 40, caller("other", {}), kStartJitterUs);
            env.start(env.add_client("cleared"), 2 * hold_ms + 50, caller("order", {}),
                      kStartJitterUs);
            env.start(env.add_client("after-clear"), env.option("clear_at_ms") + 10,
                      caller("order", {}), kStartJitterUs);
            env.schedule_fault(env.option("clear_at_ms"), {}, "fifo clear()",
                               [&backend] { backend.fifo()->clear(); });
          },
  };
}

}  // namespace lockstep
