#include "services/mongo/sim/replica_set.h"

#include <algorithm>
#include <array>
#include <limits>

#include <fmt/format.h>

#include "services/mongo/sim/commands.h"
#include "sim/assert.h"

namespace lockstep::sim {

using mongo::Doc;
using mongo::EntryPtr;
using mongo::MongoOp;
using mongo::Oplog;
using mongo::OpTime;

namespace {

constexpr TimeUs kNever = std::numeric_limits<TimeUs>::min() / 2;
constexpr int kSettleElectionTimeouts = 3;

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

std::string optime_text(OpTime t) { return fmt::format("({}, {})", t.term, t.index); }

// `reply` with `field` inserted just before "ok" (mongod's field order).
Doc with_field_before_ok(const Doc& reply, const char* field, Doc value) {
  Doc out = Doc::object();
  for (auto it = reply.begin(); it != reply.end(); ++it) {
    if (it.key() == "ok") out[field] = value;
    out[it.key()] = it.value();
  }
  if (!out.contains(field)) out[field] = std::move(value);
  return out;
}

bool reply_ok(const Doc& reply) {
  return reply.is_object() && reply.contains("ok") && reply["ok"] == 1;
}

}  // namespace

std::string_view to_string(MongoWriteEvent::Kind kind) {
  switch (kind) {
    case MongoWriteEvent::Kind::insert: return "insert";
    case MongoWriteEvent::Kind::update: return "update";
    case MongoWriteEvent::Kind::remove: return "remove";
    case MongoWriteEvent::Kind::ttl_remove: return "ttl_remove";
    case MongoWriteEvent::Kind::unchanged: return "unchanged";
  }
  return "?";
}

std::string_view to_string(MongoRole role) {
  switch (role) {
    case MongoRole::primary: return "primary";
    case MongoRole::secondary: return "secondary";
    case MongoRole::candidate: return "candidate";
  }
  return "?";
}

// What a member says about itself in heartbeats and acknowledgements.
struct MongoReplicaSet::Status {
  int from = -1;
  int64_t term = 0;
  bool primary = false;
  OpTime last;
  OpTime released;  // a primary's last pushed entry
  int64_t commit = 0;
};

struct MongoReplicaSet::PendingWrite {
  uint64_t id = 0;
  int64_t index = 0;  // the oplog entry the write concern waits for
  mongo::WriteConcern concern;
  Doc reply;
  std::function<void(Doc)> respond;
  EventId timeout_event = kNoEvent;  // wtimeout, cancelled when the write is answered otherwise
};

struct MongoReplicaSet::Member {
  struct Timer {
    uint64_t generation = 0;
    bool armed = false;
    EventId event = kNoEvent;  // until the event runs
  };

  int id = 0;
  std::string name;
  NodeId node = -1;

  // Durable (journaled): survive a crash.
  int64_t term = 1;
  int voted_for = -1;
  int64_t voted_term = 0;
  Oplog oplog;
  mongo::Database db;
  int64_t commit = 0;
  uint64_t next_oid = 0;

  // Volatile.
  MongoRole role = MongoRole::secondary;
  int known_primary = -1;
  TimeUs last_heard_primary_us = 0;
  TimeUs last_election_us = kNever;
  TimeUs jitter_us = 0;
  TimeUs sync_requested_us = kNever;
  std::array<Timer, 3> timers;
  // As primary.
  int64_t released = 0;
  std::vector<int64_t> match;           // per member: the last entry known applied there
  std::vector<TimeUs> last_contact_us;  // per member: when it was last heard from
  std::vector<PendingWrite> waiting;
  // As candidate.
  uint64_t round = 0;
  bool dry_run = false;
  int64_t election_term = 0;
  std::vector<bool> granted;

