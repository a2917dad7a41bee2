#pragma once
// The scenarios of the in-process keyed locks (keyed_scenarios.cc); catalogue.cc lists them.
// They are written in the keyed steps of a scenario spec (harness/keyed_calls.h) and apply only to
// keyed adapters.
#include "harness/scenario.h"

namespace lockstep {

// writer-starvation: keyed-rw; a new reader every 70 ms (each holds 100), a writer arrives at 10:
// with writer preference the writer gets in at 100 (when the first reader leaves).
Scenario writer_starvation_scenario();
// fifo-queue: fifo; callers of one key queue in arrival order, one times out, clear() rejects a
// waiter while a holder runs, another key runs in parallel.
Scenario fifo_queue_scenario();

}  // namespace lockstep
