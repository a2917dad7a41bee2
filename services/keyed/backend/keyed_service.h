#pragma once
// The keyed service as the registry lists it (services/service.h).
#include "services/service.h"

namespace lockstep {

Service keyed_service();

}  // namespace lockstep