  OpTime last() const { return mongo::last_optime(oplog); }
};

// --- construction and accessors ---

int64_t heartbeat_interval_for(int64_t election_timeout_ms) {
  return std::max<int64_t>(1, election_timeout_ms / 5);
}

MongoReplicaSet::MongoReplicaSet(World& world, MongoReplicaSetOptions options)
    : world_(world), options_(std::move(options)) {
  LOCKSTEP_SIM_CHECK(options_.members >= 1 && options_.members <= 50,
                     "a replica set has 1 to 50 members");
  LOCKSTEP_SIM_CHECK(options_.replication_delay_ms >= 0, "replication_delay_ms must be >= 0");
  LOCKSTEP_SIM_CHECK(options_.election_timeout_ms > 0, "election_timeout_ms must be positive");
  LOCKSTEP_SIM_CHECK(options_.heartbeat_interval_ms > 0, "heartbeat_interval_ms must be positive");
  LOCKSTEP_SIM_CHECK(options_.heartbeat_interval_ms * 3 <= options_.election_timeout_ms,
                     fmt::format("heartbeat_interval_ms {} must be at most a third of "
                                 "election_timeout_ms {}: a healthy primary would look dead",
                                 options_.heartbeat_interval_ms, options_.election_timeout_ms));
  LOCKSTEP_SIM_CHECK(options_.ttl_monitor_period_ms > 0, "ttl_monitor_period_ms must be positive");
  const int n = options_.members;
  auto initiate = std::make_shared<const mongo::OplogEntry>(
      mongo::OplogEntry{.term = 1, .index = 1, .what = "initiate"});
  for (int i = 0; i < n; ++i) {
    auto m = std::make_unique<Member>();
    m->id = i;
    m->name = options_.member_prefix + std::to_string(i);
    m->node = world_.add_node(m->name);
    m->oplog.push_back(initiate);
    m->commit = 1;
    m->voted_for = 0;
    m->voted_term = 1;
    m->known_primary = 0;
    m->match.assign(static_cast<size_t>(n), 0);
    m->last_contact_us.assign(static_cast<size_t>(n), world_.now_us());
    m->granted.assign(static_cast<size_t>(n), false);
    m->last_heard_primary_us = world_.now_us();
    Member* raw = m.get();
    world_.on_crash(m->node, [this, raw] { on_crash(*raw); });
    world_.on_restart(m->node, [this, raw] { on_restart(*raw); });
    members_.push_back(std::move(m));
  }
  Member& p = at(0);
  p.role = MongoRole::primary;
  p.released = 1;
  p.match.assign(static_cast<size_t>(n), 1);
  world_.trace_linef("mongo {} initiated: {} members, {} primary in term 1", options_.name, n,
                     p.name);
  for (auto& m : members_) {
    const TimeUs interval_us = oscillator_us(*m, options_.heartbeat_interval_ms);
    start_timers(*m, world_.now_us() + interval_us * (m->id + 1) / n);
  }
}

MongoReplicaSet::~MongoReplicaSet() = default;

MongoReplicaSet::Member& MongoReplicaSet::at(int member) {
  LOCKSTEP_SIM_CHECK(member >= 0 && member < members(),
                     fmt::format("no member {} in {}", member, options_.name));
  return *members_[static_cast<size_t>(member)];
}

const MongoReplicaSet::Member& MongoReplicaSet::at(int member) const {
  LOCKSTEP_SIM_CHECK(member >= 0 && member < members(),
                     fmt::format("no member {} in {}", member, options_.name));
  return *members_[static_cast<size_t>(member)];
}

NodeId MongoReplicaSet::node(int member) const { return at(member).node; }
const std::string& MongoReplicaSet::member_name(int member) const { return at(member).name; }
bool MongoReplicaSet::alive(int member) const { return world_.alive(at(member).node); }
MongoRole MongoReplicaSet::role(int member) const { return at(member).role; }
int64_t MongoReplicaSet::term(int member) const { return at(member).term; }
OpTime MongoReplicaSet::last_optime(int member) const { return at(member).last(); }
int64_t MongoReplicaSet::commit_index(int member) const { return at(member).commit; }
const Oplog& MongoReplicaSet::oplog(int member) const { return at(member).oplog; }

int64_t MongoReplicaSet::local_ms(int member) const {
  return floor_div(world_.local_us(at(member).node), 1000);
}

std::vector<MongoDocument> MongoReplicaSet::documents(int member, const std::string& ns) const {
  std::vector<MongoDocument> out;
  if (const mongo::Collection* coll = at(member).db.find(ns)) {
    for (const auto& [rid, doc] : coll->records()) out.push_back(doc);
  }
  return out;
}

std::vector<int> MongoReplicaSet::claiming_primary() const {
  std::vector<int> out;
  for (const auto& m : members_) {
    if (m->role == MongoRole::primary && world_.alive(m->node)) out.push_back(m->id);
  }
  std::stable_sort(out.begin(), out.end(),
                   [this](int a, int b) { return at(a).term > at(b).term; });
  return out;
}

int MongoReplicaSet::primary() const {
  const std::vector<int> claims = claiming_primary();
  return claims.empty() ? -1 : claims.front();
}

void MongoReplicaSet::crash(int member) { world_.crash(at(member).node); }
void MongoReplicaSet::restart(int member) { world_.restart(at(member).node); }

void MongoReplicaSet::trace(const Member& m, std::string_view text) {
  world_.trace_linef("mongo {} {}", m.name, text);
}

TimeUs MongoReplicaSet::oscillator_us(const Member& m, int64_t ms) const {
  return world_.node_clock(m.node).true_duration_for(ms * kUsPerMs);
}

// --- timers and quiescence ---

// A timer is a cancellable scheduler event that then delivers to the member's node (so a pause
// defers it and a crash drops it). timers_pending_ counts armed timers until they fire, are
// dropped or are cancelled, so settle() can tell whether anything but the set is scheduled.
void MongoReplicaSet::arm(Member& m, TimerKind kind, TimeUs at_us) {
  disarm(m, kind);
  Member::Timer& timer = m.timers[static_cast<size_t>(kind)];
  timer.armed = true;
  ++timers_pending_;
  const uint64_t generation = timer.generation;
  const int id = m.id;
  const uint64_t incarnation = world_.incarnation(m.node);
  timer.event = world_.scheduler().at(at_us, [this, id, kind, generation, incarnation] {
    Member& member = at(id);
    member.timers[static_cast<size_t>(kind)].event = kNoEvent;
    world_.deliver_at(
        member.node, incarnation, world_.now_us(),
        [this, id, kind, generation] {
          --timers_pending_;
          fire(id, kind, generation);
        },
        [this, id, kind, generation] {
          --timers_pending_;
          Member::Timer& t = at(id).timers[static_cast<size_t>(kind)];
          if (t.generation == generation) t.armed = false;
        });
  });
}

void MongoReplicaSet::disarm(Member& m, TimerKind kind) {
  Member::Timer& timer = m.timers[static_cast<size_t>(kind)];
  if (timer.event != kNoEvent) {
    world_.scheduler().cancel(timer.event);
    timer.event = kNoEvent;
    --timers_pending_;
  }
  ++timer.generation;  // one already delivering is now stale
  timer.armed = false;
}

void MongoReplicaSet::fire(int member, TimerKind kind, uint64_t generation) {
  Member& m = at(member);
  Member::Timer& timer = m.timers[static_cast<size_t>(kind)];
  if (timer.generation != generation) return;  // superseded
  timer.armed = false;
  switch (kind) {
    case kHeartbeat: heartbeat_tick(m); return;
    case kElection: election_timer(m); return;
    case kTtl: ttl_pass(m); return;
  }
}

void MongoReplicaSet::start_timers(Member& m, TimeUs first_heartbeat_us) {
  if (!world_.alive(m.node)) return;
  if (!m.timers[kHeartbeat].armed) arm(m, kHeartbeat, first_heartbeat_us);
  if (m.role != MongoRole::primary && !m.timers[kElection].armed) {
    m.jitter_us = static_cast<TimeUs>(world_.prng().below(
        static_cast<uint64_t>(oscillator_us(m, options_.election_timeout_ms) * 15 / 100 + 1)));
    arm(m, kElection,
        m.last_heard_primary_us + oscillator_us(m, options_.election_timeout_ms) + m.jitter_us);
  }
  arm_ttl(m);
}

// Any command, crash or restart: a quiet set resumes as if its heartbeats had never stopped.
void MongoReplicaSet::wake_up() {
  idle_since_us_ = -1;
  if (!quiet_) return;
  quiet_ = false;
  world_.trace_linef("mongo {} wakes up", options_.name);
  const TimeUs now = world_.now_us();
  for (auto& m : members_) {
    if (!world_.alive(m->node)) continue;
    m->last_heard_primary_us = now;
    std::fill(m->last_contact_us.begin(), m->last_contact_us.end(), now);
    start_timers(*m,
                 now + oscillator_us(*m, options_.heartbeat_interval_ms) * (m->id + 1) / members());
  }
}

bool MongoReplicaSet::stable() const {
  const int p = primary();
  if (p < 0) return false;
  const Member& leader = at(p);
  if (!leader.waiting.empty() || leader.commit != leader.last().index) return false;
  for (const auto& m : members_) {
    if (!world_.alive(m->node)) continue;
    if (m->id != p && (m->role != MongoRole::secondary || m->known_primary != p)) return false;
    if (m->term != leader.term || m->last() != leader.last()) return false;
  }
  return true;
}

bool MongoReplicaSet::settle() {
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
    disarm(*m, kHeartbeat);
    disarm(*m, kElection);
  }
  world_.trace_linef("mongo {} goes quiet: nothing else is scheduled ({})", options_.name,
                     is_stable ? "stable" : "not settled after 3 election timeouts");
  return true;
}

