#pragma once
// A simulated MongoDB replica set (protocol version 1, simplified): `members` mongods, each on its
// own World node ("mongo-0".."mongo-2"), with data, an oplog, heartbeats, elections, replication,
// write concern, rollback and a TTL monitor. Clients reach it through SimMongoConnection.
//
// Start: member 0 is primary in term 1 (as if rs.initiate() had elected it before the run); every
// member holds the entry (1, 1) "initiate", which is majority-committed.
//
// Time: commands run at the executing node's wall clock ($$NOW = World::local_us(node) / 1000), so
// drift and jumps of that node apply. Heartbeat intervals, election timeouts and wtimeout are
// measured by the node's oscillator (drift applies, jumps do not); replication_delay_ms and the
// TTL monitor's period are true time (TTL passes fall on multiples of ttl_monitor_period_ms of true
// time, like the Redis fsync ticks).
//
// Writes and replication: the primary applies a write command at once, appends one oplog entry
// (term, index, ops with pre-images) and, replication_delay_ms later, pushes the entry to every
// other member over the network (latency, loss and partitions apply; nothing is pushed if it
// stepped down meanwhile). A secondary applies an entry that follows its last one and acknowledges;
// anything else (a gap from a lost message, a divergent history) makes it ask the primary for a
// sync: the primary answers with its released oplog (entries whose push time has come), and the
// secondary keeps the common prefix, rolls back the rest (undo with pre-images, newest first) and
// applies the primary's entries. Heartbeats carry each member's last optime, so a secondary that
// missed the last push asks for a sync at the next heartbeat. Secondaries never accept writes.
//
// Write concern (write commands; absent = {w: "majority"} as in mongod 5.0+): w:0/w:1 answer when
// the primary has applied; w:n when n members have (as the primary knows from acknowledgements);
// "majority" when the entry is majority-committed (a majority holds it and an entry of the
// primary's term is committed). wtimeout (primary's oscillator) adds writeConcernError 64; a step
// down answers the waiting writes with writeConcernError 189 (the write stays applied, until a
// rollback maybe). A concern no member set could meet (w above the members, an unknown mode) is
// answered at once, after the write, with writeConcernError 100 or 79. A crash answers nothing. Writes that change nothing wait for the primary's last
// entry, as mongod waits for the client's last optime.
//
// Elections: every heartbeat_interval_ms each member sends a heartbeat to every other (a reply
// comes back). A secondary that has not heard from a primary for election_timeout_ms plus a
// per-attempt jitter in [0, 15%] (drawn from the world's PRNG) runs a dry-run election (term + 1,
// no vote recorded), then the real one: term + 1, votes from a majority of all members, where a
// voter grants one vote per term to a candidate whose last optime is at least its own (the dry run
// is also refused by a member that heard from a primary within the timeout). The winner writes a
// "new primary" no-op and heartbeats at once. A primary steps down when it sees a higher term,
// and at a heartbeat when fewer than a majority (itself included) were heard from within the
// election timeout. So after a primary crash (defaults) a new one is elected 10-11.5 s after the
// last message a secondary got from it, i.e. 8-11.5 s after the crash; a refused dry run (the
// other secondary heard from the primary more recently) or a split vote adds another timeout.
// A partitioned primary steps down at its first heartbeat 10 s after it last heard from a
// majority (so 10-12 s); the majority side elects as above.
//
// Crash and restart (World::crash / restart of a member's node, or crash()/restart() here): data,
// oplog, term and vote survive (journaling); in-flight waits do not. A restarted member is a
// secondary that waits election_timeout_ms before standing; a former primary learns the higher
// term from heartbeats and rolls back what the new primary does not have.
//
// readConcern majority reads the state as of the member's majority-commit point (its data with
// the later oplog entries undone). Reads go to the primary (a secondary answers 13435, writes
// 10107 NotWritablePrimary).
//
// Idle runs end: the periodic timers (heartbeats, election timers) stop when at a heartbeat
// nothing but the set's own timers is scheduled in the world and the set is stable (one primary
// that everyone alive follows, all oplogs equal, no waiting writes), or after 3 election timeouts
// of such idleness anyway (e.g. a partition that never heals). Any command, crash or restart
// starts them again (as if heartbeats had gone on). The TTL monitor runs on the primary while it
// holds TTL-indexed dates, and stops by itself once they are gone. A network fault (partition)
// alone does not wake a quiet set; a command or a crash/restart does.
//
// Observer: one MongoWriteEvent for each document a member changes AS PRIMARY for a client command
// or its TTL monitor, synchronously, before the reply is sent. None for what a secondary applies
// by replication or sync, none for what a rollback undoes (a lease lost that way stays granted).
//
// Invariants: at most one primary per term; a member's data equals its oplog replayed; entries a
// majority-committed write was acknowledged for are never rolled back. A MongoReplicaSet must
// outlive its World's run (the world's hooks and events refer to it).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "services/mongo/client/mongo_connection.h"
#include "services/mongo/sim/oplog.h"
#include "sim/world.h"

