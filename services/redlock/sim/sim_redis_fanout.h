#pragma once
// The RedisFanout seam in the simulator: one client fiber's parallel requests to several simulated
// Redis nodes, one SimRedisConnection each.
//
// command_all() sends every non-empty argv at once over the World's network (each message with
// its own latency, loss and partitions), then parks the calling fiber once, until the last reply
// arrives or timeout_us of the client's own clock has passed (drift applies, as to a socket
// timeout). Requests without a reply by then are timeouts; their late replies are discarded and
// traced, never seen by a later call. A reply that arrives while the client is paused is buffered
// (as by a kernel); the fiber resumes at the pause's end.
//
// Invariants: called only from a fiber of the connections' client node, one call at a time; every
// connection belongs to that node; the fan-out does not own the connections (they outlive it).
#include <vector>

#include "services/redis/sim/sim_redis_connection.h"
#include "services/redlock/client/redis_fanout.h"
#include "sim/world.h"

namespace lockstep::sim {

class SimRedisFanout final : public RedisFanout {
 public:
  SimRedisFanout(World& world, std::vector<SimRedisConnection*> connections);

  size_t size() const override { return connections_.size(); }
  std::string endpoint(size_t index) const override { return connections_.at(index)->endpoint(); }
  std::vector<RedisResult> command_all(const std::vector<std::vector<std::string>>& argvs,
                                       int64_t timeout_us) override;

 private:
  World& world_;
  std::vector<SimRedisConnection*> connections_;
};

}  // namespace lockstep::sim
