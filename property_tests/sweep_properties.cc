// The swarm generator under RapidCheck: one property per production TTL-lease adapter (fencing
// on: fencing, no_lost_update and ownership hold; exclusion breaks only where the drawn faults
// excuse it), and known-bad adapters that must fail it. A generated spec shrinks with the sweep's
// own shrink_candidates(), so RapidCheck prints the same small counterexample `lockstep sweep`
// would save. Keyed adapters are not TTL leases and are left to keyed_properties.cc.
#include <rapidcheck.h>
#include <rapidcheck/catch.h>
#include <catch2/catch.hpp>

#include "explore/shrink.h"
#include "explore/sweep.h"
#include "lockstep/registry.h"
#include "services/known_bad.h"

namespace lockstep {

void showValue(const SwarmSpec& spec, std::ostream& os) { os << describe(spec); }

namespace {

// Draws a sweep seed's spec (the generator `lockstep sweep` uses) and shrinks like the sweep.
rc::Gen<std::pair<uint64_t, SwarmSpec>> gen_swarm(const std::string& adapter) {
  const SwarmCapabilities caps = swarm_capabilities(adapter);
  return [caps](const rc::Random& random, int) {
    // The seed is drawn at full size: RapidCheck's size would otherwise keep it near zero.
    const uint64_t seed =
        rc::gen::inRange<uint64_t>(1, 1'000'000'000)(random, rc::kNominalSize).value();
    return rc::shrinkable::shrinkRecur(
        std::pair<uint64_t, SwarmSpec>{seed, draw_swarm_spec(caps, seed)},
        [](const std::pair<uint64_t, SwarmSpec>& value) {
          std::vector<std::pair<uint64_t, SwarmSpec>> smaller;
          for (SwarmSpec& s : shrink_candidates(value.second)) {
            smaller.emplace_back(value.first, std::move(s));
          }
          return rc::seq::fromContainer(std::move(smaller));
        });
  };
}

void safe_under_swarm(const std::string& adapter) {
  const auto [seed, spec] = *gen_swarm(adapter);
  const SeedOutcome o = run_swarm_spec(adapter, spec, seed, /*fencing_on=*/true);
  // A run whose premise never happened (no lock held while faults could strike) proves nothing
  // either way: it is discarded, not counted as a pass.
  RC_PRE(o.report.end != RunEnd::vacuous);
  RC_ASSERT(o.report.end == RunEnd::complete);
  RC_ASSERT(o.untolerated.empty());
  // Fencing on: these hold whatever the faults, unless a failover lost the counter itself.
  if (!spec.has_fault(FaultKind::failover)) {
    RC_ASSERT(o.report.violated().count(Invariant::ownership) == 0);
    RC_ASSERT(o.report.violated().count(Invariant::no_lost_update) == 0 ||
              !o.report.history.meta.monotonic_tokens);
  }
  RC_TAG(o.tolerated.count(Invariant::mutual_exclusion) ? "exclusion lost where excused"
                                                        : "exclusive");
}

}  // namespace

TEST_CASE("production lease adapters hold fencing, no_lost_update and ownership under swarm faults",
          "[property][sweep]") {
  register_known_bad_adapters();
  for (const AdapterEntry& entry : adapters()) {
    if (entry.known_bad ||
        std::find(entry.worlds.begin(), entry.worlds.end(), WorldKind::sim) == entry.worlds.end())
      continue;
    if (swarm_capabilities(entry.name).keyed()) continue;  // not TTL leases
    // Third parties' lock libraries (co-simulated through their drivers) are not lockstep's to
    // vouch for: what they do is what the matrix and sweeps report (ext:locco-memory's store, for
    // one, expires by Date.now(), whole milliseconds, so a lease may end up to 1 ms early).
    if (entry.third_party) continue;
    SECTION(entry.name) {
      rc::prop(entry.name + " under swarm faults", [name = entry.name] { safe_under_swarm(name); });
    }
  }
}

TEST_CASE("the swarm catches the known-bad release and extend adapters",
          "[property][sweep][known-bad]") {
  register_known_bad_adapters();
  for (const char* adapter : {"bad-memory-no-owner-check", "bad-del-release", "bad-random-token"}) {
    SECTION(adapter) {
      const bool held = rc::check(std::string("the swarm finds nothing wrong with ") + adapter,
                                  [name = std::string(adapter)] { safe_under_swarm(name); });
      CHECK_FALSE(held);
    }
  }
}

}  // namespace lockstep
