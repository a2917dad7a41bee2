#pragma once
// A holder's turn on one key, as a sweep's clients take it (explore/swarm.h): acquire with the
// run's retry, then work the way the step says (a careful holder works only while its lock is
// valid and then until its validity ends; an auto-extending one works in steps until lost() says
// the lock may be gone; a careless one works regardless), maybe extend, maybe come back late to
// extend and release a lock it no longer holds, then release or walk away. Faults timed from the
// step's own calls (a crash or a pause with the acquire on the wire, a pause mid-release) are part
// of it, so they stay aimed wherever the step runs.
//
// A step of a scenario spec (StepKind::hold) runs one (harness/spec_engine.h).
#include <cstdint>
#include <string>

#include "adapters/core/retry.h"

namespace lockstep {

class Client;
class ScenarioEnv;

struct HoldStep {
  std::string key;
  int64_t ttl_ms = 0;
  int64_t extend_ttl_ms = 0;  // what an extend asks for
  int64_t hold_ms = 0;        // work inside the critical section
  int64_t pause_ms = 0;       // stop-the-world inside the critical section (0: none)
  bool extend = false;        // extend after the pause, before the write
  // >= 0: once its validity ended and it left, wait this long, then extend and release anyway: a
  // lock must refuse both, and touch nobody else's.
  int64_t late_ms = -1;
  bool release = true;       // false: walk away and let the lease expire
  bool auto_extend = false;  // instead of the hold and extend: auto-extension while working
  // A careful holder (SwarmSpec::careful): works only while the lock's validity lasts.
  bool careful = false;
  int64_t release_pause_after_us =
      -1;  // pause release_pause_ms this long after the release is sent
  int64_t release_pause_ms = 0;
  int64_t acquire_crash_after_us = -1;  // die this long after the acquire is sent
  int64_t acquire_pause_after_us = -1;  // stop acquire_pause_ms this long after it is sent
  int64_t acquire_pause_ms = 0;
  RetrySettings retry{};
};

void run_hold_step(ScenarioEnv& env, Client& c, const HoldStep& step);

}  // namespace lockstep