// --- heartbeats and terms ---

MongoReplicaSet::Status MongoReplicaSet::status_of(const Member& m) const {
  const bool is_primary = m.role == MongoRole::primary;
  return Status{.from = m.id,
                .term = m.term,
                .primary = is_primary,
                .last = m.last(),
                .released = is_primary ? mongo::optime_at(m.oplog, m.released) : OpTime{},
                .commit = m.commit};
}

void MongoReplicaSet::heartbeat_tick(Member& m) {
  if (quiet_ || settle()) return;
  for (int other = 0; other < members(); ++other) {
    if (other != m.id) send_heartbeat(m, other);
  }
  if (m.role == MongoRole::primary) {
    const TimeUs timeout_us = oscillator_us(m, options_.election_timeout_ms);
    int seen = 1;
    for (int other = 0; other < members(); ++other) {
      if (other != m.id &&
          world_.now_us() - m.last_contact_us[static_cast<size_t>(other)] < timeout_us)
        ++seen;
    }
    if (seen < majority()) {
      step_down(m,
                fmt::format("sees {} of {} members within the election timeout", seen, members()));
    }
  }
  arm(m, kHeartbeat, world_.now_us() + oscillator_us(m, options_.heartbeat_interval_ms));
}

void MongoReplicaSet::send_heartbeat(Member& from, int to) {
  const Status s = status_of(from);
  Member& target = at(to);
  world_.network().send(
      from.node, target.node, [&] { return fmt::format("mongo hb t{}", s.term); },
      [this, s, to] {
        Member& me = at(to);
        receive_status(me, s);
        const Status reply = status_of(me);
        world_.network().send(
            me.node, at(s.from).node, [&] { return fmt::format("mongo hb reply t{}", reply.term); },
            [this, reply, back = s.from] { receive_status(at(back), reply); });
      });
}

