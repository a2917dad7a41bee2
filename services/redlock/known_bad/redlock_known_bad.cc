#include "services/redlock/known_bad/redlock_known_bad.h"

#include "harness/known_bad.h"
#include "services/redlock/backend/redlock_backend.h"
#include "services/redlock/known_bad/known_bad_redlock.h"
#include "services/service.h"

namespace lockstep {

namespace {

const std::vector<std::string> kRedlockScenarios = {"clock-jump", "crash-restart", "split-vote",
                                                    "slow-acquire", "slow-grant"};

const std::vector<KnownBad> kKnownBadRedlock = {
    {"bad-redlock-half-quorum", "mutual_exclusion",
     // two clients must each win exactly N/2 nodes at once (a split vote, node faults).
     0.07, "known-bad: Redlock that counts N/2 grants as a majority",
     [](AdapterTraits& t) { t.majority_quorum = false; }, kRedlockScenarios},
    {"bad-redlock-no-elapsed", "validity_within_lease",
     // an acquire must outlast the drift allowance (a slow node's late answer, a pause), and the
     // holder work on to the validity it was told.
     0.5, "known-bad: Redlock whose validity ignores the time spent acquiring",
     [](AdapterTraits& t) { t.validity = ValidityRule::ttl_ignoring_elapsed; }, kRedlockScenarios},
    {"bad-redlock-double-elapsed", "valid_on_return",
     // an acquire must spend over half its validity, so subtracting it twice leaves none.
     0.01,
     "known-bad: Redlock that subtracts the time spent acquiring twice (returns expired locks)",
     [](AdapterTraits& t) { t.validity = ValidityRule::ttl_minus_elapsed_twice; },
     kRedlockScenarios},
    {"bad-redlock-no-cleanup", "liveness",
     // a failed attempt's partial grants must outlast the liveness bound: most expire first.
     0.001, "known-bad: Redlock that leaves partial locks after a failed attempt",
     [](AdapterTraits& t) { t.releases_partial_grants = false; }, kRedlockScenarios},
};

}  // namespace

std::vector<AdapterEntry> redlock_known_bad() {
  const AdapterEntry& redlock = production_adapter("redlock");
  std::vector<AdapterEntry> entries;
  for (const KnownBad& bad : kKnownBadRedlock) {
    entries.push_back(known_bad_entry(bad, redlock, [name = bad.name](BackendEnv& env) {
      return make_redlock_sim_backend(env, [name](RedlockAdapterParts& parts) {
        return make_known_bad_redlock_adapter(name, parts);
      });
    }));
  }
  return entries;
}

}  // namespace lockstep
