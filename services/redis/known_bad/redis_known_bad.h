#pragma once
// The known-bad Redis locks as registry entries (harness/known_bad.h).
#include <vector>

#include "harness/backend.h"

namespace lockstep {

std::vector<AdapterEntry> redis_known_bad();

}  // namespace lockstep
