#pragma once
// A simulated redis-server 7.0 on its own World node: keyspace, Lua scripting, persistence across
// crash and restart, and asynchronous replication with failover.
//
// Time: every command runs at the node's local clock (World::local_us(node()) / 1000, in ms), so
// drift and jumps of that clock (World::set_drift / jump_clock on node()) move its expiries.
// Expiry times are absolute, so keys that expire while the node is down are gone when it is back.
//
// Persistence, applied when the node crashes (World::crash(node())):
// - none: the node comes back empty.
// - always: everything acknowledged survives (appendfsync always).
// - everysec: the keyspace as of the last fsync tick survives. Ticks fall on multiples of
//   fsync_period_ms of true time and are scheduled only while there are unsynced writes, so an
//   idle node leaves the event queue empty. (Real Redis loses this only when the machine dies;
//   a killed process keeps what it had written to the OS. The simulator models the machine.)
// The script cache is volatile (as in Redis 7.0): after a restart EVALSHA answers NOSCRIPT.
//
// Replication (Redis 7 replicates effects, not scripts): every batch of changes one command made
// on a primary is sent to each replica replication_delay_ms of true time later, then over the
// World's network (latency, partitions and loss apply). A replica applies batches in order; if
// it sees a gap (a lost message) or its primary restarted, it does a full resync, modelled as an
// instant copy of the primary's keyspace at that moment (as PSYNC/full sync would converge; a
// primary that restarted empty empties its replicas, as in real Redis). Replicas refuse writes
// (READONLY) and never expire keys themselves: an expired key reads as missing but stays until the
// primary's DEL. promote() turns a replica into a primary: whatever it had not received is lost.
//
// Observer: one KeyspaceEvent for every mutation a command makes on a primary (scripts included,
// attributed to the caller) and for every key found expired on access; none for what a replica
// applies, and none for data lost by a crash or a failover (a lease lost that way stays "granted"
// in a history derived from events, which is what lease_exclusion must judge).
//
// Invariants: a node executes commands only while it is up; one node is a replica of at most one
// primary, and a replica has no replicas of its own. A RedisNode must outlive its World's run (the
// world's hooks and events refer to it).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lockstep/redis_connection.h"
#include "services/redis/sim/keyspace.h"
#include "services/redis/sim/lua_engine.h"
#include "sim/node_clock.h"
#include "sim/world.h"

namespace lockstep::sim {

struct KeyspaceEvent {
  enum class Kind { set, del, pexpire, expired };
  Kind kind = Kind::set;
  std::string key;
  std::string value;        // the value written, or the value removed/extended
  int64_t ttl_ms = -1;      // set/pexpire: the key's TTL right after the command (-1: none)
  int client = -1;          // who sent the command (or the script's caller)
  bool replicated = false;  // a replica applied it from its primary's stream (not a client's act)
};

std::string_view to_string(KeyspaceEvent::Kind kind);

class KeyspaceObserver {
 public:
  virtual ~KeyspaceObserver() = default;
  virtual void on_keyspace_event(std::string_view node_name, const KeyspaceEvent& e) = 0;
};

enum class Persistence { none, everysec, always };
std::string_view to_string(Persistence persistence);

struct RedisNodeOptions {
  std::string name = "redis";
  Persistence persistence = Persistence::none;
  int64_t fsync_period_ms = 1000;
  KeyspaceObserver* observer = nullptr;
  ClockSpec clock;
  LuaEngineOptions lua;
};

struct ReplicationOptions {
  int64_t replication_delay_ms = 0;
};

class RedisNode {
 public:
  // Adds its own node to the world and hooks its crash and restart.
  RedisNode(World& world, RedisNodeOptions options);
  RedisNode(const RedisNode&) = delete;
  RedisNode& operator=(const RedisNode&) = delete;

  NodeId node() const { return node_; }
  const std::string& name() const { return options_.name; }
  // Runs one command now, at the node's local time. `client` is reported to the observer.
  RedisReply execute(const std::vector<std::string>& argv, int client);

  void add_replica(RedisNode& replica, ReplicationOptions options = {});
  void promote();
  bool is_replica() const { return primary_ != nullptr; }

  void set_observer(KeyspaceObserver* observer) { options_.observer = observer; }
  const Keyspace& keyspace() const { return keyspace_; }
  const LuaEngine& lua() const { return *lua_; }
  int64_t local_ms() const;
  uint64_t replication_seq() const {
    return repl_seq_;
  }  // batches sent (primary) or applied (replica)

 private:
  using Batch = std::vector<KeyChange>;
  struct ReplicaLink {
    RedisNode* replica = nullptr;
    int64_t delay_ms = 0;
    uint64_t link_id = 0;
  };
  // Collects one command's changes and tells the observer about them.
  class Recorder final : public ChangeSink {
   public:
    explicit Recorder(RedisNode& node) : node_(node) {}
    void begin(int client) { client_ = client; }
    void on_change(const KeyChange& change) override;
    Batch take() { return std::exchange(batch_, {}); }

   private:
    RedisNode& node_;
    int client_ = -1;
    Batch batch_;
  };

  void commit(Batch batch);
  void schedule_fsync();
  void fsync();
  void on_crash();
  void on_restart();
  void replicate(const std::shared_ptr<const Batch>& batch);
  void send_batch(const ReplicaLink& link, uint64_t seq, std::shared_ptr<const Batch> batch);
  void receive(const RedisNode* from, uint64_t link_id, uint64_t seq, const Batch& batch);
  void resync(std::string_view why);
  void drop_replica(const RedisNode* replica);
  void trace(std::string_view text);
  // Tells the observer of a change: a client's (on a primary), or one a replica applied from its
  // primary's stream (replicated), so lease facts can follow the data to a promoted replica.
  void notify(const KeyChange& change, int client, bool replicated);

  World& world_;
  RedisNodeOptions options_;
  NodeId node_;
  Keyspace keyspace_;
  Keyspace durable_;     // everysec: the keyspace as of the last fsync tick
  LuaEngineHandle lua_;  // from this thread's pool of reset engines (lua_engine.h)
  Recorder recorder_{*this};
  bool unsynced_ = false;
  bool fsync_pending_ = false;

  // Replication. On a primary, repl_seq_ counts batches sent; on a replica, batches applied.
  std::vector<ReplicaLink> replicas_;
  RedisNode* primary_ = nullptr;
  uint64_t link_id_ = 0;          // the current link to primary_
  bool needs_full_sync_ = false;  // a full sync was due while the primary was down
  uint64_t next_link_id_ = 0;
  uint64_t repl_seq_ = 0;
};

}  // namespace lockstep::sim
