#pragma once
// Shrinking a failing swarm spec: a bounded greedy loop over smaller candidates.
//
// shrink_candidates() lists specs that are each strictly smaller than the given one in a
// well-founded order (fewer clients, faults or steps; a number moved towards zero; a fault or
// an operation dropped), most aggressive first. shrink() takes the first candidate that still
// fails, restarts from it, and stops when no candidate fails, after runs_max runs or when told to
// stop, so it always terminates and returns a spec that failed (the input when nothing smaller does).
#include <cstdint>
#include <functional>
#include <vector>

#include "explore/swarm.h"

namespace lockstep {

std::vector<SwarmSpec> shrink_candidates(const SwarmSpec& spec);

struct ShrinkOptions {
  int runs_max = 1000;
  // Asked before each candidate: true ends the shrink there with the smallest failing spec so far
  // (a sweep's time budget or a signal, explore/stop.h). Empty: never.
  std::function<bool()> stop;
};

struct ShrinkResult {
  SwarmSpec spec;
  int runs = 0;            // candidates tried
  int steps = 0;           // candidates accepted
  bool cut_short = false;  // options.stop ended it before it was done
};

// still_fails(candidate) runs the candidate and says whether it violates what the original did.
ShrinkResult shrink(const SwarmSpec& failing,
                    const std::function<bool(const SwarmSpec&)>& still_fails,
                    const ShrinkOptions& options = {});

}  // namespace lockstep
