#pragma once
// lockstep's public API, all of it: what a lock's own test binary needs to register its locks and
// hand over to lockstep's command line. These headers are the only ones the package installs;
// include them as "lockstep/NAME.h" (or this one for all).
//
//   adapter.h              LockAdapter: one lock client's calls (or a whole client, retries_itself)
//   clock.h, random.h      the Clock and Random seams: time and randomness the simulator controls
//   client_seams.h         ClientSeams: a client's clock, random source and background, handed
//                          to factories
//   background.h           the Background seam: work beside the caller (a thread, or a fiber)
//   io_status.h            how a request went at the transport level
//   redis_connection.h     the RedisConnection seam a Redis lock is written against
//   redis.h                a Redis lock's backends, simulated and real, and its options
//   keyed_state_machine.h  a keyed RW or FIFO lock as a state machine
//   keyed.h                such a lock as a registry entry
//   adapter_traits.h       what a lock claims to be (traits), and the faults it claims to survive
//   fault.h                the fault kinds and fault envelopes the traits name
//   invariant.h            the invariants the checkers judge
//   options.h              adapter options, settable with --set
//   world_kind.h, run_end.h  the worlds a lock runs in, and how a run ends
//   backend.h              Backend: the servers of a run and its faults, as a factory returns them
//   registry.h             register_adapter(AdapterEntry)
//   cli.h                  cli_main(argc, argv): the whole command line
#include "lockstep/adapter.h"
#include "lockstep/adapter_traits.h"
#include "lockstep/backend.h"
#include "lockstep/background.h"
#include "lockstep/cli.h"
#include "lockstep/client_seams.h"
#include "lockstep/clock.h"
#include "lockstep/fault.h"
#include "lockstep/invariant.h"
#include "lockstep/io_status.h"
#include "lockstep/keyed.h"
#include "lockstep/keyed_state_machine.h"
#include "lockstep/options.h"
#include "lockstep/random.h"
#include "lockstep/redis.h"
#include "lockstep/redis_connection.h"
#include "lockstep/registry.h"
#include "lockstep/run_end.h"
#include "lockstep/world_kind.h"