namespace lockstep::sim {

struct MongoWriteEvent {
  // unchanged: an update matched the document and left it as it was (no oplog entry).
  enum class Kind { insert, update, remove, ttl_remove, unchanged };
  Kind kind = Kind::insert;
  std::string ns;        // "db.coll"
  MongoDocument before;  // null for insert
  MongoDocument after;   // null for remove
  int client = -1;       // the client that sent the command, -1 for the TTL monitor
  int64_t now_ms = 0;    // the node's clock when it ran
};

std::string_view to_string(MongoWriteEvent::Kind kind);

class MongoObserver {
 public:
  virtual ~MongoObserver() = default;
  virtual void on_mongo_write(std::string_view member_name, const MongoWriteEvent& e) = 0;
};

// mongod's ratio of heartbeat interval to election timeout (2000 to 10000): what a set whose
// election timeout is shortened keeps.
int64_t heartbeat_interval_for(int64_t election_timeout_ms);

struct MongoReplicaSetOptions {
  std::string name = "rs0";
  int members = 3;
  int64_t replication_delay_ms = 0;
  // As mongod's electionTimeoutMillis and heartbeatIntervalMillis (10000 and 2000): a secondary
  // must hear several heartbeats within one election timeout, or a healthy primary looks dead
  // between them (the constructor refuses a heartbeat interval over a third of the timeout).
  int64_t election_timeout_ms = 10000;
  int64_t heartbeat_interval_ms = 2000;
  int64_t ttl_monitor_period_ms = 60000;
  MongoObserver* observer = nullptr;
  std::string member_prefix = "mongo-";  // member i is named member_prefix + i
};

enum class MongoRole { primary, secondary, candidate };
std::string_view to_string(MongoRole role);

class MongoReplicaSet {
 public:
  MongoReplicaSet(World& world, MongoReplicaSetOptions options);
  ~MongoReplicaSet();
  MongoReplicaSet(const MongoReplicaSet&) = delete;
  MongoReplicaSet& operator=(const MongoReplicaSet&) = delete;

  const std::string& name() const { return options_.name; }
  const MongoReplicaSetOptions& options() const { return options_; }
  int members() const { return static_cast<int>(members_.size()); }
  NodeId node(int member) const;
  const std::string& member_name(int member) const;
  // The live member that believes it is primary with the highest term, -1 if none.
  int primary() const;
  // Live members that believe they are primary, highest term first (what a driver's monitor
  // could learn): the connection probes these with hello.
  std::vector<int> claiming_primary() const;
  void crash(int member);    // World::crash on its node
  void restart(int member);  // World::restart on its node
  void set_observer(MongoObserver* observer) { options_.observer = observer; }

  // --- state, for tests and reports ---
  bool alive(int member) const;
  MongoRole role(int member) const;
  int64_t term(int member) const;
  mongo::OpTime last_optime(int member) const;
  int64_t commit_index(int member) const;  // the member's majority-commit point (an oplog index)
  const mongo::Oplog& oplog(int member) const;
  // The documents of `ns` on the member, in natural order (its local, not majority, view).
  std::vector<MongoDocument> documents(int member, const std::string& ns) const;
  int64_t local_ms(int member) const;  // the member's wall clock in ms ($$NOW)
  bool quiet() const { return quiet_; }

