#pragma once
// A known-bad adapter is a correct one (its sibling) with one thing wrong, and that one thing is a
// trait (harness/adapter_traits.h): its expected breakage follows from the declaration, the way a
// correct lock's safety does. Each service declares its own (services/NAME/known_bad); the
// `lockstep` command registers them (services/known_bad.h), outside the production registry.
#include <string>
#include <vector>

#include "harness/backend.h"

namespace lockstep {

struct KnownBad {
  std::string name;
  std::string breaks;  // the invariant the sweep is expected to find broken
  std::string description;
  void (*wrong)(AdapterTraits& traits) = nullptr;  // the one thing it gets wrong, as a trait
  // The scenarios whose matrix cells judge it (empty: every one its traits fit).
  std::vector<std::string> judged_in;
};

// The registry entry of `bad`: its sibling's traits with the one thing wrong, the sibling's options
// and their checks, the simulator only, built by make_sim.
inline AdapterEntry known_bad_entry(const KnownBad& bad, const AdapterEntry& sibling,
                                    BackendFactory make_sim) {
  AdapterTraits traits = sibling.traits;
  if (bad.wrong != nullptr) bad.wrong(traits);
  return {.name = bad.name,
          .description = bad.description,
          .worlds = {WorldKind::sim},
          .traits = traits,
          .known_bad = true,
          .breaks = bad.breaks,
          .judged_in = bad.judged_in,
          .sibling = sibling.name,
          .options = sibling.options,
          .check_options = sibling.check_options,
          .refine = sibling.refine,
          .make_sim = std::move(make_sim)};
}

}  // namespace lockstep
