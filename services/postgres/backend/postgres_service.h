#pragma once
// The postgres service as the registry lists it (services/service.h).
#include "services/service.h"

namespace lockstep {

Service postgres_service();

}  // namespace lockstep
