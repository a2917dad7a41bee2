#include "services/redis/sim/redis_node.h"

#include <algorithm>
#include <map>
#include <string>

#include <fmt/format.h>

#include "services/redis/sim/commands.h"
#include "sim/assert.h"

namespace lockstep::sim {
namespace {

KeyspaceEvent::Kind event_kind(KeyChange::Kind kind) {
  switch (kind) {
    case KeyChange::Kind::set: return KeyspaceEvent::Kind::set;
    case KeyChange::Kind::del: return KeyspaceEvent::Kind::del;
    case KeyChange::Kind::pexpire: return KeyspaceEvent::Kind::pexpire;
    case KeyChange::Kind::expired: return KeyspaceEvent::Kind::expired;
  }
  return KeyspaceEvent::Kind::set;
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

std::string_view to_string(KeyspaceEvent::Kind kind) {
  switch (kind) {
    case KeyspaceEvent::Kind::set: return "set";
    case KeyspaceEvent::Kind::del: return "del";
    case KeyspaceEvent::Kind::pexpire: return "pexpire";
    case KeyspaceEvent::Kind::expired: return "expired";
  }
  return "?";
}

std::string_view to_string(Persistence persistence) {
  switch (persistence) {
    case Persistence::none: return "none";
    case Persistence::everysec: return "everysec";
    case Persistence::always: return "always";
  }
  return "?";
}

RedisNode::RedisNode(World& world, RedisNodeOptions options)
    : world_(world),
      options_(std::move(options)),
      node_(world_.add_node(options_.name, options_.clock)),
      lua_(take_lua_engine(options_.lua)) {
  LOCKSTEP_SIM_CHECK(options_.fsync_period_ms > 0, "fsync_period_ms must be positive");
  world_.on_crash(node_, [this] { on_crash(); });
  world_.on_restart(node_, [this] { on_restart(); });
}

int64_t RedisNode::local_ms() const { return floor_div(world_.local_us(node_), 1000); }

void RedisNode::trace(std::string_view text) {
  world_.trace_linef("redis {} {}", options_.name, text);
}

void RedisNode::Recorder::on_change(const KeyChange& change) {
  batch_.push_back(change);
  if (node_.is_replica()) return;  // a replica's own changes (expiry) are not its clients' acts
  node_.notify(change, client_, /*replicated=*/false);
}

void RedisNode::notify(const KeyChange& change, int client, bool replicated) {
  if (options_.observer == nullptr) return;
  const bool timed = change.kind == KeyChange::Kind::set || change.kind == KeyChange::Kind::pexpire;
  const KeyspaceEvent event{.kind = event_kind(change.kind),
                            .key = change.key,
                            .value = change.value,
                            .ttl_ms = timed ? change.ttl_ms : -1,
                            .client = client,
                            .replicated = replicated};
  options_.observer->on_keyspace_event(options_.name, event);
}

RedisReply RedisNode::execute(const std::vector<std::string>& argv, int client) {
  LOCKSTEP_SIM_CHECK(world_.alive(node_), options_.name + " is down: it executes nothing");
  recorder_.begin(client);
  CommandContext ctx{.keyspace = keyspace_,
                     .now_ms = local_ms(),
                     .sink = recorder_,
                     .lua = lua_.get(),
                     .read_only = is_replica()};
  RedisReply reply = run_command(argv, ctx);
  commit(recorder_.take());
  return reply;
}

// --- persistence ---

void RedisNode::commit(Batch batch) {
  if (batch.empty()) return;
  if (options_.persistence == Persistence::everysec) {
    unsynced_ = true;
    schedule_fsync();
  }
  if (!is_replica()) replicate(std::make_shared<const Batch>(std::move(batch)));
}

void RedisNode::schedule_fsync() {
  if (fsync_pending_) return;
  fsync_pending_ = true;
  const TimeUs period_us = options_.fsync_period_ms * kUsPerMs;
  const TimeUs next_us = (world_.now_us() / period_us + 1) * period_us;
  world_.deliver_at(node_, world_.incarnation(node_), next_us, [this] { fsync(); });
}

void RedisNode::fsync() {
  fsync_pending_ = false;
  if (!unsynced_) return;
  durable_ = keyspace_;
  unsynced_ = false;
  trace(fmt::format("fsync {} keys", durable_.size()));
}

void RedisNode::on_crash() {
  lua_->flush();  // the script cache lives in memory only
  fsync_pending_ = false;
  unsynced_ = false;
  switch (options_.persistence) {
    case Persistence::none: keyspace_.clear(); break;
    case Persistence::everysec: keyspace_ = durable_; break;
    case Persistence::always: break;
  }
  keyspace_.set_expire_on_access(!is_replica());
  trace(fmt::format("crash: {} keys survive (persistence {})", keyspace_.size(),
                    to_string(options_.persistence)));
}

// A restarted primary has a new replication id: its replicas full-sync from it (Redis does so
// when they reconnect), so one that restarted empty empties them.
void RedisNode::on_restart() {
  if (is_replica()) resync("restarted");
  for (const ReplicaLink& link : replicas_) {
    RedisNode* replica = link.replica;
    world_.network().send(
        node_, replica->node_, [&] { return fmt::format("repl {} fullsync", options_.name); },
        [replica, from = this, id = link.link_id] {
          if (replica->primary_ == from && replica->link_id_ == id) {
            replica->resync("primary restarted");
          }
        });
  }
}

// --- replication ---

void RedisNode::add_replica(RedisNode& replica, ReplicationOptions options) {
  LOCKSTEP_SIM_CHECK(&replica != this, "a node cannot replicate itself");
  LOCKSTEP_SIM_CHECK(!is_replica(), "replicas do not have replicas (no chains)");
  LOCKSTEP_SIM_CHECK(!replica.is_replica() && replica.replicas_.empty(),
                     replica.name() + " already takes part in replication");
  LOCKSTEP_SIM_CHECK(options.replication_delay_ms >= 0, "replication delay must be >= 0");
  replica.primary_ = this;
  replica.link_id_ = ++replica.next_link_id_;
  replica.keyspace_.set_expire_on_access(false);
  replicas_.push_back(
      {.replica = &replica, .delay_ms = options.replication_delay_ms, .link_id = replica.link_id_});
  replica.resync("attached");
}

void RedisNode::promote() {
  LOCKSTEP_SIM_CHECK(is_replica(), options_.name + " is not a replica");
  primary_->drop_replica(this);
  primary_ = nullptr;
  link_id_ = 0;
  needs_full_sync_ = false;
  keyspace_.set_expire_on_access(true);
  trace(fmt::format("promoted to primary with {} keys", keyspace_.size()));
}

void RedisNode::drop_replica(const RedisNode* replica) {
  std::erase_if(replicas_, [replica](const ReplicaLink& l) { return l.replica == replica; });
}

void RedisNode::replicate(const std::shared_ptr<const Batch>& batch) {
  if (replicas_.empty()) return;
  const uint64_t seq = ++repl_seq_;
  for (const ReplicaLink& link : replicas_) {
    if (link.delay_ms == 0) {
      send_batch(link, seq, batch);
      continue;
    }
    // Sent later from this node: lost if it crashes first, held while it is paused.
    world_.deliver_at(node_, world_.incarnation(node_), world_.now_us() + link.delay_ms * kUsPerMs,
                      [this, link, seq, batch] { send_batch(link, seq, batch); });
  }
}

void RedisNode::send_batch(const ReplicaLink& link, uint64_t seq,
                           std::shared_ptr<const Batch> batch) {
  RedisNode* replica = link.replica;
  world_.network().send(
      node_, replica->node_,
      [&] {
        return fmt::format("repl {} #{} {} {}", options_.name, seq, batch->size(),
                           batch->size() == 1 ? batch->front().key : "keys");
      },
      [replica, from = this, id = link.link_id, seq, batch] {
        replica->receive(from, id, seq, *batch);
      });
}

void RedisNode::receive(const RedisNode* from, uint64_t link_id, uint64_t seq, const Batch& batch) {
  if (from != primary_ || link_id != link_id_)
    return trace(fmt::format("ignore repl #{}: stale link", seq));
  if (needs_full_sync_) return resync(fmt::format("due, at #{}", seq));
  if (seq <= repl_seq_) return;  // a duplicate, or already covered by a full sync
  if (seq != repl_seq_ + 1) return resync(fmt::format("gap before #{}", seq));
  for (const KeyChange& change : batch) {
    keyspace_.apply(change);
    notify(change, -1, /*replicated=*/true);
  }
  repl_seq_ = seq;
  if (options_.persistence == Persistence::everysec) {
    unsynced_ = true;
    schedule_fsync();
  }
}

void RedisNode::resync(std::string_view why) {
  if (!world_.alive(primary_->node_)) {
    needs_full_sync_ = true;
    return trace(
        fmt::format("full sync from {} postponed ({}): primary down", primary_->name(), why));
  }
  needs_full_sync_ = false;
  // The observer follows a replica's keys by its replicated events: a full sync is one for each
  // key it drops and each it takes, or a promoted replica's keys would be unknown to it (and a
  // release there would revoke no lease).
  const std::map<std::string, Entry> before = keyspace_.entries();
  keyspace_ = primary_->keyspace_;
  keyspace_.set_expire_on_access(false);
  const int64_t now_ms = local_ms();
  for (const auto& [key, entry] : before) {
    if (keyspace_.peek(key) == nullptr) {
      notify({.kind = KeyChange::Kind::del, .key = key, .value = entry.value}, -1,
             /*replicated=*/true);
    }
  }
  for (const auto& [key, entry] : keyspace_.entries()) {
    const bool expires = entry.expire_at_ms != kNoExpiry;
    notify({.kind = KeyChange::Kind::set,
            .key = key,
            .value = entry.value,
            .expire_at_ms = entry.expire_at_ms,
            .ttl_ms = expires ? std::max<int64_t>(0, entry.expire_at_ms - now_ms) : -1},
           -1, /*replicated=*/true);
  }
  repl_seq_ = primary_->repl_seq_;
  trace(fmt::format("full sync from {} ({}): {} keys at #{}", primary_->name(), why,
                    keyspace_.size(), repl_seq_));
  if (options_.persistence == Persistence::everysec) {
    unsynced_ = true;
    schedule_fsync();
  }
}

}  // namespace lockstep::sim
