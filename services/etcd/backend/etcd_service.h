#pragma once
// The etcd service as the registry lists it (services/service.h).
#include "services/service.h"

namespace lockstep {

Service etcd_service();

}  // namespace lockstep
