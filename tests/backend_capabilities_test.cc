// Every registered adapter's declared family and simulator faults (AdapterEntry) against what its
// backend does: each fault is tried in a throwaway simulated run, and a declared fault must work
// while an undeclared one must be refused. The sweep trusts the declaration, so this is what keeps
// it from drawing a fault that silently does nothing, or never drawing one that works.
#include <algorithm>
#include <string>

#include <catch2/catch.hpp>

#include "harness/keyed_calls.h"
#include "lockstep/registry.h"
#include "real/server_errors.h"
#include "run/runner.h"
#include "services/ext/driver/node_drivers.h"
#include "services/known_bad.h"

namespace lockstep {
namespace {

template <class Fn>
bool works(Fn&& fault) {
  try {
    fault();
    return true;
  } catch (const WorldUnsupported&) {
    return false;
  }
}

// The ext adapters' simulated backends run real Node drivers (co-simulated): without node they
// cannot be probed here (services/ext/tests/ext_sim_test.cc says skipped for them).
bool node_drivers_present() {
  try {
    ext::require_node_drivers();
    return true;
  } catch (const real::ServerUnavailable&) {
    return false;
  }
}

constexpr TimeUs kFailoverProbeUs = 20'000'000;

struct Observed {
  LockFamily family = LockFamily::lease;
  FaultCapabilities faults;
};

Scenario probe(Observed* seen) {
  return {.name = "capability-probe",
          .description = "tries each fault on the adapter's simulated backend",
          .worlds = {WorldKind::sim},
          .expected = [](const AdapterTraits&, const Options&, bool) { return Expectation{}; },
          .build =
              [seen](ScenarioEnv& env) {
                Backend& backend = env.backend();
                if (KeyedCalls* keyed = backend.keyed()) {
                  seen->family = keyed->family();
                  return;
                }
                seen->faults.network = works([&] { backend.heal(); });
                seen->faults.server_clock = works([&] { backend.set_server_drift(0); });
                seen->faults.server_clock_jump = works([&] { backend.jump_server_clock(0, 0); });
                seen->faults.server_pause = works([&] { backend.pause_server(0, 1); });
                // Once the servers are up (a replica set elects its first primary within
                // seconds), and last, since it kills this run's primary.
                env.world().at(kFailoverProbeUs, [seen, &backend] {
                  seen->faults.failover = works([&] { backend.failover(); });
                });
                // Last of all, the last server: a crash and a restart.
                env.world().at(kFailoverProbeUs + 1'000'000, [seen, &backend] {
                  const int last = backend.server_count() - 1;
                  seen->faults.server_restart = works([&] {
                    backend.crash_server(last);
                    backend.restart_server(last);
                  });
                });
              }};
}

TEST_CASE("every adapter's declared simulator faults are what its backend does", "[capabilities]") {
  register_known_bad_adapters();
  int checked = 0;
  for (const AdapterEntry& entry : adapters()) {
    if (std::find(entry.worlds.begin(), entry.worlds.end(), WorldKind::sim) == entry.worlds.end())
      continue;
    if (entry.needs_user_option) {
      WARN("skipped " << entry.name << ": it runs only with a driver command of the user's");
      continue;
    }
    if (entry.name.starts_with("ext:") && !node_drivers_present()) {
      WARN("skipped " << entry.name
                      << ": its co-simulated driver needs node 20 and services/ext/node");
      continue;
    }
    Observed seen;
    const Scenario scenario = probe(&seen);
    RunConfig config{.adapter = entry.name, .keep_trace = false};
    if (resolve_options(scenario, config).has("replicas")) config.sets = {"replicas=1"};
    run_scenario(scenario, config);
    INFO("adapter " << entry.name);
    CHECK(seen.family == entry.traits.family);
    CHECK(seen.faults.network == entry.traits.sim_faults.network);
    CHECK(seen.faults.server_clock == entry.traits.sim_faults.server_clock);
    CHECK(seen.faults.server_clock_jump == entry.traits.sim_faults.server_clock_jump);
    CHECK(seen.faults.failover == entry.traits.sim_faults.failover);
    CHECK(seen.faults.server_restart == entry.traits.sim_faults.server_restart);
    CHECK(seen.faults.server_pause == entry.traits.sim_faults.server_pause);
    ++checked;
  }
  CHECK(checked >= 17);  // 6 production adapters and 11 known-bad ones run in the simulator
}

}  // namespace
}  // namespace lockstep
