#pragma once
// A known-bad adapter is a correct one (its sibling) with one thing wrong, and that one thing is a
// trait (include/lockstep/adapter_traits.h): its expected breakage follows from the declaration, the way a
// correct lock's safety does. Each service declares its own (services/NAME/known_bad); the
// `lockstep` command registers them (services/known_bad.h), outside the production registry.
#include <string>
#include <vector>

#include "base/check.h"
#include "harness/backend.h"

namespace lockstep {

struct KnownBad {
  std::string name;
  std::string breaks;  // the invariant the sweep is expected to find broken
  // The share of a sweep's seeds that must catch it on `breaks`, in (0, 1]: a floor below the rate
  // its design allows (what a seed must draw for the bug to show), with a margin no seed range
  // crosses (docs/DESIGN.md, "Known-bad adapters"), so `calibrate` guards against a regression.
  double catch_share_min = 0;
  std::string description;
  void (*wrong)(AdapterTraits& traits) = nullptr;  // the one thing it gets wrong, as a trait
  // The scenarios whose matrix cells judge it (empty: every one its traits fit).
  std::vector<std::string> judged_in;
};

// The registry entry of `bad`: its sibling's traits with the one thing wrong, the sibling's options
// and their checks, the simulator only, built by make_sim.
inline AdapterEntry known_bad_entry(const KnownBad& bad, const AdapterEntry& sibling,
                                    BackendFactory make_sim) {
  LOCKSTEP_CHECK(bad.catch_share_min > 0 && bad.catch_share_min <= 1,
                 "a known-bad declares the share of seeds that must catch it, in (0, 1]");
  AdapterTraits traits = sibling.traits;
  if (bad.wrong != nullptr) bad.wrong(traits);
  return {.name = bad.name,
          .description = bad.description,
          .worlds = {WorldKind::sim},
          .traits = traits,
          .known_bad = true,
          .breaks = bad.breaks,
          .catch_share_min = bad.catch_share_min,
          .judged_in = bad.judged_in,
          .sibling = sibling.name,
          .options = sibling.options,
          .check_options = sibling.check_options,
          .refine = sibling.refine,
          .make_sim = std::move(make_sim)};
}

}  // namespace lockstep
