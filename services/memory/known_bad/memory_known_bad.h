#pragma once
// The known-bad in-memory locks as registry entries (harness/known_bad.h).
#include <vector>

#include "harness/backend.h"

namespace lockstep {

std::vector<AdapterEntry> memory_known_bad();

}  // namespace lockstep
