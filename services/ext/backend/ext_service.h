#pragma once
// The ext service as the registry lists it (services/service.h).
#include "services/service.h"

namespace lockstep {

Service ext_service();

}  // namespace lockstep
