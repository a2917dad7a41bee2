#pragma once
// The registry of adapters by name: every service's production adapters (services/service.h), then
// whatever was registered from outside the production code (the known-bad adapters, a user's own). Registry order is registration order, so listings are
// stable.
#include <string>
#include <vector>

#include "harness/backend.h"

namespace lockstep {

// The adapters known to this binary: the production ones, then whatever was registered.
const std::vector<AdapterEntry>& adapters();
const AdapterEntry* find_adapter(const std::string& name);
void register_adapter(AdapterEntry entry);
// "memory, redis, ..." for error messages.
std::string adapter_names();

}  // namespace lockstep
