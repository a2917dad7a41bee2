#pragma once
// The known-bad Redlocks of docs/DESIGN.md, each the production algorithm (adapters/redlock steps)
// with one step wrong, and each caught in the simulator:
//   bad-redlock-half-quorum  counts N/2 grants as a majority
//                            (caught by split-vote, and clock-jump with no jump)
//   bad-redlock-no-elapsed   validity ignores the time spent acquiring
//                            (caught by slow-acquire with a late grant)
//   bad-redlock-no-cleanup   a failed attempt leaves its partial locks
//                            (caught by split-vote: liveness)
// Release, extend and the validity check are the production adapter's.
#include <memory>
#include <string>

#include "lockstep/adapter.h"
#include "services/redlock/backend/redlock_backend.h"

namespace lockstep {

// nullptr for a name that is not one of the three.
std::unique_ptr<LockAdapter> make_known_bad_redlock_adapter(const std::string& name,
                                                            RedlockAdapterParts& parts);

}  // namespace lockstep
