#pragma once
// A client's TCP connection to a simulated server, carrying bytes: the transport under a wire
// protocol that a client not written for lockstep speaks (a co-simulated driver's ioredis or
// node-postgres, services/ext/PROTOCOL.md version 2). What serves the bytes at the server is a
// StreamFront (services/redis/sim/sim_redis_stream.h: RESP; services/postgres/sim/pg_wire_front.h:
// PostgreSQL's protocol v3).
//
// write() sends the bytes as one piece over the World's network (latency, loss, partitions,
// crashes apply as to any message) from the client's kernel node. At the server the front serves
// each piece in order, on the server's node, and may answer at once (one piece back) or later
// (ServerEnd::send: a reply that waited for a lock). on_bytes runs on the client's node with what
// came back (deferred while it is paused, dropped once it crashed).
//
// A stream is TCP, not a datagram: bytes arrive in order, once, or not at all. Pieces are
// numbered per direction; one that does not arrive (loss, a partition) is sent again after a
// retransmission timeout (200 ms, doubling), and a piece that arrives ahead of a lost one is
// dropped to come again, so a healed partition delivers what was written during it, late. After
// 8 unanswered tries the stream is broken. A server that restarted since the connection opened
// refuses the next piece and breaks it (a crashed one just stays silent); its RST, if lost, is
// sent again as the client's retransmissions would draw another. A broken stream carries nothing
// more in either direction (one trace line) and the client is told by on_reset, as a socket
// reset: at once when the client gave up, else by a reset message from the server over the
// network. A front that finds the protocol broken answers and closes it (a FIN after its answer,
// as Redis and gRPC servers do). A server that closes
// the stream (ServerEnd::close) sends its FIN after what it sent before: the client hears it by
// on_reset once those bytes are delivered.
//
// The client's end (close, and the `reset` fault) is heard by the front only when it asks
// (StreamFront::hears_client_end: a PostgreSQL session ends with its connection; a Redis node
// keeps nothing per connection). Then close() sends a FIN after what was written, retransmitted
// like a piece, and a reset sends one RST (lost on a cut path: the server's keepalive must find
// out). Otherwise nothing is sent and nothing is drawn, so a Redis run traces as it always did.
//
// The `reset` fault (sim/connection_resets.h's model, over a byte stream): reset() breaks the
// stream at once. The pieces the client wrote that the server has not taken are lost on the wire;
// those it took ran, and the replies the client has not taken are lost. The client hears it by
// on_reset on its node at once (deferred while it is paused), in flight or idle alike: a socket's
// reader hears an RST as it comes, and a write before then goes nowhere. For the fault's window
// (reset_writes_until, given to every stream of the client, those opened during it too), every
// piece written is doomed, a draw of the world's PRNG: lost on the way (the server sends an RST
// back instead of taking it) or run with its replies lost (an RST instead of them); the client
// hears the RST when it reaches it, and the server answers again a try it did not hear (as TCP
// answers each retransmitted segment of a reset connection). Nothing here draws a number unless a
// piece is written in a window, so a run without a reset draws and traces as before.
//
// Invariants: write() and on_bytes run on the client's node; pieces are served, and replies
// delivered, in the order sent; nothing here reads the wall clock. The stream's state is shared
// with its messages in flight, so it may be destroyed with messages still queued.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sim/world.h"

namespace lockstep::sim {

class SimByteStream;

// The server's end of one stream, held by its front: what it sends later, on the server's node.
// Does nothing once the stream is gone or broken.
class ServerEnd {
 public:
  // Bytes to the client, after every piece sent before.
  void send(std::string bytes) const;
  // The server closes the stream (a FIN after what it sent): the client hears it by on_reset.
  void close() const;
  // Neither broken nor closed by the client, its reset, or the server.
  bool open() const;

 private:
  friend class SimByteStream;
  struct State;
  std::weak_ptr<State> state_;
};

// What serves a stream at its server (one front per stream).
class StreamFront {
 public:
  virtual ~StreamFront() = default;
  virtual NodeId node() const = 0;
  virtual std::string_view name() const = 0;  // "redis-0", "postgres-0": for traces
  struct Served {
    std::string replies;  // answered now, as one piece ("": nothing now)
    std::string broken;   // the protocol broke (why): after the replies, the server closes it
    bool close = false;   // the server closes the stream after the replies (ServerEnd::close)
  };
  // The client's next piece, in order, on node(). The front's ServerEnd is set by then.
  virtual Served serve(const std::string& bytes) = 0;
  // Whether the client's close and reset reach the front (client_end); false: nothing is sent.
  virtual bool hears_client_end() const { return false; }
  // At node(): the client's FIN (reset false) or an RST (true) arrived.
  virtual void client_end(bool reset) { (void)reset; }
  // At stream set-up: how the front answers later.
  virtual void attach(ServerEnd end) { (void)end; }
};

struct ByteStreamOptions {
  NodeId client_node = 0;  // where on_bytes and on_reset run (the client's process)
  // Where the client's pieces leave and the server's arrive: its kernel. The client's node
  // itself, or a node of its own that a pause of the process does not stop (its kernel takes what
  // arrives and hands it to the process when it runs, and sends a FIN when the process dies).
  std::optional<NodeId> kernel_node;
  std::string name;  // labels trace lines ("c0:1")
};

class SimByteStream {
 public:
  // on_bytes and on_reset run on the client's node (deferred while it is paused); on_reset once.
  SimByteStream(World& world, ByteStreamOptions options, std::unique_ptr<StreamFront> front,
                std::function<void(std::string)> on_bytes, std::function<void()> on_reset);
  ~SimByteStream();
  SimByteStream(const SimByteStream&) = delete;
  SimByteStream& operator=(const SimByteStream&) = delete;

  // Sends bytes to the server now, over the network.
  void write(std::string bytes);
  // Serves bytes at the server at once, without the network, and returns what it answers now: for
  // a client's connection handshake before the run starts (true time stands still meanwhile). A
  // server that closes the stream then sends its FIN over the network.
  std::string write_now(const std::string& bytes);
  // The client closed it: nothing more reaches the client (a FIN to a front that hears it).
  void close();
  // The `reset` fault, now: broken, what is in flight lost, the client told (one trace line).
  // A stream broken before whose client was not told yet (a refusal's RST lost) is told now;
  // nothing for one the client closed or heard of.
  void reset();
  // A reset window: each piece written before until_us is doomed (see above).
  void reset_writes_until(TimeUs until_us);
  bool broken() const;
  // The front now serving it (a failover may replace it: set_front).
  StreamFront& front();
  const StreamFront& front() const;
  // A failover: the stream reaches `front` from now on. Pieces in flight to the old server are
  // lost with it and sent again to the new one; nothing else of the stream changes.
  void set_front(std::unique_ptr<StreamFront> front);

 private:
  std::shared_ptr<ServerEnd::State> state_;
};

}  // namespace lockstep::sim
