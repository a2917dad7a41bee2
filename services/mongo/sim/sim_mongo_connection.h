#pragma once
// The MongoConnection seam in the simulator: a client fiber's connection to a simulated replica
// set (replica_set.h) over the World's network, with a driver's server selection.
//
// Server selection: commands go to the member the connection believes is primary. With none
// selected, it asks the replica set which live members believe they are primary (what a driver's
// monitoring would learn) and probes those with {"hello": 1} over the network, all at once; it
// selects the one that answers isWritablePrimary with the highest term (electionId). If none
// answers, it waits 500 ms of its clock (minHeartbeatFrequencyMS) and tries again, up to
// server_selection_timeout_us of the client's clock from the start of run_command; then
// IoStatus::timeout "no primary ...". A hello probe waits at most command_timeout_us.
// A reply that says the member is not primary (10107 NotWritablePrimary, 13435, 13436, 189,
// 11602, 91 at top level or in writeConcernError) or a timeout makes it forget the selection;
// the failed command returns its reply or timeout as is (no retryable writes).
//
// Transport: exactly as SimRedisConnection. One network message per request and per reply; the
// member executes the command when the message is delivered (later while it is paused; never if
// it crashed); the reply is buffered on arrival even while the client is paused
// (Delivery::buffer). The fiber parks until the reply arrives or command_timeout_us of the
// client's own clock has passed (then IoStatus::timeout; a later reply is discarded and traced).
// A duplicated request is executed once. One trace line per command, per reply and per timeout.
// reset(for_us) is a connection reset (the `reset` fault), as sim/connection_resets.h says: the
// command it ends is connection_lost, one refused before it was sent connection_error, and the
// selection is forgotten (the driver reconnects and selects again); a hello probe it ends counts
// as unanswered.
//
// Invariants: run_command() is called only from a fiber of client_node, one command at a time.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "services/mongo/client/mongo_connection.h"
#include "services/mongo/sim/replica_set.h"
#include "sim/connection_resets.h"
#include "sim/world.h"

namespace lockstep::sim {

struct SimMongoConnectionOptions {
  int64_t command_timeout_us = 1'000'000;            // on the client's clock
  int64_t server_selection_timeout_us = 30'000'000;  // on the client's clock
};

class SimMongoConnection final : public MongoConnection {
 public:
  SimMongoConnection(World& world, NodeId client_node, MongoReplicaSet& replica_set, int client,
                     SimMongoConnectionOptions options = {});

  MongoResult run_command(const std::string& database, MongoDocument command) override;
  std::string endpoint() const override;      // "sim:rs0"
  int selected() const { return selected_; }  // the member believed primary, -1 if none
  NodeId client_node() const { return client_node_; }
  // A connection reset, now, and again for every command sent in the next for_us (see above).
  // Runs outside the client's fibers (a fault event).
  void reset(TimeUs for_us = 0);

 private:
  struct Request : SimCall {
    int member = -1;
    MongoDocument reply;  // when answered
  };

  // The command becomes the message in flight (a duplicate delivery copies it).
  std::shared_ptr<Request> send(int member, const std::string& database, MongoDocument command,
                                std::function<void()> on_reply);
  // Selects a primary, or returns false once the client's monotonic clock has reached
  // deadline_us (so a drift change meanwhile moves it, as it moves a real driver's).
  bool select(int64_t deadline_us);
  int64_t local_now_us() const;  // the client's monotonic clock
  int64_t deadline_after(int64_t local_us) const;

  World& world_;
  NodeId client_node_;
  MongoReplicaSet& replica_set_;
  int client_;
  SimMongoConnectionOptions options_;
  int selected_ = -1;
  uint64_t next_request_ = 0;
  ConnectionResets resets_;
};

}  // namespace lockstep::sim
