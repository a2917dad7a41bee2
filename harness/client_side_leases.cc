#include "harness/client_side_leases.h"

#include <algorithm>

namespace lockstep {

namespace {

constexpr const char* kServer = "server";

}  // namespace

const ClientSideLeases::Grant* ClientSideLeases::last_grant_before(const std::string& key,
                                                                   TimeUs t_us,
                                                                   const std::string& value) const {
  auto it = grants_.find(key);
  if (it == grants_.end()) return nullptr;
  const Grant* last = nullptr;
  for (const Grant& g : it->second) {  // in the order they completed
    if (g.completed_us < t_us || (g.completed_us == t_us && g.value == value)) last = &g;
  }
  return last;
}

void ClientSideLeases::acquired(int client, const Lock& lock, TimeUs invoked_us) {
  std::lock_guard<std::mutex> guard(mutex_);
  const TimeUs now_us = recorder_.now_us();
  grants_[lock.key()].push_back(
      {.client = client, .value = lock.unique_value(), .completed_us = now_us});
  recorder_.record({.kind = EventKind::grant,
                    .client = client,
                    .key = lock.key(),
                    .has_token = lock.fencing_token().has_value(),
                    .token = lock.fencing_token().value_or(0),
                    .server = kServer,
                    .value = lock.unique_value(),
                    .ttl_us = std::max<TimeUs>(0, invoked_us + lock.ttl_ms() * 1000 - now_us),
                    .detail = "derived from the client"});
}

void ClientSideLeases::release_sent(int client, const Lock& lock) {
  std::lock_guard<std::mutex> guard(mutex_);
  recorder_.record({.kind = EventKind::revoke,
                    .client = client,
                    .key = lock.key(),
                    .server = kServer,
                    .value = lock.unique_value(),
                    .detail = "release sent (derived from the client)"});
}

void ClientSideLeases::released(int client, const Lock& lock, TimeUs invoked_us) {
  std::lock_guard<std::mutex> guard(mutex_);
  const Grant* holder = last_grant_before(lock.key(), invoked_us, lock.unique_value());
  if (holder == nullptr || holder->value == lock.unique_value())
    return;  // ours, already ended when sent
  recorder_.record(
      {.kind = EventKind::revoke,
       .client = client,
       .key = lock.key(),
       .server = kServer,
       .value = holder->value,
       .detail = "a successful release after another client's grant (derived from the clients)"});
}

void ClientSideLeases::extended(int client, const Lock& lock, int64_t ttl_ms, TimeUs invoked_us) {
  std::lock_guard<std::mutex> guard(mutex_);
  const TimeUs now_us = recorder_.now_us();
  const Grant* holder = last_grant_before(lock.key(), invoked_us, lock.unique_value());
  recorder_.record({.kind = EventKind::extend,
                    .client = client,
                    .key = lock.key(),
                    .server = kServer,
                    .value = holder != nullptr ? holder->value : lock.unique_value(),
                    .ttl_us = std::max<TimeUs>(0, invoked_us + ttl_ms * 1000 - now_us),
                    .detail = "derived from the client"});
}

}  // namespace lockstep
