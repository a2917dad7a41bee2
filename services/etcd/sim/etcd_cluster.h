#pragma once
// A simulated etcd 3.4 cluster: `members` members ("etcd-0".."etcd-2"), each on its own World node,
// replicating an EtcdStore (etcd_store.h) through Raft, with each member's lessor, watches and
// Lock RPC. Clients reach it through SimEtcdConnection (sim_etcd_connection.h), which speaks the
// same JSON gateway requests as the real server takes.
//
// Start: member 0 is leader in term 2 (a fresh real etcd elects itself from term 1 to 2), every
// member's log holds that term's empty entry, committed and applied; revision 1.
//
// Raft (etcd/raft as etcd 3.4 configures it: CheckQuorum on, PreVote off): the members tick every
// heartbeat_ms of their own oscillator. The leader sends heartbeats (or the entries a follower
// has not acknowledged) every tick, and new entries as they come: an append carries only entries
// no earlier append to that follower carried (etcd/raft's replicate state), a reject sends again
// from where the follower's log matches; a follower or candidate that has heard from no leader for a randomized
// election timeout (uniform in [election, 2 x election) ticks, from the world's PRNG) starts an
// election: term + 1, votes from a majority, each voter granting one vote per term to a candidate
// whose log is at least as up to date. A member that heard from a leader within the election
// timeout ignores higher-term votes (CheckQuorum's lease). A leader that has not heard from a
// majority within an election timeout steps down. A leader commits an entry once a majority holds
// it and it is of its term; every member applies committed entries in order. Term, vote, log and
// the applied store are durable: a crash keeps them (etcd's WAL and backend), and loses the role,
// the known leader, waiting requests, watches and Lock RPCs in flight.
//
// Requests: writes (put, deleterange, txn with writes, lease grant and revoke, unlock) are
// proposed on the member the client reached and forwarded to its leader; the member answers once
// it applied the entry (or 503 "etcdserver: request timed out" after request_timeout_ms of its
// clock; with no leader at all a proposal is dropped at once: 500 "raft proposal dropped").
// Reads (range, read-only txn) are linearizable: the leader confirms its leadership with a
// heartbeat round (ReadIndex), and the member answers once it applied that far.
//
// Leases (etcd's lessor): only the leader times them. A lease granted or kept alive on the leader
// expires TTL seconds later by the leader's oscillator (drift applies, wall-clock jumps do not);
// followers hold every lease forever. When a new leader applies the first entry of its term it
// promotes its lessor: every lease's expiry becomes now + election timeout + TTL (etcd's
// Promote(electionTimeout); remaining-TTL checkpointing is off by default in 3.4). Every 500 ms of
// its oscillator the leader revokes, through Raft, the leases that have expired (a lease whose
// revoke has not applied is proposed again 3 s later). Keepalives are not Raft entries: the
// leader renews (a follower forwards), and answers TTL 0 for a lease that is gone or expired. The
// minimum TTL is ceil(1.5 election timeouts) in seconds (1 s for 500 ms, as the real server).
//
// Watches: a stream on the member the client reached; first a "created" message, then the events
// since start_revision in one message (if any), then one message per applied revision that has
// events in range. The Lock RPC runs on the member the client reached as etcd 3.4's v3lock does
// (concurrency.Mutex over that member's own server): put name/LEASE_HEX with the lease if absent,
// and wait for the deletion of every key under name/ with a lower create revision, then answer
// with the key, without checking that the key still exists (etcd-io/etcd#11456, confirmed on
// Debian's 3.4.23). A client that cancels the call (closes its stream) makes it delete its key.
//
// Idle runs end: the members' timers stop when, as a member's tick is due and before it sends
// anything, nothing but them is scheduled in the world and the cluster is stable (one leader everybody alive follows, logs equal and applied), or after 3
// election timeouts of such idleness anyway; any request, crash or restart starts them again.
//
// Invariants: at most one leader per term; a committed entry is never lost and every member
// applies the same entries in the same order; the observer hears each committed entry once, when
// a member first applies it. An EtcdCluster must outlive its World's run.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "services/etcd/sim/etcd_store.h"
#include "sim/world.h"

namespace lockstep::sim::etcd {

// What the lease facts are made of (the backend's observer turns them into history events).
class EtcdObserver {
 public:
  virtual ~EtcdObserver() = default;
  // A committed write, when a member first applies it: who asked (-1: the leader's lessor
  // revoking an expired lease), what it was, and what it changed.
  virtual void on_applied(int client, const std::string& path, const EtcdJson& request,
                          const Applied& applied) = 0;
  // The leader's lessor set a lease to expire ttl_us of its oscillator from now: a grant applied,
  // a keepalive (client), or a new leader's promotion (client -1; never one by a leader already
  // superseded). superseded: a keepalive a deposed leader served before it heard of the newer
  // term, from a lessor no other member follows.
  virtual void on_lease_refreshed(int64_t lease, int64_t ttl_us, int client, bool superseded) = 0;
  // A Lock RPC answers `client` that it holds `key` (which may no longer exist: #11456).
  virtual void on_lock_returned(int client, const std::string& key, int64_t lease,
                                bool key_exists) = 0;
};

struct EtcdClusterOptions {
  int members = 3;
  int64_t heartbeat_ms = 100;
  int64_t election_timeout_ms = 500;
  int64_t request_timeout_ms = 6000;  // etcd: 5 s + 2 election timeouts
  EtcdObserver* observer = nullptr;
};

enum class EtcdRole { follower, candidate, leader };

class EtcdCluster {
 public:
  EtcdCluster(World& world, EtcdClusterOptions options);
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  int members() const { return static_cast<int>(members_.size()); }
  NodeId node(int member) const;
  const std::string& member_name(int member) const;
  // The live member that believes it leads with the highest term, -1 if none.
  int leader() const;
  void crash(int member);  // World::crash on its node
  // A failover: the leader crashes, and the others elect another (none leads now, an election
  // under way: nothing crashes, and the trace says so).
  void crash_leader();
  void restart(int member);  // World::restart on its node
  bool alive(int member) const;
  EtcdRole role(int member) const;
  int64_t term(int member) const;
  const EtcdStore& store(int member) const;
  int64_t min_lease_ttl_s() const { return min_lease_ttl_s_; }
  bool quiet() const { return quiet_; }

