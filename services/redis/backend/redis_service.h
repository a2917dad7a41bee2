#pragma once
// The redis service as the registry lists it (services/service.h).
#include "services/service.h"

namespace lockstep {

Service redis_service();

}  // namespace lockstep
