#include "services/redis/backend/lease_events.h"

#include <algorithm>
#include <cstdint>

#include "harness/value_lease.h"

namespace lockstep {

namespace {

constexpr int64_t kLeaseForeverUs = INT64_MAX / 4;  // a lease made permanent (SET without PX)
constexpr int64_t kUsPerMs = 1000;

}  // namespace

std::string RedisLeaseEvents::shown_key(const std::string& key) const {
  std::string shown = key;
  if (!lock_prefix_.empty() && shown.rfind(lock_prefix_, 0) == 0) {
    shown = shown.substr(lock_prefix_.size());
  }
  if (hash_tagged_ && shown.size() >= 2 && shown.front() == '{' && shown.back() == '}') {
    shown = shown.substr(1, shown.size() - 2);
  }
  return shown;
}

std::optional<ValueLease> RedisLeaseEvents::value_lease(const sim::KeyspaceEvent& e) const {
  if (!value_ttl_us_ || e.kind != sim::KeyspaceEvent::Kind::set || e.ttl_ms >= 0) {
    return std::nullopt;
  }
  return parse_value_lease(e.value);
}

HistoryEvent RedisLeaseEvents::on_value_lease(std::map<std::string, std::string>& leased,
                                              HistoryEvent event, const sim::KeyspaceEvent& e,
                                              const ValueLease& lease) {
  const auto held = leased.find(e.key);
  const bool same_owner = held != leased.end() && held->second == lease.owner;
  leased[e.key] = lease.owner;
  event.kind = same_owner ? EventKind::extend : EventKind::grant;
  event.value = lease.owner;
  event.ttl_us = std::max<int64_t>(0, value_ttl_us_(e.client, lease.deadline_ms));
  return event;
}

std::optional<HistoryEvent> RedisLeaseEvents::on_event(std::string_view node_name,
                                                       const sim::KeyspaceEvent& e) {
  auto node = leased_.find(node_name);
  if (node == leased_.end()) {
    node = leased_.emplace(std::string(node_name), std::map<std::string, std::string>{}).first;
  }
  std::map<std::string, std::string>& leased = node->second;
  const auto lease = leased.find(e.key);
  const bool held = lease != leased.end();
  const std::optional<ValueLease> value = value_lease(e);
  if (e.replicated) {  // the replica's keys, as its primary made them: no client's act
    if (value) {
      leased[e.key] = value->owner;
    } else if (e.kind == sim::KeyspaceEvent::Kind::del ||
               e.kind == sim::KeyspaceEvent::Kind::expired ||
               (e.kind == sim::KeyspaceEvent::Kind::set && e.ttl_ms < 0)) {
      leased.erase(e.key);
    } else {
      leased[e.key] = e.value;
    }
    return std::nullopt;
  }
  HistoryEvent event{.client = e.client,
                     .key = shown_key(e.key),
                     .server = group_.empty() ? std::string(node_name) : group_,
                     .value = e.value};
  if (value) return on_value_lease(leased, std::move(event), e, *value);
  switch (e.kind) {
    case sim::KeyspaceEvent::Kind::set:
      if (e.ttl_ms >= 0) {
        // Over another owner's lease too: the checkers see the overlap from the two grants.
        leased[e.key] = e.value;
        event.kind = EventKind::grant;
        event.ttl_us = e.ttl_ms * kUsPerMs;
        return event;
      }
      if (!held) return std::nullopt;  // a counter or data: no lease
      if (lease->second == e.value) {  // made permanent by its owner
        event.kind = EventKind::extend;
        event.ttl_us = kLeaseForeverUs;
        return event;
      }
      event.value = lease->second;  // overwritten without expiry: the lease is gone
      leased.erase(lease);
      event.kind = EventKind::revoke;
      event.detail = "overwritten";
      return event;
    case sim::KeyspaceEvent::Kind::pexpire:
      event.ttl_us = e.ttl_ms * kUsPerMs;
      if (held && lease->second == e.value) {
        event.kind = EventKind::extend;
        return event;
      }
      leased[e.key] = e.value;  // SETNX then PEXPIRE: the lease starts now
      event.kind = EventKind::grant;
      return event;
    case sim::KeyspaceEvent::Kind::del:
      if (!held) return std::nullopt;
      if (value_ttl_us_) {  // the removed value's owner, as a TTL lease names the removed value
        const std::optional<ValueLease> removed = parse_value_lease(e.value);
        event.value = removed ? removed->owner : lease->second;
      }
      leased.erase(lease);
      event.kind = EventKind::revoke;
      event.detail = "del";
      return event;
    case sim::KeyspaceEvent::Kind::expired:
      if (held) leased.erase(lease);
      return std::nullopt;  // the lease ran out by the server's clock: nothing was revoked
  }
  return std::nullopt;
}

}  // namespace lockstep