  // --- what a client's connection calls, on the member's node when its message arrives ---
  // A unary request: respond(http_status, body) once, now or later, or never if the member dies.
  using Respond = std::function<void(int http_status, EtcdJson body)>;
  void handle(int member, int client, const std::string& path, const EtcdJson& body,
              Respond respond);
  // A stream (/v3/watch, /v3/lock/lock): push(http_status, message) for each message.
  void open_stream(int member, int client, uint64_t stream, const std::string& path,
                   const EtcdJson& body, Respond push);
  // The client closed the stream: the member stops it (a Lock RPC deletes its key).
  void cancel_stream(int member, uint64_t stream);

 private:
  struct Member;
  struct Entry;
  struct Watch;
  struct LockCall;
  enum TimerKind { kTick = 0, kLessor = 1 };

  Member& at(int member);
  const Member& at(int member) const;
  int majority() const { return members() / 2 + 1; }
  TimeUs local_after_us(const Member& m, int64_t local_us) const;
  EtcdJson header(const Member& m) const;
  void trace(const Member& m, std::string_view text);

  // timers and quiet
  void arm(Member& m, TimerKind kind, int64_t local_delay_us);
  void disarm(Member& m, TimerKind kind);
  void fire(int member, TimerKind kind, uint64_t generation);
  void wake_up();
  bool settle();
  bool stable() const;

  // raft
  void tick(Member& m);
  void reset_election_timer(Member& m);
  void become_follower(Member& m, int64_t term, int leader);
  void campaign(Member& m);
  void become_leader(Member& m);
  void send_append(Member& leader, int to, bool entries);
  void broadcast(Member& leader, bool entries);
  void receive_append(Member& m, int from, int64_t term, int64_t prev_index, int64_t prev_term,
                      std::vector<std::shared_ptr<const Entry>> entries, int64_t commit,
                      uint64_t read_round);
  void receive_append_reply(Member& m, int from, int64_t term, bool success, int64_t index,
                            uint64_t read_round);
  void receive_vote_request(Member& m, int from, int64_t term, int64_t last_index,
                            int64_t last_term);
  void receive_vote(Member& m, int from, int64_t term, bool granted);
  bool step_term(Member& m, int64_t term, int leader);  // false: the message is stale
  void advance_commit(Member& leader);
  void apply_committed(Member& m);
  void apply(Member& m, const Entry& e);
  int64_t last_index(const Member& m) const;
  int64_t term_at(const Member& m, int64_t index) const;

  // requests
  void propose(Member& m, std::shared_ptr<Entry> entry);
  void forward_proposal(Member& m, int leader, std::shared_ptr<Entry> entry, int attempt);
  void receive_proposal(Member& leader, std::shared_ptr<Entry> entry);
  void complete(Member& m, uint64_t id, int http_status, EtcdJson body);
  void read_index(Member& m, std::function<void(bool ok)> ready);
  void receive_read_request(Member& leader, int from, uint64_t id);
  void serve_reads(Member& m);
  void confirm_reads(Member& leader);
  void write(Member& m, int client, const std::string& path, const EtcdJson& body, Respond respond);
  void read(Member& m, const std::string& path, const EtcdJson& body, Respond respond);
  void when_leader(Member& m, std::function<void()> fn);
  void keepalive(Member& m, int client, const EtcdJson& body, Respond respond);
  void time_to_live(Member& m, const EtcdJson& body, Respond respond);
  void lease_renew_on_leader(Member& leader, int client, int64_t id,
                             std::function<void(int64_t)> done);
  void status(Member& m, Respond respond);

  // lessor
  void promote(Member& m);
  // Another member leads a later term (the simulator's knowledge, not m's): for the recorder only.
  bool superseded(const Member& m) const;
  void demote(Member& m);
  void lessor_tick(Member& m);
  void refresh(Member& m, int64_t lease, int64_t ttl_us, int client);

  // watches and the Lock RPC
  void notify_watches(Member& m, const Applied& applied);
  void run_lock(int member, std::shared_ptr<LockCall> call);

  void on_crash(Member& m);
  void on_restart(Member& m);

  World& world_;
  EtcdClusterOptions options_;
  int64_t min_lease_ttl_s_ = 1;
  int64_t election_ticks_ = 5;
  std::vector<std::unique_ptr<Member>> members_;
  size_t timers_pending_ = 0;
  bool quiet_ = false;
  TimeUs idle_since_us_ = -1;
  int64_t applied_by_any_ = 0;  // the highest entry some member applied: the observer's
  uint64_t next_entry_id_ = 0;
};

}  // namespace lockstep::sim::etcd
