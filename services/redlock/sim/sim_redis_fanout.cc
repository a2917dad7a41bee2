#include "services/redlock/sim/sim_redis_fanout.h"

#include <memory>

#include "sim/assert.h"

namespace lockstep::sim {

SimRedisFanout::SimRedisFanout(World& world, std::vector<SimRedisConnection*> connections)
    : world_(world), connections_(std::move(connections)) {
  LOCKSTEP_SIM_CHECK(!connections_.empty(), "a fan-out needs at least one connection");
  for (const SimRedisConnection* connection : connections_) {
    LOCKSTEP_SIM_CHECK(
        connection != nullptr && connection->client_node() == connections_.front()->client_node(),
        "every connection of a fan-out belongs to one client node");
  }
}

std::vector<RedisResult> SimRedisFanout::command_all(
    const std::vector<std::vector<std::string>>& argvs, int64_t timeout_us) {
  LOCKSTEP_SIM_CHECK(argvs.size() == connections_.size(), "one argv per connection");
  LOCKSTEP_SIM_CHECK(timeout_us > 0, "the fan-out timeout must be positive");
  const Waiter waiter = world_.prepare_park();
  // Shared with the reply callbacks, which may run after this call returned (late replies).
  auto outstanding = std::make_shared<size_t>(0);
  World& world = world_;
  std::vector<std::shared_ptr<SimRedisRequest>> requests(argvs.size());
  for (size_t i = 0; i < argvs.size(); ++i) {
    if (argvs[i].empty()) continue;
    ++*outstanding;
    requests[i] = connections_[i]->send(argvs[i], [&world, waiter, outstanding] {
      if (--*outstanding == 0) world.wake(waiter);  // the last reply: park once, wake once
    });
  }
  if (*outstanding > 0) {
    world_.park_for_local(waiter, timeout_us);
  }
  std::vector<RedisResult> results;
  results.reserve(argvs.size());
  for (size_t i = 0; i < argvs.size(); ++i) {
    results.push_back(requests[i] ? connections_[i]->finish(*requests[i], timeout_us)
                                  : not_sent_result());
  }
  return results;
}

}  // namespace lockstep::sim
