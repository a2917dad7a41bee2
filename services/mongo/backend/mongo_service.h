#pragma once
// The mongo service as the registry lists it (services/service.h).
#include "services/service.h"

namespace lockstep {

Service mongo_service();

}  // namespace lockstep