void MongoReplicaSet::receive_status(Member& me, const Status& s) {
  if (s.term > me.term)
    adopt_term(me, s.term, fmt::format("saw term {} from {}", s.term, at(s.from).name));
  if (me.role == MongoRole::primary) {
    me.last_contact_us[static_cast<size_t>(s.from)] = world_.now_us();
    if (s.term == me.term) note_applied(me, s.from, s.last);
    return;
  }
  if (!s.primary || s.term != me.term) return;
  follow(me, s.from);
  // The primary's commit point applies to our log only where it is a prefix of the primary's: an
  // entry of its term came from it (log matching), and so did its last or released entry.
  const OpTime mine = me.last();
  if (mine.term == s.term || mine == s.released || mine == s.last)
    learn_commit(me, s.commit, mine.index);
  // Every push sent before this message came first (FIFO links): a difference means a lost push
  // or a divergent history.
  if (me.last() != s.released &&
      world_.now_us() - me.sync_requested_us >= oscillator_us(me, options_.heartbeat_interval_ms)) {
    request_sync(me, s.from);
  }
}

void MongoReplicaSet::adopt_term(Member& me, int64_t term, std::string_view why) {
  me.term = term;
  me.known_primary = -1;
  if (me.role == MongoRole::primary) {
    step_down(me, why);
  } else if (me.role == MongoRole::candidate) {
    me.role = MongoRole::secondary;
    trace(me, fmt::format("gives up its candidacy: {}", why));
  }
}

void MongoReplicaSet::follow(Member& me, int primary) {
  if (me.role == MongoRole::candidate) {
    me.role = MongoRole::secondary;
    trace(me, fmt::format("gives up its candidacy: {} is primary in term {}", at(primary).name,
                          me.term));
  }
  if (me.known_primary != primary)
    trace(me, fmt::format("follows {} in term {}", at(primary).name, me.term));
  me.known_primary = primary;
  me.last_heard_primary_us = world_.now_us();
}

void MongoReplicaSet::step_down(Member& me, std::string_view why) {
  if (me.role != MongoRole::primary) return;
  me.role = MongoRole::secondary;
  me.known_primary = -1;
  me.last_heard_primary_us = world_.now_us();
  trace(me, fmt::format("steps down from term {}: {} ({} writes waiting)", me.term, why,
                        me.waiting.size()));
  std::vector<PendingWrite> waiting = std::exchange(me.waiting, {});
  for (PendingWrite& w : waiting) {
    world_.scheduler().cancel(w.timeout_event);
    w.respond(with_field_before_ok(
        w.reply, "writeConcernError",
        Doc{{"code", mongo_error::kPrimarySteppedDown},
            {"codeName", "PrimarySteppedDown"},
            {"errmsg", "Primary stepped down while waiting for replication"}}));
  }
  if (!quiet_ && !me.timers[kElection].armed) {
    arm(me, kElection,
        world_.now_us() + oscillator_us(me, options_.election_timeout_ms) + me.jitter_us);
  }
}

// --- elections ---

void MongoReplicaSet::election_timer(Member& m) {
  if (quiet_ || m.role == MongoRole::primary) return;  // re-armed on wake-up and on step-down
  const TimeUs timeout_us = oscillator_us(m, options_.election_timeout_ms);
  const TimeUs due =
      std::max(m.last_heard_primary_us, m.last_election_us) + timeout_us + m.jitter_us;
  if (world_.now_us() < due) return arm(m, kElection, due);
  m.last_election_us = world_.now_us();
  m.jitter_us =
      static_cast<TimeUs>(world_.prng().below(static_cast<uint64_t>(timeout_us * 15 / 100 + 1)));
  if (m.role == MongoRole::candidate)
    m.role = MongoRole::secondary;  // the last attempt got nowhere
  start_election(m, true);
  arm(m, kElection, world_.now_us() + timeout_us + m.jitter_us);
}

void MongoReplicaSet::start_election(Member& m, bool dry_run) {
  ++m.round;
  m.dry_run = dry_run;
  std::fill(m.granted.begin(), m.granted.end(), false);
  m.granted[static_cast<size_t>(m.id)] = true;
  if (dry_run) {
    m.election_term = m.term + 1;
    trace(m, fmt::format("dry-run election for term {} (last {})", m.election_term,
                         optime_text(m.last())));
  } else {
    m.term += 1;
    m.election_term = m.term;
    m.voted_for = m.id;
    m.voted_term = m.term;
    m.role = MongoRole::candidate;
    m.known_primary = -1;
    trace(m,
          fmt::format("stands for election in term {} (last {})", m.term, optime_text(m.last())));
  }
  if (majority() == 1) {
    if (dry_run) return start_election(m, false);
    return become_primary(m);
  }
  const OpTime last = m.last();
  for (int other = 0; other < members(); ++other) {
    if (other == m.id) continue;
    world_.network().send(
        m.node, at(other).node,
        [&] { return fmt::format("mongo {}vote t{}", dry_run ? "dry " : "", m.election_term); },
        [this, other, candidate = m.id, term = m.election_term, last, dry_run, round = m.round] {
          request_vote(at(other), candidate, term, last, dry_run, round);
        });
  }
}

