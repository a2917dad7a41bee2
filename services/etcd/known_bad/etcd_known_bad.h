#pragma once
// The known-bad etcd locks as registry entries (harness/known_bad.h): each a production etcd lock
// with one thing wrong.
#include <vector>

#include "harness/backend.h"

namespace lockstep {

// recipe: the "etcd" entry; lock_rpc: the "etcd-lock" entry.
std::vector<AdapterEntry> etcd_known_bad(const AdapterEntry& recipe, const AdapterEntry& lock_rpc);

}  // namespace lockstep
