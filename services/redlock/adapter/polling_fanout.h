#pragma once
// PollingFanout: the real RedisFanout. One non-blocking TCP connection per Redis node, all driven
// by the calling thread with poll(2): every request is written at once, replies are parsed with
// hiredis's reader as they arrive. No thread is created or handed work per call, so a round costs
// about one round trip to the slowest node.
//
// Invariants:
// - A connection is opened lazily by a non-blocking connect that runs under the round's deadline
//   like the request itself, so a round takes at most timeout_us whatever the nodes do: a node
//   whose port never answers a SYN (a full accept backlog, dropped packets) fails alone at the
//   deadline, and the other nodes' replies still count. A connection is closed after any failure
//   or timeout, so a late reply is never read by a later call; the next call reconnects.
// - Failures follow io_status.h: a node that had the whole command and did not answer in time is
//   a timeout, one whose connection failed after that is connection_lost; a connect or write that
//   did not finish (by the deadline or at all) is connection_error: nothing was applied.
// - At the deadline, replies already in the sockets are read before the rest are failed.
// - Loopback only is the caller's business (hosts come from the options).
// - Writes use MSG_NOSIGNAL: a peer reset while writing is a connection_error, never SIGPIPE.
// - Thread-compatible, not thread-safe: one fan-out per thread.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "services/redlock/client/redis_fanout.h"

namespace lockstep {

struct FanoutEndpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
};

struct PollingFanoutOptions {
  std::vector<FanoutEndpoint> endpoints;
};

class PollingFanout final : public RedisFanout {
 public:
  explicit PollingFanout(PollingFanoutOptions options);
  ~PollingFanout() override;
  PollingFanout(const PollingFanout&) = delete;
  PollingFanout& operator=(const PollingFanout&) = delete;

  size_t size() const override { return links_.size(); }
  std::string endpoint(size_t index) const override;
  std::vector<RedisResult> command_all(const std::vector<std::vector<std::string>>& argvs,
                                       int64_t timeout_us) override;

  struct Link;  // one node's socket and request state (defined in the .cc)

 private:
  std::vector<std::unique_ptr<Link>> links_;
};

}  // namespace lockstep
