#pragma once
// The known-bad Redis locks of docs/DESIGN.md: each gets one thing wrong that the classic articles
// warn about, and the suite must catch each in the simulator.
#include <memory>
#include <string>

#include "lockstep/adapter.h"
#include "lockstep/client_seams.h"
#include "lockstep/redis_connection.h"

namespace lockstep {

// name: one of redis_known_bad.cc's list (bad-del-release, ...). nullptr for another name.
// seams: the client's, for a variant that runs work of its own beside its caller.
std::unique_ptr<LockAdapter> make_known_bad_redis_adapter(const std::string& name,
                                                          RedisConnection& connection,
                                                          ClientSeams seams);

}  // namespace lockstep
