#pragma once
// A client's TCP connection to a simulated Redis node, carrying RESP bytes: the seam for a Redis
// client that is not lockstep's (a co-simulated driver's ioredis, services/ext/PROTOCOL.md version
// 2). The transport is sim/byte_stream.h's (ordered pieces, retransmission, the `reset` fault);
// this is its front at the node.
//
// The RESP front parses what arrives (services/redis/sim/resp.h), runs each complete command at
// the node's own clock (RedisNode::execute, as SimRedisConnection does), and answers every reply
// of the piece as one piece. It answers itself what a client library sends on connecting and
// lockstep's command table lacks: INFO (a minimal server section, loading:0), CLIENT (OK),
// SELECT 0. A protocol error is answered with Redis's "-ERR Protocol error" and breaks the
// stream. A Redis node keeps nothing per connection: the client's close and reset send nothing.
//
// Invariants: replies go back in the order the commands arrived; each command runs once.
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "services/redis/sim/redis_node.h"
#include "services/redis/sim/resp.h"
#include "sim/byte_stream.h"
#include "sim/world.h"

namespace lockstep::sim {

class RedisStreamFront final : public StreamFront {
 public:
  // `client` is reported to the node's observer; stream_name labels trace lines ("c0:1").
  // parser: what a front before it (a failover's) parsed so far.
  RedisStreamFront(World& world, RedisNode& target, int client, std::string stream_name,
                   RespParser parser = {})
      : world_(world),
        target_(target),
        client_(client),
        stream_name_(std::move(stream_name)),
        parser_(std::move(parser)) {}
  NodeId node() const override { return target_.node(); }
  std::string_view name() const override { return target_.name(); }
  Served serve(const std::string& bytes) override;
  const RedisNode& target() const { return target_; }
  // A failover: a front to `target` that goes on where this one's parse stands.
  std::unique_ptr<RedisStreamFront> moved_to(RedisNode& target) const {
    return std::make_unique<RedisStreamFront>(world_, target, client_, stream_name_, parser_);
  }

 private:
  World& world_;
  RedisNode& target_;
  int client_;
  std::string stream_name_;
  RespParser parser_;
};

}  // namespace lockstep::sim
