#pragma once
// What the ext tests share: skipping (or, in CI, failing) without node 20 or the Node drivers'
// packages, as tests/real_support.h does for the servers.
#include "real/server_errors.h"
#include "services/ext/driver/node_drivers.h"
#include "tests/real_support.h"

namespace lockstep::testing {

inline void require_node_drivers() {
  try {
    ext::require_node_drivers();
  } catch (const real::ServerUnavailable& e) {
    skip_or_fail(e.what());
  }
}

}  // namespace lockstep::testing
