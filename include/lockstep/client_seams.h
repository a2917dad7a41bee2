#pragma once
// What a lock client may use of the world it runs in, handed to the factories that build a user's
// adapter (redis, memory): the clock of the client's node, a random source, and where to run work
// of its own beside its caller (a renewal watchdog).
//
// In the simulator the clock is simulated (drift, jumps, pauses reach it), the random source is
// seeded by the run's seed and the client, so a run stays a function of (scenario, seed, build),
// and background work is a fiber of the client's node (its pauses and crashes reach it). In the
// real world they are the system's clock, the OS's randomness and a thread. All live as long as
// the backend that made them. A lock that reads time, draws randomness or starts threads anywhere
// else escapes the simulator's control, and its runs neither reproduce nor see its faults.
//
// A client whose background work shares a connection with its caller must make them take turns
// (Background::make_gate): a connection is one byte stream, and two callers waiting on it at once
// may each read the other's reply, in the simulator as over TCP.
#include "lockstep/background.h"
#include "lockstep/clock.h"
#include "lockstep/random.h"

namespace lockstep {

struct ClientSeams {
  Clock& clock;
  Random& random;
  Background& background;
};

}  // namespace lockstep
