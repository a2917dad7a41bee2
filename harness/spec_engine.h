#pragma once
// The one engine that runs a named scenario's spec (harness/scenario_spec.h) in either world: it
// adds and starts the spec's clients, schedules its faults and cuts, in the spec's order, through
// the ScenarioEnv, and runs each program's steps over the Client. What a step or fault does is
// here, once; what a scenario's timeline is stays in its spec.
//
// A spec that needs the simulator, or a number of servers the backend does not
// have, refuses to run (WorldUnsupported) before anything is added.
#include "harness/scenario.h"
#include "harness/scenario_spec.h"

namespace lockstep {

// Throws std::invalid_argument for an invalid spec (a catalogue bug), WorldUnsupported for a world
// or backend the spec cannot run on.
void run_spec(ScenarioEnv& env, ScenarioSpec spec);

}  // namespace lockstep
