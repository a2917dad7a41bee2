#include "services/redis/sim/keyspace.h"

#include <utility>

namespace lockstep::sim {
namespace {

int64_t ttl_of(int64_t expire_at_ms, int64_t now_ms) {
  return expire_at_ms == kNoExpiry ? -1 : expire_at_ms - now_ms;
}

}  // namespace

const Entry* Keyspace::lookup(const std::string& key, int64_t now_ms, ChangeSink& sink) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return nullptr;
  if (!is_expired(it->second, now_ms)) return &it->second;
  if (!expire_on_access_) return nullptr;
  KeyChange change{
      .kind = KeyChange::Kind::expired, .key = key, .value = std::move(it->second.value)};
  entries_.erase(it);
  sink.on_change(change);
  return nullptr;
}

void Keyspace::set(const std::string& key, std::string value, int64_t expire_at_ms, int64_t now_ms,
                   ChangeSink& sink) {
  Entry& e = entries_[key];
  e.value = std::move(value);
  e.expire_at_ms = expire_at_ms;
  sink.on_change({.kind = KeyChange::Kind::set,
                  .key = key,
                  .value = e.value,
                  .expire_at_ms = expire_at_ms,
                  .ttl_ms = ttl_of(expire_at_ms, now_ms)});
}

bool Keyspace::del(const std::string& key, int64_t now_ms, ChangeSink& sink) {
  if (lookup(key, now_ms, sink) == nullptr) return false;
  auto it = entries_.find(key);
  KeyChange change{.kind = KeyChange::Kind::del, .key = key, .value = std::move(it->second.value)};
  entries_.erase(it);
  sink.on_change(change);
  return true;
}

bool Keyspace::set_expire(const std::string& key, int64_t expire_at_ms, int64_t now_ms,
                          ChangeSink& sink) {
  if (lookup(key, now_ms, sink) == nullptr) return false;
  Entry& e = entries_.find(key)->second;
  e.expire_at_ms = expire_at_ms;
  sink.on_change({.kind = KeyChange::Kind::pexpire,
                  .key = key,
                  .value = e.value,
                  .expire_at_ms = expire_at_ms,
                  .ttl_ms = ttl_of(expire_at_ms, now_ms)});
  return true;
}

void Keyspace::apply(const KeyChange& change) {
  switch (change.kind) {
    case KeyChange::Kind::set:
      entries_[change.key] = Entry{.value = change.value, .expire_at_ms = change.expire_at_ms};
      return;
    case KeyChange::Kind::pexpire: {
      auto it = entries_.find(change.key);
      if (it != entries_.end()) it->second.expire_at_ms = change.expire_at_ms;
      return;
    }
    case KeyChange::Kind::del:
    case KeyChange::Kind::expired: entries_.erase(change.key); return;
  }
}

const Entry* Keyspace::peek(const std::string& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

}  // namespace lockstep::sim
