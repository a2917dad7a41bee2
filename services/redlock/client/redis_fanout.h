#pragma once
// The RedisFanout seam: send one command to each of several Redis servers at once, and wait for
// every reply or a deadline, whichever comes first. Redlock asks its N nodes in parallel through
// it, so one slow or dead node costs the request timeout once, not once per node.
//
// Real: non-blocking hiredis sockets polled by the calling thread
// (services/redlock/adapter/polling_fanout.h). Sim: every request sent over the simulated network, then the
// calling fiber parks once until all replies or the deadline (services/redlock/sim/sim_redis_fanout.h).
//
// Invariants: command_all() returns exactly size() results, result i for connection i, and blocks
// at most timeout_us of the caller's clock (plus, in the real world, a reconnect bounded by the
// connect timeout). An empty argv sends nothing for that connection; its result is
// IoStatus::ok with a nil reply and the message "not sent". A transport failure of one connection
// is that connection's result (IoStatus), never an exception; a server error is a reply of type
// error. A reply that arrives after its deadline is never returned to a later call.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lockstep/redis_connection.h"

namespace lockstep {

class RedisFanout {
 public:
  virtual ~RedisFanout() = default;
  virtual size_t size() const = 0;
  // "127.0.0.1:6379", "sim:redis-2": for messages.
  virtual std::string endpoint(size_t index) const = 0;
  virtual std::vector<RedisResult> command_all(const std::vector<std::vector<std::string>>& argvs,
                                               int64_t timeout_us) = 0;
};

// The result for a connection whose argv was empty.
inline RedisResult not_sent_result() {
  return {.status = IoStatus::ok, .reply = RedisReply::nil(), .message = "not sent"};
}

}  // namespace lockstep