void MongoReplicaSet::request_vote(Member& voter, int candidate, int64_t term, OpTime last,
                                   bool dry_run, uint64_t round) {
  bool granted = false;
  std::string why;
  if (dry_run) {
    const bool heard_primary =
        voter.role == MongoRole::primary ||
        (voter.known_primary >= 0 && world_.now_us() - voter.last_heard_primary_us <
                                         oscillator_us(voter, options_.election_timeout_ms));
    granted = term > voter.term && last >= voter.last() && !heard_primary;
    why = granted
              ? ""
              : (term <= voter.term ? "stale term"
                                    : (heard_primary ? "a primary is alive" : "candidate behind"));
  } else {
    if (term > voter.term)
      adopt_term(voter, term, fmt::format("vote request from {}", at(candidate).name));
    const bool free_vote = voter.voted_term != voter.term || voter.voted_for == candidate;
    granted = term == voter.term && free_vote && last >= voter.last();
    why = granted ? ""
                  : (term < voter.term ? "stale term"
                                       : (!free_vote ? "already voted" : "candidate behind"));
    if (granted) {
      voter.voted_for = candidate;
      voter.voted_term = term;
      voter.last_heard_primary_us = world_.now_us();  // a granted vote restarts the election timer
    }
  }
  trace(voter, fmt::format("{} {}vote for {} in term {}{}", granted ? "grants" : "refuses",
                           dry_run ? "dry-run " : "", at(candidate).name, term,
                           why.empty() ? "" : " (" + why + ")"));
  world_.network().send(
      voter.node, at(candidate).node,
      [&] { return fmt::format("mongo {}vote reply t{}", dry_run ? "dry " : "", term); },
      [this, candidate, voter_id = voter.id, voter_term = voter.term, granted, dry_run, round] {
        receive_vote(at(candidate), voter_id, voter_term, granted, dry_run, round);
      });
}

void MongoReplicaSet::receive_vote(Member& c, int voter, int64_t term, bool granted, bool dry_run,
                                   uint64_t round) {
  if (term > c.term) {
    adopt_term(c, term, fmt::format("saw term {} from {}", term, at(voter).name));
    return;
  }
  if (round != c.round || dry_run != c.dry_run || !granted) return;
  if (dry_run ? c.role != MongoRole::secondary
              : (c.role != MongoRole::candidate || c.term != c.election_term))
    return;
  if (c.granted[static_cast<size_t>(voter)]) return;  // a duplicated reply
  c.granted[static_cast<size_t>(voter)] = true;
  if (std::count(c.granted.begin(), c.granted.end(), true) != majority()) return;
  if (dry_run) return start_election(c, false);
  become_primary(c);
}

void MongoReplicaSet::become_primary(Member& m) {
  m.role = MongoRole::primary;
  m.known_primary = m.id;
  m.released = m.last().index;
  std::fill(m.match.begin(), m.match.end(), 0);
  std::fill(m.last_contact_us.begin(), m.last_contact_us.end(), world_.now_us());
  m.waiting.clear();
  trace(m, fmt::format("elected primary in term {} (last {})", m.term, optime_text(m.last())));
  append(m, "new primary", {});
  for (int other = 0; other < members(); ++other) {
    if (other != m.id) send_heartbeat(m, other);
  }
  arm_ttl(m);
}

// --- replication ---

void MongoReplicaSet::append(Member& p, std::string what, std::vector<MongoOp> ops) {
  const int64_t index = p.last().index + 1;
  p.oplog.push_back(std::make_shared<const mongo::OplogEntry>(mongo::OplogEntry{
      .term = p.term, .index = index, .what = std::move(what), .ops = std::move(ops)}));
  p.match[static_cast<size_t>(p.id)] = index;
  if (options_.replication_delay_ms == 0) {
    release(p, index, p.term);
  } else {
    // Pushed later from this node: lost if it crashes first, held while it is paused.
    world_.deliver_at(p.node, world_.incarnation(p.node),
                      world_.now_us() + options_.replication_delay_ms * kUsPerMs,
                      [this, id = p.id, index, term = p.term] { release(at(id), index, term); });
  }
  advance_commit(p);
}

void MongoReplicaSet::release(Member& p, int64_t index, int64_t term) {
  if (p.role != MongoRole::primary || p.term != term || index > p.last().index) return;
  if (index <= p.released) return;
  p.released = index;
  const EntryPtr entry = p.oplog[static_cast<size_t>(index - 1)];
  const OpTime prev = mongo::optime_at(p.oplog, index - 1);
  for (int other = 0; other < members(); ++other) {
    if (other == p.id) continue;
    world_.network().send(
        p.node, at(other).node,
        [&] {
          return fmt::format("mongo oplog ({}, {}) {}", entry->term, entry->index, entry->what);
        },
        [this, other, from = p.id, term, prev, entry, commit = p.commit] {
          receive_push(at(other), from, term, prev, entry, commit);
        });
  }
}

void MongoReplicaSet::receive_push(Member& s, int from, int64_t term, OpTime prev,
                                   const EntryPtr& entry, int64_t commit) {
  if (term < s.term) return ack(s, from);  // tells the sender about the newer term
  if (term > s.term) adopt_term(s, term, fmt::format("saw term {} from {}", term, at(from).name));
  if (s.role == MongoRole::primary) return;
  follow(s, from);
  const int64_t have = static_cast<int64_t>(s.oplog.size());
  if (s.last() == prev) {
    s.oplog.push_back(entry);
    mongo::apply_entry(s.db, *entry);
  } else if (entry->index > have ||
             s.oplog[static_cast<size_t>(entry->index - 1)]->optime() != entry->optime()) {
    if (world_.now_us() - s.sync_requested_us >= oscillator_us(s, options_.heartbeat_interval_ms))
      request_sync(s, from);
    return;
  }
  learn_commit(s, commit, entry->index);
  ack(s, from);
}

