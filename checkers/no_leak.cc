#include "checkers/checkers.h"

#include <algorithm>
#include <map>
#include <string>

#include <fmt/format.h>

#include "checkers/request_order.h"

// no_leak: see checkers.h for the definition this judges. Per-key state lives in ordered maps
// keyed by the key string, so nothing depends on hash layout.

namespace lockstep {

using namespace request_order;

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
  if (use.last_state_event != static_cast<size_t>(-1))
    v.events.insert(v.events.begin(), use.last_state_event);
  std::sort(v.events.begin(), v.events.end());
  v.detail = fmt::format(
      "no client held or waited for key {} from {}us, but the lock still kept {} entries for it",
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
  // Not a structured binding: clang 14 cannot capture one in the lambda below.
  for (const auto& entry : keys) {
    const std::string& key = entry.first;
    const KeyUse& use = entry.second;
    if (use.active == 0 && use.entries != 0 && use.last_state_event != static_cast<size_t>(-1)) {
      const bool reported =
          std::any_of(found.begin(), found.end(), [&](const Violation& v) { return v.key == key; });
      if (!reported) found.push_back(leak(history, key, use, use.last_state_event));
    }
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const Violation& a, const Violation& b) { return a.time_us < b.time_us; });
  cap(found, options);
  return found;
}

}  // namespace lockstep
