#pragma once
// The known-bad Mongo lock as a registry entry (harness/known_bad.h).
#include <vector>

#include "harness/backend.h"

namespace lockstep {

std::vector<AdapterEntry> mongo_known_bad();

}  // namespace lockstep
