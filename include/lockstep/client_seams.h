#pragma once
// What a lock client may use of the world it runs in, handed to the factories that build a user's
// adapter (redis, memory): the clock of the client's node and a random source. In the simulator
// the clock is simulated (drift, jumps, pauses reach it) and the random source is seeded by the
// run's seed and the client, so a run stays a function of (scenario, seed, build); in the real
// world they are the system's clock and the OS's randomness. Both live as long as the backend
// that made them. A lock that reads time or draws randomness anywhere else escapes the
// simulator's control, and its runs neither reproduce nor see clock faults.
#include "lockstep/clock.h"
#include "lockstep/random.h"

namespace lockstep {

struct ClientSeams {
  Clock& clock;
  Random& random;
};

}  // namespace lockstep
