#pragma once
// The known-bad Redis locks of docs/DESIGN.md: each gets one thing wrong that the classic articles
// warn about, and the suite must catch each in the simulator.
#include <memory>
#include <string>

#include "lockstep/adapter.h"
#include "lockstep/redis_connection.h"

namespace lockstep {

// name: bad-del-release, bad-get-del-release, bad-pexpire-extend, bad-setnx-expire,
// bad-random-token. nullptr for another name.
std::unique_ptr<LockAdapter> make_known_bad_redis_adapter(const std::string& name,
                                                          RedisConnection& connection);

}  // namespace lockstep
