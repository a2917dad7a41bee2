#pragma once
// The redlock service as the registry lists it (services/service.h).
#include "services/service.h"

namespace lockstep {

Service redlock_service();

}  // namespace lockstep