  // The connection's entry point, on the member's node when a request arrives: runs `command` on
  // `database` for `client` and calls respond once with the reply (now, or later for a write that
  // waits for its write concern), or never if the member crashes first.
  void handle_command(int member, int client, const std::string& database,
                      const MongoDocument& command, std::function<void(MongoDocument)> respond);

 private:
  struct Member;
  struct Status;
  struct PendingWrite;
  enum TimerKind { kHeartbeat = 0, kElection = 1, kTtl = 2 };

  Member& at(int member);
  const Member& at(int member) const;
  void trace(const Member& m, std::string_view text);
  int majority() const { return members() / 2 + 1; }
  TimeUs oscillator_us(const Member& m, int64_t ms) const;

  // timers
  void arm(Member& m, TimerKind kind, TimeUs at_us);
  void disarm(Member& m, TimerKind kind);
  void fire(int member, TimerKind kind, uint64_t generation);
  void start_timers(Member& m, TimeUs first_heartbeat_us);
  void wake_up();
  bool settle();  // true: the set goes quiet now
  bool stable() const;

  // heartbeats and terms
  Status status_of(const Member& m) const;
  void heartbeat_tick(Member& m);
  void send_heartbeat(Member& from, int to);
  void receive_status(Member& me, const Status& s);
  void adopt_term(Member& me, int64_t term, std::string_view why);
  void follow(Member& me, int primary);
  void step_down(Member& me, std::string_view why);

  // elections
  void election_timer(Member& m);
  void start_election(Member& m, bool dry_run);
  void request_vote(Member& voter, int candidate, int64_t term, mongo::OpTime last, bool dry_run,
                    uint64_t round);
  void receive_vote(Member& c, int voter, int64_t term, bool granted, bool dry_run, uint64_t round);
  void become_primary(Member& m);

  // replication
  void append(Member& p, std::string what, std::vector<mongo::MongoOp> ops);
  void release(Member& p, int64_t index, int64_t term);
  void receive_push(Member& s, int from, int64_t term, mongo::OpTime prev,
                    const mongo::EntryPtr& entry, int64_t commit);
  void request_sync(Member& s, int primary);
  void send_sync(Member& p, int to);
  void receive_sync(Member& s, int from, int64_t term,
                    const std::shared_ptr<const mongo::Oplog>& entries, int64_t commit);
  void ack(Member& s, int primary);
  void note_applied(Member& p, int member, mongo::OpTime op);
  void advance_commit(Member& p);
  // The primary's commit point, applied up to `matching`: the last index known to match its log.
  void learn_commit(Member& s, int64_t commit, int64_t matching);

  // commands and write concern
  void commit_write(Member& p, std::vector<mongo::MongoOp> ops, const std::string& what, int client,
                    int64_t now_ms, bool ttl);
  // Tells the observer of documents an update matched and left as they were.
  void notify_unchanged(const Member& p, const std::string& ns,
                        const std::vector<MongoDocument>& unchanged, int client, int64_t now_ms);
  bool concern_satisfied(const Member& p, const PendingWrite& w) const;
  void await_write_concern(Member& p, PendingWrite w);
  void release_waiters(Member& p);
  void write_timeout(int member, uint64_t id);
  mongo::Collection majority_view(const Member& m, const std::string& ns) const;
  MongoDocument hello_reply(const Member& m, const std::string& command) const;
  MongoDocument next_object_id(Member& m);

  // TTL monitor
  void arm_ttl(Member& m);
  void ttl_pass(Member& m);

  void on_crash(Member& m);
  void on_restart(Member& m);

  World& world_;
  MongoReplicaSetOptions options_;
  std::vector<std::unique_ptr<Member>> members_;
  size_t timers_pending_ = 0;  // the set's own timer events in the world's queue
  bool quiet_ = false;
  TimeUs idle_since_us_ = -1;
  uint64_t next_write_id_ = 0;
};

}  // namespace lockstep::sim
