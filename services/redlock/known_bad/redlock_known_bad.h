#pragma once
// The known-bad Redlocks as registry entries (harness/known_bad.h).
#include <vector>

#include "harness/backend.h"

namespace lockstep {

std::vector<AdapterEntry> redlock_known_bad();

}  // namespace lockstep
