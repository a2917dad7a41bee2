#pragma once
// The memory service as the registry lists it (services/service.h).
#include "services/service.h"

namespace lockstep {

Service memory_service();

}  // namespace lockstep
