#pragma once
// What fifo and writer_preference share (internal to checkers/): one sweep over the
// history that, at every successful acquire of an in-process keyed lock, shows the judge the
// acquires on that key still pending, by invocation. Per-key state lives in ordered maps keyed by
// the key string, so nothing depends on hash layout.
#include <algorithm>
#include <map>
#include <string>

#include <fmt/format.h>

#include "checkers/checkers.h"

namespace lockstep::request_order {

// An acquire that has been invoked and not completed yet.
struct Pending {
  int client = -1;
  bool shared = false;
};

// Per key: pending acquires by invoke index (so begin() is the earliest), and per client the
// invoke index of its pending acquire.
struct KeyRequests {
  std::map<size_t, Pending> by_invoke;
  std::map<size_t, Pending> exclusive_by_invoke;
  std::map<int, size_t> invoke_of_client;
};

inline bool is_acquire(const HistoryEvent& e, EventKind kind) {
  return e.kind == kind && e.op == Op::acquire;
}

inline std::string mode_name(bool shared) { return shared ? "shared" : "exclusive"; }

// The invoke index of every acquire that ended without the lock (failed, cleared, timed out), and
// when it ended.
inline std::map<size_t, TimeUs> refused_at(const History& history) {
  std::map<int, size_t> invoke_of_client;
  std::map<size_t, TimeUs> refused;
  for (const HistoryEvent& e : history.events()) {
    if (is_acquire(e, EventKind::invoke)) invoke_of_client[e.client] = e.index;
    if (!is_acquire(e, EventKind::complete) || e.outcome == Outcome::ok) continue;
    if (auto it = invoke_of_client.find(e.client); it != invoke_of_client.end())
      refused[it->second] = e.time_us;
  }
  return refused;
}

// Sweeps acquires and calls judge(grant event, its invoke index, requests pending before it) at
// each successful one, before the granted request leaves the pending set. A request the lock
// refused at the grant's very instant (clear() rejecting its waiters, a max wait running out) is
// not pending for that grant, although its waiter records the refusal only when it runs.
template <class Judge>
inline void sweep_grants(const History& history, Judge judge) {
  const std::map<size_t, TimeUs> refused = refused_at(history);
  auto refused_now = [&refused](size_t invoke, TimeUs now_us) {
    const auto it = refused.find(invoke);
    return it != refused.end() && it->second == now_us;
  };
  std::map<std::string, KeyRequests, std::less<>> keys;
  for (const HistoryEvent& e : history.events()) {
    if (is_acquire(e, EventKind::invoke)) {
      KeyRequests& key = keys[e.key];
      key.by_invoke[e.index] = {e.client, e.shared};
      if (!e.shared) key.exclusive_by_invoke[e.index] = {e.client, e.shared};
      key.invoke_of_client[e.client] = e.index;
    }
    if (!is_acquire(e, EventKind::complete)) continue;
    KeyRequests& key = keys[e.key];
    auto it = key.invoke_of_client.find(e.client);
    if (it == key.invoke_of_client.end())
      continue;  // a completion without an invocation shows nothing
    const size_t invoke = it->second;
    if (e.outcome == Outcome::ok) {
      KeyRequests pending = key;
      std::erase_if(pending.by_invoke,
                    [&](const auto& r) { return refused_now(r.first, e.time_us); });
      std::erase_if(pending.exclusive_by_invoke,
                    [&](const auto& r) { return refused_now(r.first, e.time_us); });
      judge(e, history[invoke], pending);
    }
    key.by_invoke.erase(invoke);
    key.exclusive_by_invoke.erase(invoke);
    key.invoke_of_client.erase(it);
  }
}

inline Violation overtake(const History& history, Invariant invariant, const HistoryEvent& grant,
                          const HistoryEvent& invoke, size_t earlier_invoke,
                          const Pending& earlier) {
  Violation v;
  v.invariant = invariant;
  v.time_us = grant.time_us;
  v.key = grant.key;
  v.clients = {std::min(grant.client, earlier.client), std::max(grant.client, earlier.client)};
  v.clients.erase(std::unique(v.clients.begin(), v.clients.end()), v.clients.end());
  v.events = {earlier_invoke, invoke.index, grant.index};
  std::sort(v.events.begin(), v.events.end());
  v.detail = fmt::format(
      "c{}'s {} acquire of key {} (asked at {}us) was granted at {}us while c{}'s earlier {} "
      "acquire (asked at "
      "{}us) was still waiting",
      grant.client, mode_name(invoke.shared), grant.key, invoke.time_us, grant.time_us,
      earlier.client, mode_name(earlier.shared), history[earlier_invoke].time_us);
  return v;
}

inline void cap(std::vector<Violation>& found, const CheckOptions& options) {
  if (found.size() > options.per_invariant_max) found.resize(options.per_invariant_max);
}

}  // namespace lockstep::request_order
