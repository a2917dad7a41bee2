#pragma once
// The known-bad etcd locks as registry entries (harness/known_bad.h): each a production etcd lock
// with one thing wrong.
#include <vector>

#include "harness/backend.h"

namespace lockstep {

// Copies of the "etcd" (recipe) and "etcd-lock" (Lock RPC) entries, each with one thing wrong.
std::vector<AdapterEntry> etcd_known_bad();

}  // namespace lockstep
