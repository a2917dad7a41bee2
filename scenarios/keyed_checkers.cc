// The checkers of in-process keyed locks (fifo, writer_preference, no_leak), declared in
// checkers.h. Like the others they sweep the history once in index (= true-time) order; per-key
// state lives in ordered maps keyed by the key string, so nothing depends on hash layout.
#include <algorithm>
#include <map>
#include <string>

#include <fmt/format.h>

#include "scenarios/checkers.h"

namespace lockstep {

namespace {

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

bool is_acquire(const HistoryEvent& e, EventKind kind) { return e.kind == kind && e.op == Op::acquire; }

std::string mode_name(bool shared) { return shared ? "shared" : "exclusive"; }

// Sweeps acquires and calls judge(grant event, its invoke index, requests pending before it) at
// each successful one, before the granted request leaves the pending set.
template <class Judge>
void sweep_grants(const History& history, Judge judge) {
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
    if (it == key.invoke_of_client.end()) continue;  // a completion without an invocation shows nothing
    const size_t invoke = it->second;
    if (e.outcome == Outcome::ok) judge(e, history[invoke], key);
    key.by_invoke.erase(invoke);
    key.exclusive_by_invoke.erase(invoke);
    key.invoke_of_client.erase(it);
  }
}

Violation overtake(const History& history, Invariant invariant, const HistoryEvent& grant, const HistoryEvent& invoke,
                   size_t earlier_invoke, const Pending& earlier) {
  Violation v;
  v.invariant = invariant;
  v.time_us = grant.time_us;
  v.key = grant.key;
  v.clients = {std::min(grant.client, earlier.client), std::max(grant.client, earlier.client)};
  v.clients.erase(std::unique(v.clients.begin(), v.clients.end()), v.clients.end());
  v.events = {earlier_invoke, invoke.index, grant.index};
  std::sort(v.events.begin(), v.events.end());
  v.detail = fmt::format(
      "c{}'s {} acquire of key {} (asked at {}us) was granted at {}us while c{}'s earlier {} acquire (asked at "
      "{}us) was still waiting",
      grant.client, mode_name(invoke.shared), grant.key, invoke.time_us, grant.time_us, earlier.client,
      mode_name(earlier.shared), history[earlier_invoke].time_us);
  return v;
}

void cap(std::vector<Violation>& found, const CheckOptions& options) {
  if (found.size() > options.max_per_invariant) found.resize(options.max_per_invariant);
}

}  // namespace

std::vector<Violation> check_fifo(const History& history, const CheckOptions& options) {
  if (!history.meta.keyed) return {};
  std::vector<Violation> found;
  sweep_grants(history, [&](const HistoryEvent& grant, const HistoryEvent& invoke, const KeyRequests& key) {
    if (invoke.shared || key.by_invoke.empty()) return;
    const auto& [earliest, pending] = *key.by_invoke.begin();
    if (earliest < invoke.index) found.push_back(overtake(history, Invariant::fifo, grant, invoke, earliest, pending));
  });
  cap(found, options);
  return found;
}

std::vector<Violation> check_writer_preference(const History& history, const CheckOptions& options) {
  if (!history.meta.keyed) return {};
  std::vector<Violation> found;
  sweep_grants(history, [&](const HistoryEvent& grant, const HistoryEvent& invoke, const KeyRequests& key) {
    if (!invoke.shared || key.exclusive_by_invoke.empty()) return;
    const auto& [earliest, pending] = *key.exclusive_by_invoke.begin();
    if (earliest < invoke.index) {
      found.push_back(overtake(history, Invariant::writer_preference, grant, invoke, earliest, pending));
    }
  });
  cap(found, options);
  return found;
}

namespace {

// Per key: the clients' view (how many acquires are pending or holding) and the lock's (its
// latest key_state).
struct KeyUse {
  std::map<int, int> active_by_client;  // pending acquire or hold, per client
  int active = 0;
  int64_t entries = 0;
  size_t last_state_event = static_cast<size_t>(-1);
  size_t idle_since = static_cast<size_t>(-1);  // the event that left the key idle
};

void adjust(KeyUse& use, int client, int delta) {
  int& mine = use.active_by_client[client];
  if (delta < 0 && mine == 0) return;  // a release or completion without its start shows nothing
  mine += delta;
  use.active += delta;
}

Violation leak(const History& history, const std::string& key, const KeyUse& use, size_t at) {
  const HistoryEvent& e = history[at];
  Violation v;
  v.invariant = Invariant::no_leak;
  v.time_us = e.time_us;
  v.key = key;
  if (e.client >= 0) v.clients = {e.client};
  v.events = {at};
  if (use.last_state_event != static_cast<size_t>(-1)) v.events.insert(v.events.begin(), use.last_state_event);
  std::sort(v.events.begin(), v.events.end());
  v.detail = fmt::format("no client held or waited for key {} from {}us, but the lock still kept {} entries for it",
                         key, e.time_us, use.entries);
  return v;
}

}  // namespace

std::vector<Violation> check_no_leak(const History& history, const CheckOptions& options) {
  if (!history.meta.keyed) return {};
  std::map<std::string, KeyUse, std::less<>> keys;
  std::vector<Violation> found;
  for (const HistoryEvent& e : history.events()) {
    if (e.kind == EventKind::key_state) {
      KeyUse& use = keys[e.key];
      use.entries = e.counter;
      use.last_state_event = e.index;
      continue;
    }
    if (e.kind != EventKind::complete || (e.op != Op::acquire && e.op != Op::release)) {
      if (is_acquire(e, EventKind::invoke)) adjust(keys[e.key], e.client, +1);
      continue;
    }
    KeyUse& use = keys[e.key];
    // A successful acquire turns waiting into holding: the count stays. Anything else ends one.
    if (e.op == Op::acquire && e.outcome == Outcome::ok) continue;
    adjust(use, e.client, -1);
    if (use.active == 0 && use.entries != 0) found.push_back(leak(history, e.key, use, e.index));
  }
  // At the end: a key nobody uses must have no state, whatever happened last.
  for (const auto& [key, use] : keys) {
    if (use.active == 0 && use.entries != 0 && use.last_state_event != static_cast<size_t>(-1)) {
      const bool reported = std::any_of(found.begin(), found.end(), [&](const Violation& v) { return v.key == key; });
      if (!reported) found.push_back(leak(history, key, use, use.last_state_event));
    }
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const Violation& a, const Violation& b) { return a.time_us < b.time_us; });
  cap(found, options);
  return found;
}

}  // namespace lockstep
