#pragma once
// The known-bad Mongo lock of docs/DESIGN.md: the production adapter over a connection that drops
// the unique index on `key` from its createIndexes command. Two upserts on a free key then both
// insert, and both clients hold the lock.
#include <memory>

#include "lockstep/adapter.h"
#include "lockstep/clock.h"
#include "lockstep/options.h"
#include "services/mongo/client/mongo_connection.h"

namespace lockstep {

std::unique_ptr<LockAdapter> make_bad_mongo_no_unique(MongoConnection& connection, Clock& clock,
                                                      const Options& options);

}  // namespace lockstep
