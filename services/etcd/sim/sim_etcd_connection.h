#pragma once
// The EtcdConnection seam in the simulator: a client fiber's connection to a simulated etcd
// cluster (etcd_cluster.h) over the World's network.
//
// call() sends the request to the member the connection uses (one network message); the member
// answers when it can (a write once applied, a read once its ReadIndex is confirmed); the reply is
// buffered on arrival even while the client is paused (Delivery::buffer). The fiber parks until it
// arrives or request_timeout_us of the client's own clock passed: then IoStatus::timeout, a late
// reply is discarded, and later requests go to the next member of the list (clientv3 moves to
// another endpoint). A member that is down, paused or cut off is therefore a timeout. A duplicated
// request is executed once.
//
// reset(for_us) is a connection reset (the `reset` fault), as sim/connection_resets.h says: the
// call in flight ends as connection_lost (it may have run), with none in flight the next call is
// refused unsent (connection_error), and for for_us more every call sent is doomed. Every open
// stream breaks at once (next() says connection_error) and its member hears the cancel, as the
// gateway's closed socket tells it (a Lock RPC deletes its queued key); a stream opened during the
// window is broken before it is sent.
//
// open() sends the stream's request the same way; each message the member pushes arrives as its
// own network message and waits in the stream's inbox for next(). Destroying the stream sends the
// member a cancel (as the real client's closed socket tells the gateway), which may be lost like
// any message.
//
// Invariants: call(), open() and next() run on a fiber of client_node; one call at a time per
// connection; a reply is returned to the call that sent it and to no other; a run without a reset
// draws nothing for one.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "services/etcd/client/etcd_connection.h"
#include "services/etcd/sim/etcd_cluster.h"
#include "sim/connection_resets.h"
#include "sim/world.h"

namespace lockstep::sim::etcd {

struct StreamState;

struct SimEtcdConnectionOptions {
  int64_t request_timeout_us = 1'000'000;  // on the client's clock
  std::vector<int> members;                // the members to try, in order (empty: all, from 0)
};

class SimEtcdConnection final : public EtcdConnection {
 public:
  SimEtcdConnection(World& world, NodeId client_node, EtcdCluster& cluster, int client,
                    SimEtcdConnectionOptions options = {});

  EtcdResult call(std::string_view path, const EtcdJson& body) override;
  std::unique_ptr<EtcdStream> open(std::string_view path, const EtcdJson& body) override;
  std::string endpoint() const override;  // "sim:etcd-N"
  int member() const { return options_.members[current_]; }
  NodeId client_node() const { return client_node_; }
  // A connection reset, now, and again for every call sent in the next for_us (see above).
  void reset(TimeUs for_us = 0);

  static constexpr size_t kStreamsMax = 1'000;  // open streams tracked per connection

 private:
  // Breaks a stream the reset ended: its reader wakes, its member cancels it.
  void break_stream(StreamState& stream);

  World& world_;
  NodeId client_node_;
  EtcdCluster& cluster_;
  int client_;
  SimEtcdConnectionOptions options_;
  size_t current_ = 0;
  uint64_t next_request_ = 0;
  ConnectionResets resets_;
  std::vector<std::weak_ptr<StreamState>> streams_;  // those opened, pruned as they close
};

}  // namespace lockstep::sim::etcd
