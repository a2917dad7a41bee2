#pragma once
// What the checkers share (internal to checkers/): building a Violation, capping and
// ordering what a checker reports, and per-key state walked in a deterministic order.
//
// Every checker reads the history once in index (= true-time) order (most as a pass of
// check_all's one walk: checker_pass.h), keeps per-key state by the events' ids (PerKey, and
// LeaseTable for a lease) with string_views into the history (which outlives the call), and builds
// the few Violations it reports only at the end, so a history with many violations stays cheap.
// Hash maps are only ever looked up, never walked: anything walked is a vector in history order
// or an ordered map.
#include <algorithm>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/check.h"
#include "checkers/checkers.h"

namespace lockstep::checker_support {

inline constexpr size_t kNoEvent = static_cast<size_t>(-1);
inline constexpr size_t kValueCharsShown = 8;

inline std::string client_name(int client) {
  return client >= 0 ? fmt::format("c{}", client) : std::string("no client");
}

inline std::string short_value(std::string_view value) {
  if (value.size() <= kValueCharsShown) return std::string(value);
  return fmt::format("{}..", value.substr(0, kValueCharsShown));
}

// Sorted, distinct, without "no client".
inline std::vector<int> client_list(std::vector<int> clients) {
  std::erase_if(clients, [](int c) { return c < 0; });
  std::sort(clients.begin(), clients.end());
  clients.erase(std::unique(clients.begin(), clients.end()), clients.end());
  return clients;
}

// Ascending, distinct, without kNoEvent.
inline std::vector<size_t> event_list(std::vector<size_t> events) {
  std::erase(events, kNoEvent);
  std::sort(events.begin(), events.end());
  events.erase(std::unique(events.begin(), events.end()), events.end());
  return events;
}

inline Violation make_violation(Invariant invariant, TimeUs time_us, std::string_view key,
                                std::vector<int> clients, std::vector<size_t> events,
                                std::string detail) {
  Violation v;
  v.invariant = invariant;
  v.time_us = time_us;
  v.key = std::string(key);
  v.clients = client_list(std::move(clients));
  v.events = event_list(std::move(events));
  v.detail = std::move(detail);
  return v;
}

// Earliest first (ties by the events that show them, so the order never depends on map layout),
// at most max of them.
inline void sort_and_cap(std::vector<Violation>& found, size_t max) {
  std::stable_sort(found.begin(), found.end(), [](const Violation& a, const Violation& b) {
    return std::tie(a.time_us, a.events) < std::tie(b.time_us, b.events);
  });
  if (found.size() > max) found.resize(max);
}

// State per key, in a vector in order of the key's first appearance among the events this
// checker looked up, so walking it is deterministic; found by the event's key_id (History::add),
// without hashing the key.
template <typename State>
class PerKey {
 public:
  State& operator[](const HistoryEvent& e) {
    if (e.key_id >= slots_.size()) slots_.resize(e.key_id + 1, kNoSlot);
    uint32_t& slot = slots_[e.key_id];
    if (slot == kNoSlot) {
      slot = static_cast<uint32_t>(states_.size());
      states_.emplace_back();
      keys_.push_back(e.key);
    }
    return states_[slot];
  }
  size_t size() const { return states_.size(); }
  std::string_view key(size_t id) const { return keys_[id]; }
  const State& state(size_t id) const { return states_[id]; }
  State& state(size_t id) { return states_[id]; }

 private:
  static constexpr uint32_t kNoSlot = static_cast<uint32_t>(-1);
  std::vector<uint32_t> slots_;  // key_id -> index into states_, or kNoSlot
  std::vector<State> states_;
  std::vector<std::string_view> keys_;
};

// What makes two events one lease in a LeaseTable: the same key, server and value (each server's
// lease apart), the same key and value (an owner's leases on every server together, which a
// client's completion, naming no server, finds), or the same value on any key (an owner's leases
// whatever the lock calls its keys at the servers: a library's "mutex:KEY" for the caller's KEY).
enum class LeaseScope { per_server, per_owner, per_value };

// A lease's state found by the event's ids without hashing: the values of a history are dense from
// 0 (History::add), so a vector by value_id heads a short chain of the keys (and servers) seen with
// that value (one per server a Redlock lease went to). A slot, once made, stays; nothing walks
// the table.
template <typename Slot, LeaseScope kScope = LeaseScope::per_server>
class LeaseTable {
 public:
  // e's slot, made (Slot{}) if it was not there.
  Slot& operator[](const HistoryEvent& e) {
    const uint32_t found = index_of(e);
    if (found != kNoEntry) return entries_[found].slot;
    if (e.value_id >= heads_.size()) heads_.resize(e.value_id + 1, kNoEntry);
    uint32_t& head = heads_[e.value_id];
    LOCKSTEP_CHECK(entries_.size() < kNoEntry, "a lease table's entries fit its links");
    entries_.push_back(Entry{e.key_id, e.server_id, head, Slot{}});
    head = static_cast<uint32_t>(entries_.size() - 1);
    return entries_.back().slot;
  }
  // e's slot, or null.
  Slot* find(const HistoryEvent& e) {
    const uint32_t found = index_of(e);
    return found != kNoEntry ? &entries_[found].slot : nullptr;
  }
  const Slot* find(const HistoryEvent& e) const {
    const uint32_t found = index_of(e);
    return found != kNoEntry ? &entries_[found].slot : nullptr;
  }

 private:
  static constexpr uint32_t kNoEntry = static_cast<uint32_t>(-1);
  struct Entry {
    uint32_t key_id;
    uint32_t server_id;  // per_owner: the first server seen, never compared
    uint32_t next;       // the value's previous entry, or kNoEntry
    Slot slot;
  };
  uint32_t index_of(const HistoryEvent& e) const {
    if (e.value_id >= heads_.size()) return kNoEntry;
    for (uint32_t i = heads_[e.value_id]; i != kNoEntry; i = entries_[i].next) {
      const Entry& entry = entries_[i];
      if (kScope == LeaseScope::per_value) return i;
      if (entry.key_id != e.key_id) continue;
      if (kScope == LeaseScope::per_owner || entry.server_id == e.server_id) return i;
    }
    return kNoEntry;
  }
  std::vector<uint32_t> heads_;  // value_id -> its latest entry, or kNoEntry
  std::vector<Entry> entries_;
};

}  // namespace lockstep::checker_support