void MongoReplicaSet::ack(Member& s, int primary) {
  const Status st = status_of(s);
  world_.network().send(
      s.node, at(primary).node,
      [&] { return fmt::format("mongo ack ({}, {})", st.last.term, st.last.index); },
      [this, st, primary] { receive_status(at(primary), st); });
}

void MongoReplicaSet::request_sync(Member& s, int primary) {
  s.sync_requested_us = world_.now_us();
  trace(s, fmt::format("asks {} for a sync from {}", at(primary).name, optime_text(s.last())));
  world_.network().send(s.node, at(primary).node, "mongo sync request",
                        [this, primary, to = s.id] { send_sync(at(primary), to); });
}

void MongoReplicaSet::send_sync(Member& p, int to) {
  if (p.role != MongoRole::primary) return;
  auto entries = std::make_shared<const Oplog>(p.oplog.begin(), p.oplog.begin() + p.released);
  world_.network().send(
      p.node, at(to).node, [&] { return fmt::format("mongo sync {} entries", entries->size()); },
      [this, to, from = p.id, term = p.term, entries, commit = p.commit] {
        receive_sync(at(to), from, term, entries, commit);
      });
}

void MongoReplicaSet::receive_sync(Member& s, int from, int64_t term,
                                   const std::shared_ptr<const Oplog>& entries, int64_t commit) {
  if (term < s.term) return;
  if (term > s.term) adopt_term(s, term, fmt::format("saw term {} from {}", term, at(from).name));
  if (s.role == MongoRole::primary) return;
  follow(s, from);
  const Oplog& theirs = *entries;
  size_t common = 0;
  while (common < s.oplog.size() && common < theirs.size() &&
         s.oplog[common]->optime() == theirs[common]->optime()) {
    ++common;
  }
  // Entries past the snapshot that the same primary sent since are newer, not divergent.
  bool newer_only = common == theirs.size();
  for (size_t i = common; i < s.oplog.size() && newer_only; ++i)
    newer_only = s.oplog[i]->term == term;
  if (!newer_only) {
    const size_t undone = s.oplog.size() - common;
    if (undone > 0) {
      if (s.commit > static_cast<int64_t>(common)) {
        trace(s, fmt::format("rollback below its commit point {} (should not happen)", s.commit));
      }
      for (size_t i = s.oplog.size(); i > common; --i) mongo::undo_entry(s.db, *s.oplog[i - 1]);
      trace(s, fmt::format("rollback {} entries {}..{} to common point {}", undone,
                           optime_text(s.oplog[common]->optime()), optime_text(s.last()),
                           optime_text(mongo::optime_at(s.oplog, static_cast<int64_t>(common)))));
      s.oplog.resize(common);
      s.commit = std::min<int64_t>(s.commit, static_cast<int64_t>(common));
    }
    const size_t applied = theirs.size() - common;
    for (size_t i = common; i < theirs.size(); ++i) {
      s.oplog.push_back(theirs[i]);
      mongo::apply_entry(s.db, *theirs[i]);
    }
    if (applied > 0)
      trace(s, fmt::format("synced {} entries from {} to {}", applied, at(from).name,
                           optime_text(s.last())));
  }
  s.sync_requested_us = kNever;
  learn_commit(s, commit, static_cast<int64_t>(theirs.size()));
  ack(s, from);
}

void MongoReplicaSet::note_applied(Member& p, int member, OpTime op) {
  if (op.index <= 0 || mongo::optime_at(p.oplog, op.index) != op) return;  // diverged: not a match
  int64_t& match = p.match[static_cast<size_t>(member)];
  match = std::max(match, op.index);
  advance_commit(p);
}

void MongoReplicaSet::advance_commit(Member& p) {
  std::vector<int64_t> matches = p.match;
  std::sort(matches.begin(), matches.end(), std::greater<>());
  const int64_t n = matches[static_cast<size_t>(majority() - 1)];
  if (n > p.commit && mongo::optime_at(p.oplog, n).term == p.term) p.commit = n;
  release_waiters(p);
}

void MongoReplicaSet::learn_commit(Member& s, int64_t commit, int64_t matching) {
  s.commit = std::max(s.commit, std::min({commit, matching, s.last().index}));
}

// --- commands and write concern ---

bool MongoReplicaSet::concern_satisfied(const Member& p, const PendingWrite& w) const {
  if (w.concern.majority) return p.commit >= w.index;
  const auto have =
      std::count_if(p.match.begin(), p.match.end(), [&](int64_t m) { return m >= w.index; });
  return have >= w.concern.w;
}

