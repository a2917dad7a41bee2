#pragma once
// Lease facts from a simulated Redis node's keyspace events: what the Redis and Redlock sim
// backends record, so both judge leases the same way.
//
// On keys under the lock prefix: a SET is a grant for its PX (no PX: a lease that never ends), a
// PEXPIRE an extend, a DEL a revoke by whoever sent it; an expiry ends nothing (the promise simply
// ran out). The event's server is the node's name, so a checker can count servers per owner.
#include <optional>
#include <string_view>

#include "scenarios/history/history.h"
#include "sim/redis/redis_node.h"

namespace lockstep {

// The history event for e on node_name, or nullopt when it is no lease fact.
std::optional<HistoryEvent> lease_event_from(std::string_view node_name,
                                             const sim::KeyspaceEvent& e,
                                             std::string_view lock_prefix);

}  // namespace lockstep
