#pragma once
// The RedisConnection seam in the simulator: a client fiber's connection to a simulated Redis node
// over the World's network.
//
// command() sends argv to the target node (one network message, labelled e.g. "SET resource");
// the node executes it when the message is delivered (later while the node is paused; never if it
// crashed) and sends the reply back the same way; the reply is buffered on arrival even while the
// client is paused (Delivery::buffer, as a kernel would). The calling fiber parks until it arrives
// or until command_timeout_us of the client's own clock (drift applies, as to a socket timeout)
// has passed: then IoStatus::timeout, and a reply that comes later is discarded (traced). A
// server that is down, paused, partitioned away or losing messages therefore shows up as a
// timeout, as with TCP to a dead host.
// reset(for_us) is a connection reset (the `reset` fault), as sim/connection_resets.h says: a
// command it ends is connection_lost, one refused before it was sent connection_error.
// A duplicated request (Network duplicate faults) is executed once, as TCP would deliver it once.
//
// The connection is one byte stream: a reply goes to whichever command() is reading when it
// arrives. Callers that take turns (the adapter contract: one call at a time, a Locker's CallGate)
// each read their own reply. Callers that do not (two fibers of the node, as two threads sharing
// a hiredis context) race for it: with several waiting, the world's PRNG picks the reader, so a
// caller may take another's reply and its own then goes to the next reader, or to nobody.
//
// One trace line per command, per reply and per timeout. Invariants: command() is called only
// from a fiber of client_node; at most kReadersMax callers wait at once; a reply is read by at
// most one caller, and by its own sender whenever that sender is the only one waiting.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/redis_connection.h"
#include "services/redis/sim/redis_node.h"
#include "sim/connection_resets.h"
#include "sim/world.h"

namespace lockstep::sim {

// One command in flight, shared by the waiting fiber and the network messages.
struct SimRedisRequest : SimCall {
  RedisReply reply;  // when answered
};

struct SimRedisConnectionOptions {
  int64_t command_timeout_us = 1'000'000;  // on the client's clock
};

class SimRedisConnection final : public RedisConnection {
 public:
  SimRedisConnection(World& world, NodeId client_node, RedisNode& target, int client,
                     SimRedisConnectionOptions options = {});

  RedisResult command(const std::vector<std::string>& argv) override;
  // The two halves of command(), for a fan-out that waits on several connections at once.
  // send(): traces and sends argv now; when the reply arrives before finish(), it is stored in the
  // request and on_reply runs (buffered like a kernel would, even while the client is paused).
  std::shared_ptr<SimRedisRequest> send(const std::vector<std::string>& argv,
                                        std::function<void()> on_reply);
  // The caller stops waiting: the reply if it came, else a timeout after waited_us (traced).
  RedisResult finish(SimRedisRequest& request, int64_t waited_us);
  int64_t command_timeout_us() const { return options_.command_timeout_us; }
  NodeId client_node() const { return client_node_; }
  std::string endpoint() const override;  // "sim:<node name>"
  // How a reset or refused request ends (connection_lost, connection_error).
  RedisResult reset_result(const SimRedisRequest& request) const;
  // Later commands go to `target` (clients reconnect after a failover); one in flight is
  // unaffected.
  void set_target(RedisNode& target) { target_ = &target; }
  // A connection reset, now, and again for every command sent in the next for_us (see above).
  // Runs outside the client's fibers (a fault event).
  void reset(TimeUs for_us = 0);
  RedisNode& target() const { return *target_; }

 private:
  // A caller waiting in command(): what it sent, and the reply it read (its own or another's).
  struct Reader {
    Waiter waiter;
    uint64_t request_id = 0;
    std::optional<RedisReply> reply;
  };
  class ReaderEntry;
  static constexpr size_t kReadersMax = 64;  // fibers of one node sharing the connection

  // A reply (or the RST of a reset) for a command() request reached the client.
  void on_command_reply(SimRedisRequest& request);

  World& world_;
  NodeId client_node_;
  RedisNode* target_;
  int client_;
  SimRedisConnectionOptions options_;
  uint64_t next_request_ = 0;
  ConnectionResets resets_;
  std::vector<Reader*> readers_;  // waiting in command(), in arrival order
};

// A compact, bounded rendering of argv for traces: "EVALSHA 1a2b3c4d.. 1 lock:a tok".
std::string summarize_command(const std::vector<std::string>& argv);

// A command name as Redis looks it up: ASCII letters upper-cased, other bytes as they are.
std::string upper_ascii(std::string name);

}  // namespace lockstep::sim