void MongoReplicaSet::await_write_concern(Member& p, PendingWrite w) {
  if (w.concern.unsatisfiable_code != 0) {
    // Applied, and never acknowledged as asked: mongod says so at once, waiting for nothing.
    return w.respond(
        with_field_before_ok(w.reply, "writeConcernError",
                             Doc{{"code", w.concern.unsatisfiable_code},
                                 {"codeName", mongo::code_name(w.concern.unsatisfiable_code)},
                                 {"errmsg", w.concern.unsatisfiable_message},
                                 {"errInfo", {{"writeConcern", w.concern.to_doc()}}}}));
  }
  if (concern_satisfied(p, w)) return w.respond(std::move(w.reply));
  w.id = ++next_write_id_;
  if (w.concern.wtimeout_ms > 0) {
    const TimeUs due = world_.now_us() + oscillator_us(p, w.concern.wtimeout_ms);
    w.timeout_event = world_.scheduler().at(
        due, [this, id = p.id, write = w.id, incarnation = world_.incarnation(p.node)] {
          world_.deliver_at(
              at(id).node, incarnation, world_.now_us(),
              [this, id, write] { write_timeout(id, write); }, [] {});
        });
  }
  p.waiting.push_back(std::move(w));
}

void MongoReplicaSet::release_waiters(Member& p) {
  if (p.waiting.empty()) return;
  std::vector<PendingWrite> done;
  std::erase_if(p.waiting, [&](PendingWrite& w) {
    if (!concern_satisfied(p, w)) return false;
    done.push_back(std::move(w));
    return true;
  });
  for (PendingWrite& w : done) {
    world_.scheduler().cancel(w.timeout_event);
    w.respond(std::move(w.reply));
  }
}

void MongoReplicaSet::write_timeout(int member, uint64_t id) {
  Member& p = at(member);
  const auto found = std::find_if(p.waiting.begin(), p.waiting.end(),
                                  [id](const PendingWrite& w) { return w.id == id; });
  if (found == p.waiting.end()) return;
  PendingWrite w = std::move(*found);
  p.waiting.erase(found);
  trace(p, fmt::format("write concern {} timed out after {}ms at entry {}",
                       mongo::compact(w.concern.to_doc()), w.concern.wtimeout_ms, w.index));
  w.respond(with_field_before_ok(
      w.reply, "writeConcernError",
      Doc{{"code", mongo_error::kWriteConcernFailed},
          {"codeName", "WriteConcernFailed"},
          {"errmsg", "waiting for replication timed out"},
          {"errInfo", {{"wtimeout", true}, {"writeConcern", w.concern.to_doc()}}}}));
}

mongo::Collection MongoReplicaSet::majority_view(const Member& m, const std::string& ns) const {
  mongo::Database view;
  if (const mongo::Collection* coll = m.db.find(ns)) view.get_or_create(ns) = *coll;
  for (auto e = m.oplog.rbegin(); e != m.oplog.rend() && (*e)->index > m.commit; ++e) {
    for (auto op = (*e)->ops.rbegin(); op != (*e)->ops.rend(); ++op) {
      if (op->ns == ns && op->kind != MongoOp::Kind::create_index) view.undo(*op);
    }
  }
  const mongo::Collection* coll = view.find(ns);
  return coll ? *coll : mongo::Collection();
}

MongoDocument MongoReplicaSet::hello_reply(const Member& m, const std::string& command) const {
  Doc hosts = Doc::array();
  for (const auto& member : members_) hosts.push_back(member->name);
  const bool is_primary = m.role == MongoRole::primary;
  Doc reply{{command == "hello" ? "isWritablePrimary" : "ismaster", is_primary},
            {"secondary", m.role == MongoRole::secondary},
            {"setName", options_.name},
            {"setVersion", 1},
            {"hosts", std::move(hosts)}};
  if (m.known_primary >= 0) reply["primary"] = at(m.known_primary).name;
  reply["me"] = m.name;
  if (is_primary) reply["electionId"] = Doc{{"$oid", fmt::format("7fffffff{:016x}", m.term)}};
  reply["maxWireVersion"] = 17;
  reply["minWireVersion"] = 0;
  reply["ok"] = 1.0;
  return reply;
}

MongoDocument MongoReplicaSet::next_object_id(Member& m) {
  const int64_t seconds = floor_div(world_.local_us(m.node), kUsPerSec);
  const uint64_t process =
      (static_cast<uint64_t>(m.id) << 16) | (world_.incarnation(m.node) & 0xffff);
  const uint64_t counter = m.next_oid++ & 0xffffff;
  return make_document(
      "$oid", fmt::format("{:08x}{:010x}{:06x}", static_cast<uint32_t>(seconds), process, counter));
}

void MongoReplicaSet::handle_command(int member, int client, const std::string& database,
                                     const MongoDocument& command,
                                     std::function<void(MongoDocument)> respond) {
  Member& m = at(member);
  LOCKSTEP_SIM_CHECK(world_.alive(m.node), m.name + " is down: it executes nothing");
  wake_up();
  const std::string name = mongo::command_name(command);
  switch (mongo::command_kind(command)) {
    case mongo::CommandKind::hello: return respond(hello_reply(m, name));
    case mongo::CommandKind::ping: return respond(Doc{{"ok", 1.0}});
    case mongo::CommandKind::unknown:
      return respond(mongo::MongoError(mongo_error::kCommandNotFound,
                                       fmt::format("no such command: '{}'", name))
                         .reply());
    case mongo::CommandKind::write:
      if (m.role != MongoRole::primary) {
        Doc reply = mongo::MongoError(mongo_error::kNotWritablePrimary, "not primary").reply();
        return respond(std::move(reply));
      }
      break;
    case mongo::CommandKind::read:
      if (m.role != MongoRole::primary) {
        return respond(mongo::MongoError(13435, "not primary and secondaryOk=false").reply());
      }
      break;
  }
  const int64_t now_ms = local_ms(member);
  mongo::CommandContext ctx{
      .db = m.db,
      .database = database,
      .now_ms = now_ms,
      .members = members(),
      .next_id = [this, &m] { return next_object_id(m); },
      .majority_view = [this, &m](const std::string& ns) { return majority_view(m, ns); }};
  mongo::CommandResult result = mongo::run_data_command(command, ctx);
  const Doc& target = command.begin().value();
  if (!result.ops.empty()) {
    commit_write(m, std::move(result.ops),
                 name + " " + (target.is_string() ? target.get<std::string>() : "?"), client,
                 now_ms, false);
  }
  if (target.is_string())
    notify_unchanged(m, database + "." + target.get<std::string>(), result.unchanged, client,
                     now_ms);
  if (!result.is_write || !reply_ok(result.reply)) return respond(std::move(result.reply));
  await_write_concern(m, PendingWrite{.index = m.last().index,
                                      .concern = result.write_concern,
                                      .reply = std::move(result.reply),
                                      .respond = std::move(respond)});
}

