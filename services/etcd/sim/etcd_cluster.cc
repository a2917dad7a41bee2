#include "services/etcd/sim/etcd_cluster.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "services/etcd/client/etcd_json.h"
#include "sim/assert.h"

namespace lockstep::sim::etcd {

using lockstep::etcd::base64_encode;
using lockstep::etcd::bytes_field;
using lockstep::etcd::int_field;
using lockstep::etcd::int_json;

namespace {

constexpr uint64_t kClusterId = 0x3c1d6e2b9a5f4e07;
// Member 0's ID is the one etcd 3.4 gives a lone member named "default"; real IDs are hashes of
// the peer URLs, in no order, so the others' step down from it: a lease ID begins with its
// member's ID, and a lease a higher member grants sorts before one of member 0 (a lock taken by
// the smallest key, not the first created, then lets a later waiter in: bad-etcd-smallest-key).
constexpr uint64_t kMemberIdBase = 0x8e9e05c52164694d;
constexpr uint64_t kMemberIdStep = 0x1111;
constexpr int64_t kLessorTickUs = 500'000;  // etcd's lessor loop
constexpr TimeUs kForwardRtoUs = 200'000;   // TCP's minimum RTO, doubled per try
constexpr int kForwardTriesMax = 6;
constexpr int64_t kRevokeRetryUs = 3'000'000;  // expiredLeaseRetryInterval
constexpr int64_t kDefaultSessionTtlS = 60;    // concurrency.NewSession without a lease
constexpr size_t kAppendEntriesMax = 64;
constexpr int kSettleElectionTimeouts = 3;
constexpr int kLockLoopsMax = 1'000'000;
constexpr int kUnknown = 2;
constexpr int kUnavailable = 14;

const char* const kTimedOut = "etcdserver: request timed out";

EtcdJson error_body(int code, const std::string& text) {
  return {{"error", text}, {"message", text}, {"code", code}};
}

}  // namespace

struct EtcdCluster::Entry {
  int64_t term = 0;
  int64_t index = 0;
  uint64_t id = 0;  // the proposal (0: the leader's empty entry, or the lessor's revoke)
  int origin = -1;  // the member whose client waits for it
  int client = -1;
  std::string path;  // "" for a leader's empty entry
  EtcdJson body;
  int64_t lease_id = 0;  // a grant's lease
  bool arrived = false;  // a forwarded proposal reached the leader (a copy is ignored)
};

struct EtcdCluster::Watch {
  std::string key;
  std::string range_end;
  bool prev_kv = false;
  int64_t next_revision = 0;  // deliver events from this revision on
  Respond push;               // a client's stream; empty for a Lock RPC's internal wait
  std::function<void(const Event&)> on_event;
};

struct EtcdCluster::LockCall {
  uint64_t stream = 0;
  int client = -1;
  EtcdJson body;
  Respond push;
  bool canceled = false;
  Waiter waiter;        // where its fiber is parked
  bool parked = false;  // the fiber waits in a watch (a cancel wakes it)
};

struct EtcdCluster::Member {
  int id = 0;
  NodeId node = 0;
  std::string name;
  uint64_t member_id = 0;
  // durable: Raft's hard state and log (WAL), and the applied store (bbolt)
  int64_t term = 0;
  int voted_for = -1;
  std::vector<std::shared_ptr<const Entry>> log;  // log[0] is the sentinel (index 0, term 0)
  int64_t commit = 0;
  int64_t applied = 0;
  std::unique_ptr<EtcdStore> store;
  uint64_t id_prefix = 0;  // the lease ID generator (etcd's idutil.Generator)
  uint64_t id_suffix = 0;
  // volatile Raft state
  EtcdRole role = EtcdRole::follower;
  int leader = -1;
  int64_t election_elapsed = 0;
  int64_t randomized_timeout = 0;
  std::vector<int64_t> next_index;
  std::vector<int64_t> match_index;
  std::vector<bool> active;
  std::vector<uint64_t> acked_round;
  std::set<int> votes;
  // the lessor (only a leader's is primary)
  bool primary = false;
  std::map<int64_t, int64_t> expiry_us;          // lease -> its oscillator deadline
  std::map<int64_t, int64_t> revoking_since_us;  // lease -> when its revoke was proposed
  // requests waiting on this member
  struct Waiting {
    Respond respond;
    EventId timeout = kNoEvent;
  };
  std::map<uint64_t, Waiting> waiting;  // proposal id -> its client
  struct Read {
    uint64_t id = 0;
    int64_t index = -1;  // known once the leader confirmed it
    bool sent = false;
    int tries = 0;  // requests sent to the leader (a lost one or its lost reply: sent again)
    std::function<void(bool)> ready;
    EventId timeout = kNoEvent;
  };
  std::vector<Read> reads;
  uint64_t next_read = 0;
  // the leader's ReadIndex rounds
  struct ReadRequest {
    int from = 0;
    uint64_t id = 0;
    uint64_t round = 0;  // 0: waiting for an entry of this term to commit
    int64_t index = 0;
  };
  std::vector<ReadRequest> read_requests;
  uint64_t read_round = 0;
  std::vector<std::function<void()>> await_leader;  // forwarded requests waiting for a leader
  std::map<uint64_t, Watch> watches;                // by stream (internal ones: high ids)
  uint64_t next_internal_watch = uint64_t{1} << 62;
  std::map<uint64_t, std::shared_ptr<LockCall>> locks;
  struct Timer {
    EventId event = kNoEvent;
    uint64_t generation = 0;
    bool armed = false;
  };
  Timer timers[2];

