#pragma once
// The known-bad keyed locks as registry entries (harness/known_bad.h).
#include <vector>

#include "harness/backend.h"

namespace lockstep {

std::vector<AdapterEntry> keyed_known_bad();

}  // namespace lockstep