void MongoReplicaSet::notify_unchanged(const Member& p, const std::string& ns,
                                       const std::vector<Doc>& unchanged, int client,
                                       int64_t now_ms) {
  if (options_.observer == nullptr) return;
  for (const Doc& doc : unchanged) {
    options_.observer->on_mongo_write(p.name,
                                      MongoWriteEvent{.kind = MongoWriteEvent::Kind::unchanged,
                                                      .ns = ns,
                                                      .before = doc,
                                                      .after = doc,
                                                      .client = client,
                                                      .now_ms = now_ms});
  }
}

void MongoReplicaSet::commit_write(Member& p, std::vector<MongoOp> ops, const std::string& what,
                                   int client, int64_t now_ms, bool ttl) {
  if (options_.observer != nullptr) {
    for (const MongoOp& op : ops) {
      MongoWriteEvent e{
          .ns = op.ns, .before = Doc(), .after = Doc(), .client = client, .now_ms = now_ms};
      switch (op.kind) {
        case MongoOp::Kind::insert:
          e.kind = MongoWriteEvent::Kind::insert;
          e.after = op.after;
          break;
        case MongoOp::Kind::update:
          e.kind = MongoWriteEvent::Kind::update;
          e.before = op.before;
          e.after = op.after;
          break;
        case MongoOp::Kind::remove:
          e.kind = ttl ? MongoWriteEvent::Kind::ttl_remove : MongoWriteEvent::Kind::remove;
          e.before = op.before;
          break;
        case MongoOp::Kind::create_collection:
        case MongoOp::Kind::create_index: continue;
      }
      options_.observer->on_mongo_write(p.name, e);
    }
  }
  append(p, what, std::move(ops));
  arm_ttl(p);
}

// --- TTL monitor ---

void MongoReplicaSet::arm_ttl(Member& m) {
  if (m.role != MongoRole::primary || m.timers[kTtl].armed || !world_.alive(m.node)) return;
  bool any = false;
  for (const auto& [ns, coll] : m.db.collections()) any = any || coll.has_ttl_documents();
  if (!any) return;
  const TimeUs period_us = options_.ttl_monitor_period_ms * kUsPerMs;
  arm(m, kTtl, (world_.now_us() / period_us + 1) * period_us);
}

void MongoReplicaSet::ttl_pass(Member& m) {
  if (m.role != MongoRole::primary) return;
  const int64_t now_ms = local_ms(m.id);
  std::vector<MongoOp> ops;
  for (auto& [ns, coll] : m.db.collections()) {
    mongo::Collection* c = m.db.find(ns);
    for (const int64_t rid : coll.ttl_expired(now_ms)) {
      Doc before = c->records().at(rid);
      c->remove(rid);
      ops.push_back(MongoOp{.kind = MongoOp::Kind::remove, .ns = ns, .before = std::move(before)});
    }
  }
  trace(m, fmt::format("TTL monitor pass at {}: {} expired", now_ms, ops.size()));
  if (!ops.empty()) commit_write(m, std::move(ops), "ttl", -1, now_ms, true);
  arm_ttl(m);
}

// --- crash and restart ---

void MongoReplicaSet::on_crash(Member& m) {
  const size_t dropped = m.waiting.size();
  for (const PendingWrite& w : m.waiting) world_.scheduler().cancel(w.timeout_event);
  m.waiting.clear();
  m.role = MongoRole::secondary;
  m.known_primary = -1;
  for (const TimerKind kind : {kHeartbeat, kElection, kTtl}) disarm(m, kind);
  trace(m, fmt::format(
               "crash: term {}, oplog {}, data kept (journaled); {} waiting writes get no reply",
               m.term, optime_text(m.last()), dropped));
  wake_up();
}

void MongoReplicaSet::on_restart(Member& m) {
  m.role = MongoRole::secondary;
  m.known_primary = -1;
  m.last_heard_primary_us = world_.now_us();
  m.last_election_us = kNever;
  m.sync_requested_us = kNever;
  trace(m, fmt::format("restart as secondary: term {}, oplog {}", m.term, optime_text(m.last())));
  wake_up();
  start_timers(m, world_.now_us());
}

}  // namespace lockstep::sim