  int64_t last_index() const { return log.back()->index; }
};

// ---- construction, access ----

EtcdCluster::EtcdCluster(World& world, EtcdClusterOptions options)
    : world_(world), options_(options) {
  LOCKSTEP_SIM_CHECK(options_.members >= 1 && options_.members <= 7, "1 to 7 members");
  LOCKSTEP_SIM_CHECK(
      options_.heartbeat_ms > 0 && options_.election_timeout_ms >= options_.heartbeat_ms * 2,
      "an election timeout of at least two heartbeats");
  election_ticks_ = options_.election_timeout_ms / options_.heartbeat_ms;
  // etcd: minTTL = ceil((3 * electionTicks / 2) * heartbeat) in seconds.
  const int64_t min_ttl_ms = (3 * election_ticks_ / 2) * options_.heartbeat_ms;
  min_lease_ttl_s_ = (min_ttl_ms + 999) / 1000;
  auto empty = std::make_shared<Entry>(Entry{.term = 2, .index = 1});
  auto sentinel = std::make_shared<Entry>();
  for (int i = 0; i < options_.members; ++i) {
    auto m = std::make_unique<Member>();
    m->id = i;
    m->name = fmt::format("etcd-{}", i);
    m->node = world_.add_node(m->name);
    m->member_id = kMemberIdBase - static_cast<uint64_t>(i) * kMemberIdStep;
    m->term = 2;
    m->voted_for = 0;
    m->log = {sentinel, empty};
    m->commit = 1;
    m->applied = 1;
    m->store = std::make_unique<EtcdStore>(min_lease_ttl_s_);
    const uint64_t start_ms = static_cast<uint64_t>(world_.local_us(m->node) / 1000);
    m->id_prefix = (m->member_id & 0xffff) << 48;
    m->id_suffix = (start_ms & ((uint64_t{1} << 40) - 1)) << 8;
    m->next_index.assign(options_.members, 2);
    m->match_index.assign(options_.members, 0);
    m->active.assign(options_.members, false);
    m->acked_round.assign(options_.members, 0);
    members_.push_back(std::move(m));
  }
  applied_by_any_ = 1;
  for (auto& m : members_) {
    m->role = m->id == 0 ? EtcdRole::leader : EtcdRole::follower;
    m->leader = 0;
    m->match_index[m->id] = 1;
    if (m->id == 0) std::fill(m->match_index.begin(), m->match_index.end(), 1);
    reset_election_timer(*m);
    const int id = m->id;
    world_.on_crash(m->node, [this, id] { on_crash(at(id)); });
    world_.on_restart(m->node, [this, id] { on_restart(at(id)); });
  }
  // The first leader's lessor is primary from the start (as if it had applied its empty entry).
  members_[0]->primary = true;
  for (auto& m : members_) arm(*m, kTick, options_.heartbeat_ms * 1000 * (m->id + 1) / members());
  arm(*members_[0], kLessor, kLessorTickUs);
}

EtcdCluster::~EtcdCluster() = default;

EtcdCluster::Member& EtcdCluster::at(int member) {
  LOCKSTEP_SIM_CHECK(member >= 0 && member < members(), "a member of the cluster");
  return *members_[static_cast<size_t>(member)];
}

const EtcdCluster::Member& EtcdCluster::at(int member) const {
  LOCKSTEP_SIM_CHECK(member >= 0 && member < members(), "a member of the cluster");
  return *members_[static_cast<size_t>(member)];
}

NodeId EtcdCluster::node(int member) const { return at(member).node; }
const std::string& EtcdCluster::member_name(int member) const { return at(member).name; }
bool EtcdCluster::alive(int member) const { return world_.alive(at(member).node); }
EtcdRole EtcdCluster::role(int member) const { return at(member).role; }
int64_t EtcdCluster::term(int member) const { return at(member).term; }
const EtcdStore& EtcdCluster::store(int member) const { return *at(member).store; }

int EtcdCluster::leader() const {
  int best = -1;
  for (const auto& m : members_) {
    if (!world_.alive(m->node) || m->role != EtcdRole::leader) continue;
    if (best < 0 || m->term > at(best).term) best = m->id;
  }
  return best;
}

void EtcdCluster::crash(int member) { world_.crash(at(member).node); }
void EtcdCluster::restart(int member) { world_.restart(at(member).node); }

TimeUs EtcdCluster::local_after_us(const Member& m, int64_t local_us) const {
  return world_.node_clock(m.node).true_duration_for(local_us);
}

EtcdJson EtcdCluster::header(const Member& m) const {
  return {{"cluster_id", std::to_string(kClusterId)},
          {"member_id", std::to_string(m.member_id)},
          {"revision", std::to_string(m.store->revision())},
          {"raft_term", std::to_string(m.term)}};
}

void EtcdCluster::trace(const Member& m, std::string_view text) {
  world_.trace_linef("{} {}", m.name, text);
}

int64_t EtcdCluster::last_index(const Member& m) const { return m.last_index(); }

int64_t EtcdCluster::term_at(const Member& m, int64_t index) const {
  if (index < 0 || index > m.last_index()) return -1;
  return m.log[static_cast<size_t>(index)]->term;
}

// ---- timers and going quiet ----

void EtcdCluster::arm(Member& m, TimerKind kind, int64_t local_delay_us) {
  disarm(m, kind);
  Member::Timer& timer = m.timers[kind];
  timer.armed = true;
  ++timer.generation;
  ++timers_pending_;
  const uint64_t generation = timer.generation;
  const int id = m.id;
  const uint64_t incarnation = world_.incarnation(m.node);
  timer.event = world_.scheduler().after(local_after_us(m, local_delay_us),
                                         [this, id, kind, generation, incarnation] {
                                           Member& member = at(id);
                                           member.timers[kind].event = kNoEvent;
                                           world_.deliver_at(
                                               member.node, incarnation, world_.now_us(),
                                               [this, id, kind, generation] {
                                                 --timers_pending_;
                                                 fire(id, kind, generation);
                                               },
                                               [this, id, kind, generation] {
                                                 --timers_pending_;
                                                 Member::Timer& t = at(id).timers[kind];
                                                 if (t.generation == generation) t.armed = false;
                                               });
                                         });
}

void EtcdCluster::disarm(Member& m, TimerKind kind) {
  Member::Timer& timer = m.timers[kind];
  if (timer.event != kNoEvent) {
    world_.scheduler().cancel(timer.event);
    timer.event = kNoEvent;
    --timers_pending_;
  }
  ++timer.generation;  // a delivery already on its way is superseded
  timer.armed = false;
}

void EtcdCluster::fire(int member, TimerKind kind, uint64_t generation) {
  Member& m = at(member);
  Member::Timer& timer = m.timers[kind];
  if (timer.generation != generation) return;
  timer.armed = false;
  if (kind == kTick) {
    // Idleness is sampled before this tick sends its heartbeats: sampled after, a leader always
    // sees its own messages in flight, and so does a follower whose tick falls just after the
    // leader's (with one follower left, for ever: the run reaches its time bound).
    if (settle()) return;
    tick(m);
    if (world_.alive(m.node)) arm(m, kTick, options_.heartbeat_ms * 1000);
  } else {
    lessor_tick(m);
    if (m.primary && !quiet_) arm(m, kLessor, kLessorTickUs);
  }
}

bool EtcdCluster::stable() const {
  const int l = leader();
  if (l < 0) return false;
  const Member& leader_member = at(l);
  for (const auto& m : members_) {
    if (!world_.alive(m->node)) continue;
    if (m->term != leader_member.term || m->leader != l) return false;
    if (m->last_index() != leader_member.last_index() || m->applied != m->last_index())
      return false;
    if (!m->waiting.empty() || !m->reads.empty()) return false;
  }
  return true;
}

bool EtcdCluster::settle() {
  if (quiet_) return true;
  bool idle = world_.scheduler().pending_count() == timers_pending_;
  for (const auto& m : members_) idle = idle && !world_.paused(m->node);
  if (!idle) {
    idle_since_us_ = -1;
    return false;
  }
  const TimeUs now = world_.now_us();
  if (idle_since_us_ < 0) idle_since_us_ = now;
  const bool is_stable = stable();
  const TimeUs settle_us = kSettleElectionTimeouts * options_.election_timeout_ms * kUsPerMs;
  if (!is_stable && now - idle_since_us_ < settle_us) return false;
  quiet_ = true;
  for (auto& m : members_) {
    disarm(*m, kTick);
    disarm(*m, kLessor);
  }
  world_.trace_linef("etcd goes quiet: nothing else is scheduled ({})",
                     is_stable ? "stable" : "not settled after 3 election timeouts");
  return true;
}

// Any request, crash or restart: a quiet cluster resumes as if its ticks had never stopped.
void EtcdCluster::wake_up() {
  idle_since_us_ = -1;
  if (!quiet_) return;
  quiet_ = false;
  world_.trace_line("etcd wakes up");
  for (auto& m : members_) {
    if (!world_.alive(m->node)) continue;
    m->election_elapsed = 0;
    std::fill(m->active.begin(), m->active.end(), true);
    arm(*m, kTick, options_.heartbeat_ms * 1000 * (m->id + 1) / members());
    if (m->primary) arm(*m, kLessor, kLessorTickUs);
  }
}

// ---- Raft ----

void EtcdCluster::reset_election_timer(Member& m) {
  m.election_elapsed = 0;
  m.randomized_timeout =
      election_ticks_ +
      static_cast<int64_t>(world_.prng().below(static_cast<uint64_t>(election_ticks_)));
}

void EtcdCluster::tick(Member& m) {
  ++m.election_elapsed;
  if (m.role == EtcdRole::leader) {
    if (m.election_elapsed >= election_ticks_) {
      m.election_elapsed = 0;
      int active = 1;
      for (int i = 0; i < members(); ++i) {
        if (i != m.id && m.active[i]) ++active;
        m.active[i] = false;
      }
      if (active < majority()) {
        trace(m, fmt::format("steps down in term {}: heard from {} of {} (check quorum)", m.term,
                             active, members()));
        become_follower(m, m.term, -1);
        return;
      }
    }
    // What a follower has not acknowledged is sent again from its match: an append may have been
    // lost since the optimistic advance of next_index (send_append).
    for (int to = 0; to < members(); ++to) {
      if (to != m.id) m.next_index[to] = std::min(m.next_index[to], m.match_index[to] + 1);
    }
    broadcast(m, true);
    return;
  }
  if (m.election_elapsed >= m.randomized_timeout) campaign(m);
}

void EtcdCluster::become_follower(Member& m, int64_t term, int leader) {
  const bool was_leader = m.role == EtcdRole::leader;
  if (term > m.term) {
    m.term = term;
    m.voted_for = -1;
  }
  m.role = EtcdRole::follower;
  const int before = m.leader;
  m.leader = leader;
  reset_election_timer(m);
  if (was_leader) {
    demote(m);
    m.read_requests.clear();
  }
  if (leader >= 0 && leader != before) {
    trace(m, fmt::format("follows {} in term {}", at(leader).name, m.term));
    for (Member::Read& r : m.reads) r.sent = false;  // ask the new leader
    serve_reads(m);
    std::vector<std::function<void()>> waiting = std::move(m.await_leader);
    m.await_leader.clear();
    for (auto& fn : waiting) fn();
  }
}

void EtcdCluster::campaign(Member& m) {
  m.role = EtcdRole::candidate;
  ++m.term;
  m.voted_for = m.id;
  m.leader = -1;
  m.votes = {m.id};
  reset_election_timer(m);
  trace(m, fmt::format("campaigns in term {}", m.term));
  if (static_cast<int>(m.votes.size()) >= majority()) {
    become_leader(m);
    return;
  }
  const int64_t last = m.last_index();
  const int64_t last_term = term_at(m, last);
  for (int to = 0; to < members(); ++to) {
    if (to == m.id) continue;
    const int from = m.id;
    const int64_t term = m.term;
    world_.network().send(
        m.node, at(to).node, [&] { return fmt::format("etcd vote request t{}", term); },
        [this, to, from, term, last, last_term] {
          receive_vote_request(at(to), from, term, last, last_term);
        });
  }
}

bool EtcdCluster::step_term(Member& m, int64_t term, int leader) {
  if (term < m.term) return false;
  if (term > m.term) become_follower(m, term, leader);
  return true;
}

void EtcdCluster::receive_vote_request(Member& m, int from, int64_t term, int64_t last_index,
                                       int64_t last_term) {
  if (term > m.term) {
    // CheckQuorum's lease: a member that heard from a leader within an election timeout ignores
    // a higher term's vote request (it would depose a live leader).
    if (m.leader >= 0 && m.election_elapsed < election_ticks_) return;
    become_follower(m, term, -1);
  }
  bool granted = false;
  if (term == m.term && (m.voted_for < 0 || m.voted_for == from)) {
    const int64_t my_last = m.last_index();
    const int64_t my_last_term = term_at(m, my_last);
    if (last_term > my_last_term || (last_term == my_last_term && last_index >= my_last)) {
      granted = true;
      m.voted_for = from;
      m.election_elapsed = 0;
    }
  }
  const int64_t reply_term = m.term;
  const int voter = m.id;
  world_.network().send(
      m.node, at(from).node, [&] { return fmt::format("etcd vote t{} {}", reply_term, granted); },
      [this, from, voter, reply_term, granted] {
        receive_vote(at(from), voter, reply_term, granted);
      });
}

void EtcdCluster::receive_vote(Member& m, int from, int64_t term, bool granted) {
  if (term > m.term) {
    become_follower(m, term, -1);
    return;
  }
  if (m.role != EtcdRole::candidate || term != m.term || !granted) return;
  m.votes.insert(from);
  if (static_cast<int>(m.votes.size()) >= majority()) become_leader(m);
}

void EtcdCluster::become_leader(Member& m) {
  m.role = EtcdRole::leader;
  m.leader = m.id;
  m.election_elapsed = 0;
  trace(m, fmt::format("becomes leader in term {}", m.term));
  std::fill(m.next_index.begin(), m.next_index.end(), m.last_index() + 1);
  std::fill(m.match_index.begin(), m.match_index.end(), 0);
  std::fill(m.active.begin(), m.active.end(), false);
  std::fill(m.acked_round.begin(), m.acked_round.end(), 0);
  m.read_requests.clear();
  auto empty = std::make_shared<Entry>(Entry{.term = m.term, .index = m.last_index() + 1});
  m.log.push_back(empty);
  m.match_index[m.id] = m.last_index();
  m.next_index[m.id] = m.last_index() + 1;
  for (Member::Read& r : m.reads) r.sent = false;
  std::vector<std::function<void()>> waiting = std::move(m.await_leader);
  m.await_leader.clear();
  for (auto& fn : waiting) fn();
  serve_reads(m);
  if (majority() == 1) advance_commit(m);
  broadcast(m, true);
}

void EtcdCluster::broadcast(Member& leader, bool entries) {
  for (int to = 0; to < members(); ++to) {
    if (to != leader.id) send_append(leader, to, entries);
  }
}

void EtcdCluster::send_append(Member& leader, int to, bool entries) {
  const int64_t prev = leader.next_index[to] - 1;
  const int64_t prev_term = term_at(leader, prev);
  std::vector<std::shared_ptr<const Entry>> batch;
  if (entries) {
    for (int64_t i = prev + 1; i <= leader.last_index() && batch.size() < kAppendEntriesMax; ++i)
      batch.push_back(leader.log[static_cast<size_t>(i)]);
  }
  const int from = leader.id;
  const int64_t term = leader.term;
  const int64_t commit = leader.commit;
  const uint64_t round = leader.read_round;
  const size_t count = batch.size();
  // Raft's replicate state: the next append carries only what this one does not (etcd/raft's
  // optimistic update), so appends in flight together never repeat entries; a reject, or the
  // next tick, sends again from what the follower acknowledged.
  leader.next_index[to] = prev + 1 + static_cast<int64_t>(count);
  world_.network().send(
      leader.node, at(to).node,
      [&] {
        return count == 0 ? fmt::format("etcd heartbeat t{}", term)
                          : fmt::format("etcd append t{} {}+{}", term, prev, count);
      },
      [this, to, from, term, prev, prev_term, batch = std::move(batch), commit, round]() mutable {
        receive_append(at(to), from, term, prev, prev_term, std::move(batch), commit, round);
      });
}

void EtcdCluster::receive_append(Member& m, int from, int64_t term, int64_t prev_index,
                                 int64_t prev_term,
                                 std::vector<std::shared_ptr<const Entry>> entries, int64_t commit,
                                 uint64_t read_round) {
  const auto reply = [&](bool success, int64_t index) {
    const int64_t reply_term = m.term;
    const int me = m.id;
    world_.network().send(
        m.node, at(from).node, [&] { return fmt::format("etcd append reply t{}", reply_term); },
        [this, from, me, reply_term, success, index, read_round] {
          receive_append_reply(at(from), me, reply_term, success, index, read_round);
        });
  };
  if (term < m.term) {  // a deposed leader: our term in the reply makes it step down
    reply(false, m.last_index());
    return;
  }
  if (term > m.term || m.role != EtcdRole::follower || m.leader != from) {
    become_follower(m, term, from);
  }
  m.election_elapsed = 0;
  if (prev_index > m.last_index() || term_at(m, prev_index) != prev_term) {
    reply(false, std::min(prev_index - 1, m.last_index()));
    return;
  }
  for (const auto& e : entries) {
    if (e->index <= m.last_index()) {
      if (term_at(m, e->index) == e->term) continue;
      LOCKSTEP_SIM_CHECK(e->index > m.commit, "a committed entry is never overwritten");
      m.log.resize(static_cast<size_t>(e->index));  // drop the conflicting suffix
    }
    m.log.push_back(e);
  }
  const int64_t match = prev_index + static_cast<int64_t>(entries.size());
  const int64_t new_commit = std::min(commit, match);
  if (new_commit > m.commit) {
    m.commit = new_commit;
    apply_committed(m);
  }
  reply(true, match);
}

void EtcdCluster::receive_append_reply(Member& m, int from, int64_t term, bool success,
                                       int64_t index, uint64_t read_round) {
  if (term > m.term) {
    trace(m, fmt::format("sees term {} from {}: steps down", term, at(from).name));
    become_follower(m, term, -1);
    return;
  }
  if (m.role != EtcdRole::leader || term != m.term) return;
  m.active[from] = true;
  m.acked_round[from] = std::max(m.acked_round[from], read_round);
  confirm_reads(m);
  if (success) {
    m.match_index[from] = std::max(m.match_index[from], index);
    m.next_index[from] = std::max(m.next_index[from], index + 1);
    advance_commit(m);
    if (m.next_index[from] <= m.last_index()) send_append(m, from, true);
    return;
  }
  m.next_index[from] = std::max<int64_t>(1, std::min(m.next_index[from] - 1, index + 1));
  send_append(m, from, true);
}

void EtcdCluster::advance_commit(Member& leader) {
  for (int64_t n = leader.last_index(); n > leader.commit; --n) {
    if (term_at(leader, n) != leader.term) break;
    int holders = 0;
    for (int i = 0; i < members(); ++i)
      holders += (i == leader.id || leader.match_index[i] >= n) ? 1 : 0;
    if (holders >= majority()) {
      leader.commit = n;
      apply_committed(leader);
      confirm_reads(leader);  // reads waiting for an entry of this term
      broadcast(leader, true);
      return;
    }
  }
}

void EtcdCluster::apply_committed(Member& m) {
  while (m.applied < m.commit) {
    ++m.applied;
    apply(m, *m.log[static_cast<size_t>(m.applied)]);
  }
  serve_reads(m);
}

void EtcdCluster::apply(Member& m, const Entry& e) {
  if (e.path.empty()) {
    // etcd promotes the lessor when the leader applies the first entry of its own term.
    if (m.role == EtcdRole::leader && e.term == m.term && !m.primary) promote(m);
    return;
  }
  const bool unlock = e.path == "/v3/lock/unlock";
  const std::string path = unlock ? "/v3/kv/deleterange" : e.path;
  Applied applied = m.store->apply(
      path, unlock ? EtcdJson{{"key", e.body.value("key", "")}} : e.body, e.lease_id);
  if (applied.granted_lease != 0 && m.primary) {
    const int64_t ttl_us = m.store->lease(applied.granted_lease)->ttl_s * 1'000'000;
    refresh(m, applied.granted_lease, ttl_us, e.client);
  }
  if (applied.revoked_lease != 0) {
    m.expiry_us.erase(applied.revoked_lease);
    m.revoking_since_us.erase(applied.revoked_lease);
  }
  if (!applied.events.empty()) notify_watches(m, applied);
  if (e.index > applied_by_any_) {
    applied_by_any_ = e.index;
    if (options_.observer != nullptr)
      options_.observer->on_applied(e.client, path, e.body, applied);
  }
  if (e.origin == m.id && e.id != 0) {
    if (unlock && applied.http_status == 200) applied.body = EtcdJson::object();  // Unlock: header
    complete(m, e.id, applied.http_status, std::move(applied.body));
  }
}

// ---- requests ----

void EtcdCluster::complete(Member& m, uint64_t id, int http_status, EtcdJson body) {
  const auto it = m.waiting.find(id);
  if (it == m.waiting.end()) return;  // timed out already
  Respond respond = std::move(it->second.respond);
  world_.scheduler().cancel(it->second.timeout);
  m.waiting.erase(it);
  if (http_status == 200) body["header"] = header(m);
  respond(http_status, std::move(body));
}

void EtcdCluster::propose(Member& m, std::shared_ptr<Entry> entry) {
  if (m.role == EtcdRole::leader) {
    receive_proposal(m, std::move(entry));
    return;
  }
  if (m.leader < 0) {  // etcd/raft drops a proposal when there is no leader
    trace(m, "drops a proposal: no leader");
    if (entry->id != 0) complete(m, entry->id, 500, error_body(kUnknown, "raft proposal dropped"));
    return;
  }
  forward_proposal(m, m.leader, std::move(entry), 0);
}

// Peers talk over TCP (rafthttp): a proposal the network drops is sent again after TCP's RTO,
// doubling, while the follower lives and still follows that leader; after kForwardTriesMax tries
// it is given up (the client's request times out, as etcd's does).
void EtcdCluster::forward_proposal(Member& m, int leader, std::shared_ptr<Entry> entry,
                                   int attempt) {
  world_.network().send(
      m.node, at(leader).node, [&] { return fmt::format("etcd proposal {}", entry->path); },
      [this, leader, entry] {
        if (std::exchange(entry->arrived, true)) return;
        receive_proposal(at(leader), entry);
      });
  const int member = m.id;
  const uint64_t incarnation = world_.incarnation(m.node);
  world_.scheduler().after(
      kForwardRtoUs << attempt, [this, member, leader, entry, attempt, incarnation] {
        Member& from = at(member);
        if (entry->arrived || world_.incarnation(from.node) != incarnation ||
            from.leader != leader || attempt + 1 >= kForwardTriesMax)
          return;
        trace(from, fmt::format("forwards proposal {} again (try {})", entry->id, attempt + 2));
        forward_proposal(from, leader, entry, attempt + 1);
      });
}

void EtcdCluster::receive_proposal(Member& leader, std::shared_ptr<Entry> entry) {
  if (leader.role != EtcdRole::leader) return;  // lost, as a proposal to a deposed leader is
  entry->term = leader.term;
  entry->index = leader.last_index() + 1;
  leader.log.push_back(entry);
  leader.match_index[leader.id] = leader.last_index();
  if (majority() == 1) {
    advance_commit(leader);
    return;
  }
  broadcast(leader, true);
}

void EtcdCluster::write(Member& m, int client, const std::string& path, const EtcdJson& body,
                        Respond respond) {
  if (std::optional<Applied> refused = EtcdStore::validate(path, body)) {
    respond(refused->http_status, std::move(refused->body));
    return;
  }
  auto entry = std::make_shared<Entry>(
      Entry{.id = ++next_entry_id_, .origin = m.id, .client = client, .path = path, .body = body});
  if (path == "/v3/lease/grant") {
    entry->lease_id = int_field(body, "ID").value_or(0);
    while (entry->lease_id == 0 || m.store->lease(entry->lease_id) != nullptr) {
      if (entry->lease_id != 0 && int_field(body, "ID").value_or(0) != 0) break;  // given: refused
      entry->lease_id = static_cast<int64_t>(
          (m.id_prefix | (++m.id_suffix & ((uint64_t{1} << 48) - 1))) & ((uint64_t{1} << 63) - 1));
    }
  }
  const uint64_t id = entry->id;
  const int member = m.id;
  const uint64_t incarnation = world_.incarnation(m.node);
  Member::Waiting& w = m.waiting[id];
  w.respond = std::move(respond);
  w.timeout = world_.scheduler().after(
      local_after_us(m, options_.request_timeout_ms * 1000), [this, member, id, incarnation] {
        world_.deliver_at(at(member).node, incarnation, world_.now_us(), [this, member, id] {
          Member& me = at(member);
          const auto it = me.waiting.find(id);
          if (it == me.waiting.end()) return;
          Respond late = std::move(it->second.respond);
          me.waiting.erase(it);
          late(503, error_body(kUnavailable, kTimedOut));
        });
      });
  propose(m, std::move(entry));
}

// ReadIndex: the member learns from its leader an index that is committed and at least as new as
// any write acknowledged before the read began, then waits until it applied that far.
void EtcdCluster::read_index(Member& m, std::function<void(bool)> ready) {
  const uint64_t id = ++m.next_read;
  const int member = m.id;
  const uint64_t incarnation = world_.incarnation(m.node);
  Member::Read read{.id = id, .ready = std::move(ready)};
  read.timeout = world_.scheduler().after(
      local_after_us(m, options_.request_timeout_ms * 1000), [this, member, id, incarnation] {
        world_.deliver_at(at(member).node, incarnation, world_.now_us(), [this, member, id] {
          Member& me = at(member);
          const auto it = std::find_if(me.reads.begin(), me.reads.end(),
                                       [id](const Member::Read& r) { return r.id == id; });
          if (it == me.reads.end()) return;
          std::function<void(bool)> late = std::move(it->ready);
          me.reads.erase(it);
          late(false);
        });
      });
  m.reads.push_back(std::move(read));
  serve_reads(m);
}

void EtcdCluster::serve_reads(Member& m) {
  // Ask the leader for the reads not yet sent; answer those whose index has been applied.
  for (Member::Read& r : m.reads) {
    if (r.sent || r.index >= 0 || m.leader < 0) continue;
    r.sent = true;
    if (m.leader == m.id) {
      receive_read_request(m, m.id, r.id);
      continue;
    }
    const int leader = m.leader;
    const int from = m.id;
    const uint64_t id = r.id;
    world_.network().send(m.node, at(leader).node, "etcd read index",
                          [this, leader, from, id] { receive_read_request(at(leader), from, id); });
    // Over TCP (rafthttp) a dropped request or reply is sent again: ask again after the RTO,
    // doubling, while this member lives and the read is unanswered.
    const uint64_t incarnation = world_.incarnation(m.node);
    if (++r.tries < kForwardTriesMax) {
      world_.scheduler().after(kForwardRtoUs << (r.tries - 1), [this, from, id, incarnation] {
        Member& me = at(from);
        if (world_.incarnation(me.node) != incarnation) return;
        for (Member::Read& read : me.reads) {
          if (read.id != id || read.index >= 0) continue;
          read.sent = false;
          serve_reads(me);
          return;
        }
      });
    }
  }
  std::vector<std::function<void(bool)>> ready;
  for (auto it = m.reads.begin(); it != m.reads.end();) {
    if (it->index >= 0 && it->index <= m.applied) {
      world_.scheduler().cancel(it->timeout);
      ready.push_back(std::move(it->ready));
      it = m.reads.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& fn : ready) fn(true);
}

void EtcdCluster::receive_read_request(Member& leader, int from, uint64_t id) {
  if (leader.role != EtcdRole::leader) return;  // the member asks again once it knows a leader
  leader.read_requests.push_back({.from = from, .id = id});
  confirm_reads(leader);
}

// Starts a heartbeat round for requests that can start one (an entry of this term committed),
// and answers those whose round a majority acknowledged.
void EtcdCluster::confirm_reads(Member& leader) {
  if (leader.read_requests.empty()) return;
  const bool committed_this_term = term_at(leader, leader.commit) == leader.term;
  bool new_round = false;
  for (Member::ReadRequest& r : leader.read_requests) {
    if (r.round == 0 && committed_this_term) {
      if (!new_round) ++leader.read_round;
      new_round = true;
      r.round = leader.read_round;
      r.index = leader.commit;
    }
  }
  if (new_round && majority() > 1) broadcast(leader, false);
  uint64_t confirmed = 0;  // the newest round a majority acknowledged
  for (uint64_t round = leader.read_round; round > 0 && confirmed == 0; --round) {
    int acks = 1;
    for (int i = 0; i < members(); ++i)
      acks += (i != leader.id && leader.acked_round[i] >= round) ? 1 : 0;
    if (acks >= majority()) confirmed = round;
  }
  std::vector<Member::ReadRequest> answered;
  for (auto it = leader.read_requests.begin(); it != leader.read_requests.end();) {
    if (it->round != 0 && it->round <= confirmed) {
      answered.push_back(*it);
      it = leader.read_requests.erase(it);
    } else {
      ++it;
    }
  }
  for (const Member::ReadRequest& r : answered) {
    const uint64_t id = r.id;
    const int64_t index = r.index;
    const int to = r.from;
    const auto answer = [this, to, id, index] {
      Member& m = at(to);
      for (Member::Read& read : m.reads) {
        if (read.id == id) read.index = index;
      }
      serve_reads(m);
    };
    if (to == leader.id) {
      answer();
    } else {
      world_.network().send(leader.node, at(to).node, "etcd read index reply", answer);
    }
  }
}

void EtcdCluster::read(Member& m, const std::string& path, const EtcdJson& body, Respond respond) {
  if (std::optional<Applied> refused = EtcdStore::validate(path, body)) {
    respond(refused->http_status, std::move(refused->body));
    return;
  }
  const int member = m.id;
  read_index(m, [this, member, path, body, respond = std::move(respond)](bool ok) {
    Member& me = at(member);
    if (!ok) {
      respond(503, error_body(kUnavailable, kTimedOut));
      return;
    }
    Applied out = path == "/v3/kv/txn" ? me.store->read_txn(body) : me.store->range(body);
    if (out.http_status == 200) out.body["header"] = header(me);
    respond(out.http_status, std::move(out.body));
  });
}

void EtcdCluster::when_leader(Member& m, std::function<void()> fn) {
  if (m.leader >= 0) {
    fn();
    return;
  }
  m.await_leader.push_back(std::move(fn));
}

// Keepalives are not Raft entries: the leader's lessor renews; a follower forwards to it.
void EtcdCluster::keepalive(Member& m, int client, const EtcdJson& body, Respond respond) {
  const int64_t id = int_field(body, "ID").value_or(0);
  const int member = m.id;
  auto answer = [this, member, id, respond = std::move(respond)](int64_t ttl_s) {
    Member& me = at(member);
    EtcdJson result = {{"header", header(me)}, {"ID", int_json(id)}};
    if (ttl_s > 0) result["TTL"] = int_json(ttl_s);
    respond(200, {{"result", std::move(result)}});
  };
  when_leader(m, [this, member, client, id, answer = std::move(answer)] {
    Member& me = at(member);
    const int leader = me.leader;
    if (leader == member) {
      lease_renew_on_leader(me, client, id, answer);
      return;
    }
    world_.network().send(
        me.node, at(leader).node, "etcd lease renew", [this, leader, member, client, id, answer] {
          lease_renew_on_leader(
              at(leader), client, id, [this, leader, member, answer](int64_t ttl) {
                world_.network().send(at(leader).node, at(member).node, "etcd lease renew reply",
                                      [answer, ttl] { answer(ttl); });
              });
        });
  });
}

void EtcdCluster::lease_renew_on_leader(Member& leader, int client, int64_t id,
                                        std::function<void(int64_t)> done) {
  if (!leader.primary) return;  // deposed meanwhile: the client's call times out
  const LeaseRecord* lease = leader.store->lease(id);
  const auto expiry = leader.expiry_us.find(id);
  const int64_t now = world_.monotonic_us(leader.node);
  if (lease == nullptr || (expiry != leader.expiry_us.end() && expiry->second <= now)) {
    done(0);  // gone, or expired and about to be revoked: etcd answers TTL 0
    return;
  }
  refresh(leader, id, lease->ttl_s * 1'000'000, client);
  done(lease->ttl_s);
}

void EtcdCluster::time_to_live(Member& m, const EtcdJson& body, Respond respond) {
  const int64_t id = int_field(body, "ID").value_or(0);
  const bool with_keys = body.is_object() && body.value("keys", false);
  const int member = m.id;
  when_leader(m, [this, member, id, with_keys, respond = std::move(respond)] {
    const int leader = at(member).leader;
    const auto ask = [this, leader, id, with_keys]() {
      Member& l = at(leader);
      EtcdJson out = {{"ID", int_json(id)}};
      const LeaseRecord* lease = l.store->lease(id);
      if (lease == nullptr) {
        out["TTL"] = int_json(-1);
        return out;
      }
      const auto expiry = l.expiry_us.find(id);
      const int64_t left_s = expiry == l.expiry_us.end()
                                 ? lease->ttl_s
                                 : (expiry->second - world_.monotonic_us(l.node)) / 1'000'000;
      if (left_s != 0) out["TTL"] = int_json(left_s);
      out["grantedTTL"] = int_json(lease->ttl_s);
      if (with_keys && !lease->keys.empty()) {
        EtcdJson keys = EtcdJson::array();
        for (const std::string& k : lease->keys) keys.push_back(base64_encode(k));
        out["keys"] = std::move(keys);
      }
      return out;
    };
    if (leader == member) {
      EtcdJson out = ask();
      out["header"] = header(at(member));
      respond(200, std::move(out));
      return;
    }
    world_.network().send(at(member).node, at(leader).node, "etcd lease timetolive",
                          [this, leader, member, ask, respond] {
                            EtcdJson out = ask();
                            world_.network().send(at(leader).node, at(member).node,
                                                  "etcd lease timetolive reply",
                                                  [this, member, out, respond]() mutable {
                                                    out["header"] = header(at(member));
                                                    respond(200, std::move(out));
                                                  });
                          });
  });
}

void EtcdCluster::status(Member& m, Respond respond) {
  EtcdJson out = {{"header", header(m)},
                  {"version", "3.4.23"},
                  {"raftIndex", int_json(m.commit)},
                  {"raftTerm", int_json(m.term)},
                  {"raftAppliedIndex", int_json(m.applied)}};
  if (m.leader >= 0) out["leader"] = std::to_string(at(m.leader).member_id);
  respond(200, std::move(out));
}

void EtcdCluster::handle(int member, int client, const std::string& path, const EtcdJson& body,
                         Respond respond) {
  wake_up();
  Member& m = at(member);
  if (path == "/v3/kv/range" || (path == "/v3/kv/txn" && !EtcdStore::txn_writes(body))) {
    read(m, path, body, std::move(respond));
  } else if (path == "/v3/kv/put" || path == "/v3/kv/deleterange" || path == "/v3/kv/txn" ||
             path == "/v3/lease/grant" || path == "/v3/lease/revoke" || path == "/v3/lock/unlock") {
    write(m, client, path, body, std::move(respond));
  } else if (path == "/v3/lease/keepalive") {
    keepalive(m, client, body, std::move(respond));
  } else if (path == "/v3/lease/timetolive") {
    time_to_live(m, body, std::move(respond));
  } else if (path == "/v3/maintenance/status") {
    status(m, std::move(respond));
  } else if (path == "/v3/lock/lock") {  // a unary call too: a stream of its one reply
    open_stream(member, client, m.next_internal_watch++, path, body, std::move(respond));
  } else {
    respond(404, error_body(5, "Not Found"));
  }
}

// ---- the lessor ----

void EtcdCluster::refresh(Member& m, int64_t lease, int64_t ttl_us, int client) {
  m.expiry_us[lease] = world_.monotonic_us(m.node) + ttl_us;
  m.revoking_since_us.erase(lease);
  if (options_.observer == nullptr) return;
  // A leader another has already superseded times leases nobody else keeps. Its promotion promises
  // nobody anything (it steps down as it hears the newer term); a renewal it serves is a promise
  // to that client (etcd-io/etcd#15247), but not the lease the true leader times.
  const bool stale = superseded(m);
  if (stale) {
    trace(m, fmt::format("lease {:x}: refreshed in superseded term {}", lease, m.term));
    if (client < 0) return;
  }
  options_.observer->on_lease_refreshed(lease, ttl_us, client, stale);
}

bool EtcdCluster::superseded(const Member& m) const {
  return std::any_of(members_.begin(), members_.end(), [&m](const auto& other) {
    return other->role == EtcdRole::leader && other->term > m.term;
  });
}

void EtcdCluster::promote(Member& m) {
  m.primary = true;
  const int64_t extend_us = options_.election_timeout_ms * 1000;
  trace(m, fmt::format("promotes its lessor: {} lease(s) get {}us more than their TTL",
                       m.store->leases().size(), extend_us));
  for (const auto& [id, lease] : m.store->leases())
    refresh(m, id, extend_us + lease.ttl_s * 1'000'000, -1);
  if (!quiet_) arm(m, kLessor, kLessorTickUs);
}

void EtcdCluster::demote(Member& m) {
  m.primary = false;
  m.expiry_us.clear();  // followers hold every lease for ever
  m.revoking_since_us.clear();
  disarm(m, kLessor);
}

void EtcdCluster::lessor_tick(Member& m) {
  if (!m.primary || m.role != EtcdRole::leader) return;
  const int64_t now = world_.monotonic_us(m.node);
  std::vector<int64_t> expired;
  for (const auto& [id, expiry] : m.expiry_us) {
    if (expiry > now) continue;
    const auto since = m.revoking_since_us.find(id);
    if (since != m.revoking_since_us.end() && now - since->second < kRevokeRetryUs) continue;
    expired.push_back(id);
  }
  for (const int64_t id : expired) {
    m.revoking_since_us[id] = now;
    trace(m, fmt::format("lease {:x} expired: revoking", id));
    propose(m, std::make_shared<Entry>(
                   Entry{.path = "/v3/lease/revoke", .body = {{"ID", int_json(id)}}}));
  }
}

// ---- watches ----

namespace {

EtcdJson event_json(const Event& e, bool prev_kv) {
  EtcdJson out;
  if (e.deleted) {
    out["type"] = "DELETE";
    out["kv"] = {{"key", base64_encode(e.kv.key)}, {"mod_revision", int_json(e.kv.mod_revision)}};
  } else {
    out["kv"] = kv_json(e.kv);
  }
  if (prev_kv && e.had_prev) out["prev_kv"] = kv_json(e.prev);
  return out;
}

}  // namespace

void EtcdCluster::notify_watches(Member& m, const Applied& applied) {
  const int64_t revision = m.store->revision();
  std::vector<uint64_t> ids;
  for (const auto& [id, w] : m.watches) ids.push_back(id);
  for (const uint64_t id : ids) {
    const auto it = m.watches.find(id);
    if (it == m.watches.end() || revision < it->second.next_revision) continue;
    Watch& w = it->second;
    EtcdJson events = EtcdJson::array();
    std::vector<const Event*> hits;
    for (const Event& e : applied.events) {
      if (EtcdStore::in_range(e.kv.key, w.key, w.range_end)) hits.push_back(&e);
    }
    w.next_revision = revision + 1;
    if (hits.empty()) continue;
    if (w.on_event) {
      for (const Event* e : hits) {
        if (m.watches.count(id) == 0) break;  // the callback ended the watch
        w.on_event(*e);
      }
      continue;
    }
    for (const Event* e : hits) events.push_back(event_json(*e, w.prev_kv));
    EtcdJson h = header(m);
    w.push(200, {{"result", {{"header", std::move(h)}, {"events", std::move(events)}}}});
  }
}

void EtcdCluster::open_stream(int member, int client, uint64_t stream, const std::string& path,
                              const EtcdJson& body, Respond push) {
  wake_up();
  Member& m = at(member);
  if (path == "/v3/lock/lock") {
    auto call = std::make_shared<LockCall>(
        LockCall{.stream = stream, .client = client, .body = body, .push = std::move(push)});
    m.locks[stream] = call;
    world_.spawn(m.node, fmt::format("{} lock c{}", m.name, client),
                 [this, member, call] { run_lock(member, call); });
    return;
  }
  if (path != "/v3/watch") {
    push(404, error_body(5, "Not Found"));
    return;
  }
  const EtcdJson& create = body.is_object() && body.contains("create_request")
                               ? body["create_request"]
                               : EtcdJson::object();
  Watch w{.key = bytes_field(create, "key").value_or(""),
          .range_end = bytes_field(create, "range_end").value_or(""),
          .prev_kv = create.value("prev_kv", false),
          .push = push};
  const int64_t start = int_field(create, "start_revision").value_or(0);
  const int64_t now = m.store->revision();
  w.next_revision = start > 0 ? start : now + 1;
  push(200, {{"result", {{"header", header(m)}, {"created", true}}}});
  if (w.next_revision <= now) {
    EtcdJson events = EtcdJson::array();
    for (const Event& e : m.store->events_since(w.next_revision, w.key, w.range_end))
      events.push_back(event_json(e, w.prev_kv));
    if (!events.empty())
      push(200, {{"result", {{"header", header(m)}, {"events", std::move(events)}}}});
    w.next_revision = now + 1;
  }
  m.watches[stream] = std::move(w);
}

void EtcdCluster::cancel_stream(int member, uint64_t stream) {
  wake_up();
  Member& m = at(member);
  m.watches.erase(stream);
  const auto it = m.locks.find(stream);
  if (it == m.locks.end()) return;
  LockCall& call = *it->second;
  call.canceled = true;
  if (call.parked) world_.wake(call.waiter);
}

// ---- the Lock RPC: etcd 3.4's v3lock over concurrency.Mutex, on the member's own server ----

namespace {

EtcdJson prefix_range(const std::string& prefix, const char* order) {
  return {{"key", base64_encode(prefix)},
          {"range_end", base64_encode(lockstep::etcd::prefix_range_end(prefix))},
          {"sort_order", order},
          {"sort_target", "CREATE"},
          {"limit", 1}};
}

}  // namespace

void EtcdCluster::run_lock(int member, std::shared_ptr<LockCall> call) {
  Member& m = at(member);
  // Parks this fiber until the member answers (a write or a read on itself).
  const auto ask = [&](const std::string& path, const EtcdJson& body) {
    auto result = std::make_shared<std::pair<int, EtcdJson>>(0, EtcdJson());
    const Waiter waiter = world_.prepare_park();
    handle(member, call->client, path, body, [this, result, waiter](int status, EtcdJson reply) {
      *result = {status, std::move(reply)};
      world_.wake(waiter);
    });
    world_.park(waiter);  // at once when the member answered synchronously
    return *result;
  };
  const auto fail = [&](const EtcdJson& reply) {
    const std::string text = reply.is_object() && reply.contains("error")
                                 ? reply["error"].get<std::string>()
                                 : kTimedOut;
    call->push(500, error_body(kUnknown, text));
    m.locks.erase(call->stream);
  };
  const std::string name = bytes_field(call->body, "name").value_or("");
  int64_t lease = int_field(call->body, "lease").value_or(0);
  if (lease == 0) {  // NewSession without a lease grants one (concurrency's default TTL)
    auto [status, granted] = ask("/v3/lease/grant", {{"TTL", kDefaultSessionTtlS}});
    if (status != 200) return fail(granted);
    lease = int_field(granted, "ID").value_or(0);
  }
  const std::string prefix = name + "/";
  const std::string my_key = lockstep::etcd::lock_key(name, lease);
  const EtcdJson first_created = prefix_range(prefix, "ASCEND");
  const EtcdJson txn = {
      {"compare",
       {{{"key", base64_encode(my_key)},
         {"target", "CREATE"},
         {"result", "EQUAL"},
         {"create_revision", "0"}}}},
      {"success",
       {{{"request_put", {{"key", base64_encode(my_key)}, {"lease", int_json(lease)}}}},
        {{"request_range", first_created}}}},
      {"failure",
       {{{"request_range", {{"key", base64_encode(my_key)}}}},
        {{"request_range", first_created}}}}};
  auto [status, reply] = ask("/v3/kv/txn", txn);
  if (status != 200) return fail(reply);
  const EtcdJson responses = reply.value("responses", EtcdJson::array());
  int64_t my_rev = int_field(reply["header"], "revision").value_or(0);
  if (!reply.value("succeeded", false)) {
    my_rev = int_field(responses[0]["response_range"]["kvs"][0], "create_revision").value_or(0);
  }
  const EtcdJson owner = responses[1]["response_range"].value("kvs", EtcdJson::array());
  EtcdJson hdr = reply["header"];
  const auto unlock = [&] {
    ask("/v3/kv/deleterange", {{"key", base64_encode(my_key)}});
    m.locks.erase(call->stream);
  };
  if (!owner.empty() && int_field(owner[0], "create_revision").value_or(0) != my_rev) {
    // waitDeletes: wait for every key created before ours to go, the newest first.
    for (int loop = 0;; ++loop) {
      LOCKSTEP_SIM_CHECK(loop < kLockLoopsMax, "a Lock RPC's wait is bounded");
      if (call->canceled) return unlock();
      EtcdJson older = prefix_range(prefix, "DESCEND");
      older["max_create_revision"] = int_json(my_rev - 1);
      auto [read_status, read] = ask("/v3/kv/range", older);
      if (read_status != 200) {
        unlock();
        return fail(read);
      }
      if (!read.contains("kvs")) {
        hdr = read["header"];
        break;  // 3.4.23 answers now, without looking at its own key (etcd-io/etcd#11456)
      }
      const std::string last = bytes_field(read["kvs"][0], "key").value_or("");
      const int64_t from = int_field(read["header"], "revision").value_or(0);
      // waitDelete: a watch on that key from the read's revision, until its DELETE.
      bool deleted = false;
      for (const Event& e : m.store->events_since(from, last, "")) deleted = deleted || e.deleted;
      if (deleted) continue;
      const uint64_t watch_id = m.next_internal_watch++;
      call->waiter = world_.prepare_park();
      call->parked = true;
      m.watches[watch_id] = Watch{.key = last,
                                  .next_revision = m.store->revision() + 1,
                                  .on_event = [this, call, &deleted](const Event& e) {
                                    if (!e.deleted) return;
                                    deleted = true;
                                    world_.wake(call->waiter);
                                  }};
      world_.park(call->waiter);
      call->parked = false;
      m.watches.erase(watch_id);
    }
  }
  if (call->canceled) return unlock();
  const bool exists = m.store->keys().count(my_key) > 0;
  call->push(200, {{"header", std::move(hdr)}, {"key", base64_encode(my_key)}});
  m.locks.erase(call->stream);
  if (options_.observer != nullptr)
    options_.observer->on_lock_returned(call->client, my_key, lease, exists);
}

// ---- crash and restart ----

void EtcdCluster::crash_leader() {
  const int member = leader();
  if (member < 0) {
    world_.trace_line("failover: the cluster has no leader now (an election is under way)");
    return;
  }
  crash(member);
}

void EtcdCluster::on_crash(Member& m) {
  wake_up();  // the others must notice: a quiet cluster would never elect a new leader
  trace(m, fmt::format("crashes: {} request(s), {} watch(es) and {} Lock RPC(s) lost",
                       m.waiting.size() + m.reads.size(), m.watches.size(), m.locks.size()));
  for (auto& [id, w] : m.waiting) world_.scheduler().cancel(w.timeout);
  m.waiting.clear();
  for (Member::Read& r : m.reads) world_.scheduler().cancel(r.timeout);
  m.reads.clear();
  m.read_requests.clear();
  m.await_leader.clear();
  m.watches.clear();
  m.locks.clear();
  m.role = EtcdRole::follower;
  m.leader = -1;
  m.votes.clear();
  m.primary = false;
  m.expiry_us.clear();
  m.revoking_since_us.clear();
  disarm(m, kTick);
  disarm(m, kLessor);
}

void EtcdCluster::on_restart(Member& m) {
  trace(m, fmt::format("restarts in term {} with {} entries, {} applied", m.term, m.last_index(),
                       m.applied));
  reset_election_timer(m);
  wake_up();
  if (!quiet_) arm(m, kTick, options_.heartbeat_ms * 1000);
}

}  // namespace lockstep::sim::etcd
