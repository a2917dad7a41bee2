#pragma once
// How an adapter is set up in a world. A Backend owns the servers an adapter talks to (simulated
// nodes, or real processes it starts and stops), hands each client its adapter instance, and
// carries the faults aimed at the servers or at the path to them. A fault this backend cannot
// produce in its world throws WorldUnsupported. A lock of one's own gets its backend from lockstep
// (make_redis_sim_backend and the like, lockstep/redis.h); BackendEnv, the run it is made for, is
// lockstep's and opaque here.
#include <cstdint>
#include <string>

#include "lockstep/adapter.h"

namespace lockstep {

struct BackendEnv;

class KeyedCalls;  // harness/keyed_calls.h

class Backend {
 public:
  virtual ~Backend() = default;
  // The adapter client `client` (running on `node`) uses. Owned by the backend.
  virtual LockAdapter& adapter_for(int client, int node) = 0;
  virtual int server_count() const = 0;
  // How many servers' leases make a grant.
  virtual int quorum() const { return 1; }
  // Whether servers report their grants, extends and revokes to the recorder. When they do not
  // (a real server), the runner derives them conservatively from the clients' operations.
  virtual bool records_leases() const = 0;
  // The lock library under test as it named itself ("name version"; ext drivers' ready line), for
  // the report; "" for lockstep's own adapters.
  virtual std::string library() const { return {}; }
  // The calls of the in-process keyed lock this backend runs (harness/keyed_calls.h), or null: how
  // a scenario reaches a keyed lock, by type, without a cast.
  virtual KeyedCalls* keyed() { return nullptr; }
  // The longest one client call waits for a reply that never comes (its command timeout, plus a
  // connect timeout where a call may reconnect first), on the client's clock; 0 when calls do not
  // time out. A sweep's liveness bound allows it for each fault that can lose a request.
  virtual int64_t call_timeout_us() const { return 0; }
  // How long the servers may take, once their primary or leader is lost (died, stopped), to elect
  // another and serve again, on their clocks, split votes included; 0 where no election happens (a
  // replica promoted at once, or none). A sweep's liveness bound allows it for each such fault.
  virtual int64_t election_us() const { return 0; }

  // Faults. Each throws WorldUnsupported unless this backend can produce it in its world.
  // The primary dies and a replica takes over. Returns how many writes the primary had
  // acknowledged that the new primary lacks (lost with it), or -1 when it cannot tell (a real
  // server): the judge excuses nothing by a failover that lost nothing.
  virtual int64_t failover();
  virtual void set_server_drift(int64_t drift_ppm);       // every server's clock, from now on
  virtual void partition(int client_node, bool two_way);  // one-way: replies to the client lost
  virtual void heal();                                    // every partition
  virtual void set_fixed_latency(int64_t latency_us);     // makes "on the wire" a known instant

  // Faults aimed at one server, by index in [0, server_count()) (Redlock's nodes; a single Redis
  // is server 0). Same rule: WorldUnsupported where this backend cannot produce them.
  virtual void crash_server(int server);                       // dies at once (persistence applies)
  virtual void restart_server(int server);                     // back on its own, empty or not
  virtual void pause_server(int server, int64_t duration_us);  // stop-the-world of the server
  virtual void jump_server_clock(int server, int64_t delta_us);  // its wall clock jumps, from now
  virtual void partition_server(int client_node, int server,
                                bool two_way);  // one client from one server
  // Every message to and from the server takes delay_us longer, from now on: a distant or loaded
  // host, so one answer of a fan-out arrives well after the others.
  virtual void slow_server(int server, int64_t delay_us);
  // The server ends the sessions of the client on client_node (pg_terminate_backend): whatever
  // they held goes, and the client learns of it only at its next request to that server.
  virtual void end_session(int client_node);
  // The connections of the client on client_node to the servers are reset (an RST): a request in
  // flight ends as connection_lost, applied or not; an idle connection fails its next request
  // before sending it (connection_error); for for_us more, every request sent is reset too. The
  // real world resets at an instant: the client's TCP proxies close both ends with an RST.
  virtual void reset_connections(int client_node, int64_t for_us);
};

}  // namespace lockstep
