#pragma once
// A client's TCP connection to a simulated Redis node, carrying RESP bytes: the seam for a Redis
// client that is not lockstep's (a co-simulated driver's ioredis, services/ext/PROTOCOL.md version 2).
//
// write() sends the bytes as one message over the World's network (latency, loss, partitions,
// crashes apply as to any message). At the node, the RESP front parses them (services/redis/sim/resp.h),
// runs each complete command at the node's own clock (RedisNode::execute, as
// SimRedisConnection does), and sends every reply of the piece back as one message; on_bytes
// runs on the client's node with those bytes (deferred while it is paused, dropped once it
// crashed). The front answers itself what a client library sends on connecting and lockstep's
// command table lacks: INFO (a minimal server section, loading:0), CLIENT (OK), SELECT 0.
//
// A stream is TCP, not a datagram: bytes arrive in order, once, or not at all. Pieces are
// numbered per direction; one that does not arrive (loss, a partition) is sent again after a
// retransmission timeout (200 ms, doubling), and a piece that arrives ahead of a lost one is
// dropped to come again, so a healed partition delivers what was written during it, late. After
// 8 unanswered tries the stream is broken. A node that restarted since the connection opened
// refuses the next piece and breaks it (a crashed node just stays silent); its RST, if lost, is
// sent again as the client's retransmissions would draw another. A broken stream carries
// nothing more in either direction (one trace line) and the client is told by on_reset, as a
// socket reset: at once when the client gave up, else by a reset message from the node over the
// network. A protocol error is answered with Redis's "-ERR Protocol error" and breaks it too.
//
// The `reset` fault (sim/connection_resets.h's model, over a byte stream): reset() breaks the
// stream at once. The pieces the client wrote that the node has not taken are lost on the wire;
// those it took ran, and the replies the client has not taken are lost. The client hears it by
// on_reset on its node at once (deferred while it is paused), in flight or idle alike: a socket's
// reader hears an RST as it comes, and a write before then goes nowhere. For the fault's window
// (reset_writes_until, given to every stream of the client, those opened during it too), every
// piece written is doomed, a draw of the world's PRNG: lost on the way (the node sends an RST back
// instead of taking it) or run with its replies lost (an RST instead of them); the client hears
// the RST when it reaches it, and the node answers again a try it did not hear (as TCP answers
// each retransmitted segment of a reset connection). Nothing here draws a number unless a piece
// is written in a window, so a run without a reset draws and traces as before.
//
// Invariants: write() and on_bytes run on the client's node; replies go back in the order the
// commands arrived; nothing here reads the wall clock. The stream's state is shared with its
// messages in flight, so it may be destroyed with messages still queued.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "services/redis/sim/redis_node.h"
#include "sim/world.h"

namespace lockstep::sim {

class SimRedisStream {
 public:
  // `client` is reported to the node's observer; `name` labels trace lines ("c0:1").
  // on_bytes and on_reset run on the client's node (deferred while it is paused); on_reset once.
  SimRedisStream(World& world, NodeId client_node, RedisNode& target, int client, std::string name,
                 std::function<void(std::string)> on_bytes, std::function<void()> on_reset);
  ~SimRedisStream();
  SimRedisStream(const SimRedisStream&) = delete;
  SimRedisStream& operator=(const SimRedisStream&) = delete;

  // Sends bytes to the node now, over the network.
  void write(std::string bytes);
  // Runs bytes at the node at once, without the network, and returns its reply bytes: for a
  // client's connection handshake before the run starts (true time stands still meanwhile).
  std::string write_now(const std::string& bytes);
  // The client closed it: nothing more travels on it.
  void close();
  // The `reset` fault, now: broken, what is in flight lost, the client told (one trace line).
  // A stream broken before whose client was not told yet (a refusal's RST lost) is told now;
  // nothing for one the client closed or heard of.
  void reset();
  // A reset window: each piece written before until_us is doomed (see above).
  void reset_writes_until(TimeUs until_us);
  bool broken() const;
  // A failover: the stream reaches `target` from now on, as the clients' connections of a Redis
  // backend follow a promoted replica (SimRedisConnection::set_target). Pieces in flight to the old
  // node are lost with it and sent again to the new one; nothing else of the stream changes.
  void set_target(RedisNode& target);
  const RedisNode& target() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace lockstep::sim
