#pragma once
// Shrinking a run of a catalogue scenario: the smallest values of its numbers that still break
// what the run broke.
//
// A named scenario is code (scenarios/), not a generated workload: it has no list of operations
// and faults to drop one by one, and its faults are its premise. What shrinks are its numbers (a
// TTL, a pause, a cut's length, when a fault strikes): each integer option of the scenario, in the
// order it declares them, is searched down towards its lower bound (the bound first, then a
// binary search between the largest value that did not break it and the smallest that did),
// keeping a value where the run, with the same adapter, seed and fencing, still completes with its
// premise met (a vacuous run shows nothing) and breaks the invariant the original broke first. A
// search assumes a larger number breaks no less: where that is not so, it finds a boundary, not the
// least value. Bounded by runs_max runs; a value that makes the scenario refuse the run (two
// options that must agree) counts as not breaking it.
//
// The result's config carries every option it moved as a KEY=VALUE set, so its report replays with
// `replay` and its command line reruns with `run`. Simulator only.
#include <string>
#include <vector>

#include "run/runner.h"

namespace lockstep {

struct NamedShrinkResult {
  RunReport report;                  // the run at the values found (the original's when none moved)
  std::vector<std::string> changes;  // "NAME FROM -> TO", per option moved
  int runs = 0;                      // runs tried
};

// Throws UsageError for a run outside the simulator: asked before the run, so none is wasted.
void check_shrinkable_world(const RunConfig& config);
// Why a run has nothing to shrink ("": it completed and broke an invariant).
std::string nothing_to_shrink(const RunReport& report);

// original: a run of config in the simulator with something to shrink (the two checks above).
NamedShrinkResult shrink_named_run(const RunConfig& config, const RunReport& original,
                                   int runs_max = 300);

}  // namespace lockstep
