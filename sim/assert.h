#pragma once
// LOCKSTEP_SIM_CHECK: the simulator's name for LOCKSTEP_CHECK (base/check.h): a
// precondition or invariant that holds in every build type and throws std::logic_error naming the
// condition, the reason and the place, so a broken invariant ends a run loudly.
#include "base/check.h"

#define LOCKSTEP_SIM_CHECK(cond, msg) LOCKSTEP_CHECK(cond, msg)
