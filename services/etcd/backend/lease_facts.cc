#include "services/etcd/backend/lease_facts.h"

#include <algorithm>

#include <fmt/format.h>

#include "services/etcd/client/etcd_json.h"

namespace lockstep {

namespace {

constexpr std::string_view kCluster = "etcd";

}  // namespace

std::string EtcdLeaseFacts::resource_of(const std::string& key) const {
  if (!key.starts_with(key_prefix_)) return {};
  const size_t slash = key.rfind('/');
  if (slash == std::string::npos || slash < key_prefix_.size()) return {};
  return key.substr(key_prefix_.size(), slash - key_prefix_.size());
}

std::string EtcdLeaseFacts::value_of(int client, const std::string& resource) const {
  const auto value = acquiring_.find({client, resource});
  return value == acquiring_.end() ? std::string() : value->second;
}

std::string EtcdLeaseFacts::value_of_put(int client, const std::string& resource,
                                         const std::string& key_value) const {
  const auto values = acquired_.find({client, resource});
  if (values != acquired_.end() && values->second.contains(key_value)) return key_value;
  return value_of(client, resource);
}

void EtcdLeaseFacts::record(EventKind kind, int client, const std::string& resource,
                            const Owner& owner, int64_t ttl_us, uint64_t token,
                            std::string detail) {
  if (owner.value.empty()) return;  // a lease no acquire of ours made
  HistoryEvent e{.kind = kind,
                 .client = client,
                 .key = resource,
                 .server = std::string(kCluster),
                 .value = owner.value,
                 .ttl_us = std::max<int64_t>(0, ttl_us),
                 .detail = std::move(detail)};
  if (kind == EventKind::grant && ttl_us > 0 && owner.promised_since_us < now_us_())
    e.lease_since_us = owner.promised_since_us;
  if (token != 0) {
    e.has_token = true;
    e.token = token;
  }
  recorder_.record(std::move(e));
}

void EtcdLeaseFacts::on_applied(int client, const std::string& path, const EtcdJson&,
                                const sim::etcd::Applied& applied) {
  const TimeUs now = now_us_();
  if (applied.granted_lease != 0) {
    Owner& owner = owners_[applied.granted_lease];
    owner.client = client;
    const int64_t ttl_s = etcd::int_field(applied.body, "TTL").value_or(0);
    if (now + ttl_s * 1'000'000 > owner.promised_until_us) {
      owner.promised_since_us = now;
      owner.promised_until_us = now + ttl_s * 1'000'000;
    }
  }
  // Who holds each resource the write touched, before and after it.
  std::map<std::string, std::pair<int64_t, Entry>> before;  // resource -> (create rev, entry)
  for (const sim::etcd::Event& e : applied.events) {
    const std::string resource = resource_of(e.kv.key);
    if (resource.empty() || before.count(resource) != 0) continue;
    const auto& queue = queues_[resource];
    before[resource] = queue.empty() ? std::pair<int64_t, Entry>{0, {}}
                                     : std::pair<int64_t, Entry>(*queue.begin());
  }
  for (const sim::etcd::Event& e : applied.events) {
    const std::string resource = resource_of(e.kv.key);
    if (resource.empty()) continue;
    auto& queue = queues_[resource];
    if (e.deleted) {
      std::erase_if(queue, [&e](const auto& item) { return item.second.key == e.kv.key; });
      continue;
    }
    queue[e.kv.create_revision] = Entry{.key = e.kv.key, .lease = e.kv.lease};
    // The lease now names its lock: it is the value its client acquires that lock with.
    const auto owner = owners_.find(e.kv.lease);
    if (owner != owners_.end() && owner->second.value.empty())
      owner->second.value = value_of_put(owner->second.client, resource, e.kv.value);
  }
  for (const auto& [resource, held] : before) {
    auto& queue = queues_[resource];
    const int64_t now_first = queue.empty() ? 0 : queue.begin()->first;
    if (now_first == held.first) continue;  // same holder
    if (held.first != 0 && client >= 0) {
      const auto owner = owners_.find(held.second.lease);
      if (owner != owners_.end()) {
        record(EventKind::revoke, client, resource, owner->second, 0, 0,
               fmt::format("{} of {}", path, held.second.key));
      }
    }
    if (now_first != 0) {
      const Entry& next = queue.begin()->second;
      const auto owner = owners_.find(next.lease);
      if (owner != owners_.end()) {
        record(EventKind::grant, owner->second.client, resource, owner->second,
               owner->second.promised_until_us - now, static_cast<uint64_t>(now_first), next.key);
      }
    }
    if (queue.empty()) queues_.erase(resource);
  }
  if (applied.revoked_lease != 0) owners_.erase(applied.revoked_lease);
}

void EtcdLeaseFacts::on_lease_refreshed(int64_t lease, int64_t ttl_us, int client,
                                        bool superseded) {
  const auto owner = owners_.find(lease);
  if (owner == owners_.end()) return;
  // A deposed leader's renewal is recorded as what it told its holder, but it does not move the
  // lease the cluster times: a grant that comes later is promised what the true leader keeps.
  if (!superseded) {
    owner->second.promised_since_us = now_us_();
    owner->second.promised_until_us = owner->second.promised_since_us + ttl_us;
  }
  for (const auto& [resource, queue] : queues_) {
    if (!queue.empty() && queue.begin()->second.lease == lease) {
      record(EventKind::extend, client, resource, owner->second, ttl_us, 0,
             client < 0   ? "a new leader's promotion"
             : superseded ? "keepalive served by a deposed leader"
                          : "keepalive");
    }
  }
}

void EtcdLeaseFacts::on_lock_returned(int client, const std::string& key, int64_t lease,
                                      bool key_exists) {
  if (key_exists) return;  // its grant was recorded when the key came first
  const std::string resource = resource_of(key);
  const auto owner = owners_.find(lease);
  Owner told = owner != owners_.end() ? owner->second : Owner{};
  if (told.value.empty()) told.value = value_of(client, resource);
  record(EventKind::grant, client, resource, told, 0, 0,
         fmt::format("the Lock RPC returned {}, which no longer exists (etcd-io/etcd#11456)", key));
}

}  // namespace lockstep
