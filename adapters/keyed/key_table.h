#pragma once
// Small building blocks shared by the keyed lock cores (adapters/keyed/rw_core.h, fifo_core.h).
//
// KeyRef: a key with its hash, computed once per operation (the driver hashes, the shard choice,
// the table lookup, the insertion and the handle's later release all reuse it).
// KeyTable<State>: per-key state, looked up by KeyRef without building a std::string. A purpose
// built table (see its comment) because the uncontended lock+unlock of a key inserts and erases
// the key once each: a node-based std::unordered_map paid for node juggling and rehashing there.
// WaitQueue<T>: a FIFO of waiters that allocates nothing until the first push (a key that never
// waits costs no queue memory), with O(1) amortised pop_front and an erase for withdrawals.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "adapters/core/check.h"

namespace lockstep::keyed {

// Identifies one request to a keyed lock core. Ids are 1, 2, 3, ... in request order per core.
using RequestId = uint64_t;
inline constexpr RequestId kNoRequest = 0;

// A key with its hash, computed once per operation and reused for the shard choice, the lookup
// and the insertion. Converts implicitly from anything that names a key.
struct KeyRef {
  KeyRef(std::string_view k) : key(k), hash(std::hash<std::string_view>{}(k)) {}  // NOLINT: implicit
  KeyRef(const std::string& k) : KeyRef(std::string_view(k)) {}                    // NOLINT: implicit
  KeyRef(const char* k) : KeyRef(std::string_view(k)) {}                           // NOLINT: implicit
  // A key whose hash is already known (a handle keeps it from the acquire). known_hash must be
  // std::hash<std::string_view>{}(k): every table compares hashes first.
  KeyRef(std::string_view k, size_t known_hash) : key(k), hash(known_hash) {}
  std::string_view key;
  size_t hash;
};

// KeyTable<State>: the keys that have state, each an Entry {hash, key, state}.
//
// Layout: the entries live densely in a vector (positions 0..size()-1); an open-addressing index
// (linear probing, power-of-two slot count) maps a hash to an entry position. A slot holds the
// low 32 bits of the entry's hash (its tag; the home slot is tag & mask) and the entry's position.
// Lookups compare the tag, then the full hash, then the key bytes.
//
// Invariants (checked where they could break; `check()` verifies them all, for tests):
// - Every entry has exactly one slot pointing at it, and every non-empty slot points at an entry
//   whose hash has that slot's tag. No two entries have equal keys.
// - Linear probing without tombstones: between an entry's home slot and its slot no slot is
//   empty. erase() keeps this by backward-shift deletion, so lookups stay O(1) expected and no
//   deleted-slot debris builds up.
// - Load: size() <= slots / 2 (grown before an insert would pass it), so every probe loop meets an
//   empty slot; every loop is nonetheless bounded by the slot count.
// - Memory follows the live keys, not their past peak: the index shrinks when size() falls below
//   slots / 8 and the entry vector when size() falls below capacity / 4, never below kMinSlots /
//   kMinEntries; plus at most kMaxSpareKeys spare key buffers of at most kMaxSpareKeyBytes each
//   (so a long key that comes and goes does not allocate every time). With every key idle a table
//   holds a bounded constant, whatever the number of keys it has seen.
// - erase(i) moves the last entry into position i (swap-and-pop): positions and references to
//   the last entry are invalidated by an erase, all of them by an insert. Callers hold positions
//   only within one operation.
// - Determinism: positions depend only on the sequence of inserts and erases and the hashes, so
//   identical request sequences see identical tables. Callers that walk entries (FifoCore::clear)
//   sort what they collect anyway: entry order carries no meaning.
// - Exception safety: insert() either inserts or throws with the table unchanged; erase() never
//   throws (a failed shrink keeps the larger storage).
template <class State>
class KeyTable {
 public:
  static constexpr size_t npos = std::numeric_limits<size_t>::max();
  static constexpr size_t kMinSlots = 16;    // power of two; holds kMinEntries at load 1/2
  static constexpr size_t kMinEntries = 8;
  static constexpr size_t kMaxSpareKeys = 8;
  static constexpr size_t kMaxSpareKeyBytes = 512;

  struct Entry {
    // User-provided, so that emplace_back() does not zero the whole entry first (a `rep stos`
    // that cost more than the rest of an insert).
    Entry() noexcept {}  // NOLINT(modernize-use-equals-default): see above
    size_t hash = 0;
    std::string key;
    State state{};
  };
  static_assert(std::is_nothrow_move_constructible_v<Entry> && std::is_nothrow_move_assignable_v<Entry>,
                "swap-and-pop and regrowth move entries and must not throw");

  KeyTable() = default;
  KeyTable(const KeyTable&) = delete;
  KeyTable& operator=(const KeyTable&) = delete;

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  Entry& at(size_t pos) { return entries_[pos]; }
  const Entry& at(size_t pos) const { return entries_[pos]; }
  // Entries in position order (meaningless, but deterministic).
  auto begin() { return entries_.begin(); }
  auto end() { return entries_.end(); }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }

  // Position of key's entry, or npos.
  size_t find(const KeyRef& key) const {
    if (slots_.empty()) return npos;
    const uint32_t tag = tag_of(key.hash);
    size_t s = tag & mask_;
    for (size_t probes = 0; probes <= mask_; ++probes, s = (s + 1) & mask_) {
      const Slot slot = slots_[s];
      if (slot.pos == kEmpty) return npos;
      if (slot.tag != tag) continue;
      const Entry& e = entries_[slot.pos];
      if (e.hash == key.hash && same_key(e.key, key.key)) return slot.pos;
    }
    return npos;
  }

  // Inserts key (which must be absent) with a value-initialised State; returns its position.
  size_t insert(const KeyRef& key) {
    LOCKSTEP_CHECK(entries_.size() < kEmpty, "positions fit a slot");
    // Growth first, while the table is unchanged (rebuild and reserve_entries give the strong
    // guarantee); then the only step that can throw is the key copy, undone if it does.
    if (slots_.empty() || (entries_.size() + 1) * 2 > slots_.size()) {
      rebuild(std::max(kMinSlots, slots_.size() * 2));
    }
    if (entries_.size() == entries_.capacity()) reserve_entries(std::max(kMinEntries, entries_.capacity() * 2));
    const uint32_t tag = tag_of(key.hash);
    size_t s = tag & mask_;
    for (size_t probes = 0; probes <= mask_; ++probes, s = (s + 1) & mask_) {
      const Slot slot = slots_[s];
      if (slot.pos == kEmpty) break;
      LOCKSTEP_CHECK(slot.tag != tag || entries_[slot.pos].hash != key.hash || !same_key(entries_[slot.pos].key, key.key),
                     "insert only keys that are absent");
    }
    LOCKSTEP_CHECK(slots_[s].pos == kEmpty, "load <= 1/2 leaves an empty slot on every probe path");
    const size_t pos = entries_.size();
    Entry& entry = entries_.emplace_back();  // capacity is reserved: no allocation, no throw
    entry.hash = key.hash;
    if (key.key.size() > kSsoCapacity && !spare_keys_.empty()) {
      entry.key = std::move(spare_keys_.back());
      spare_keys_.pop_back();
    }
    try {
      entry.key.assign(key.key);  // allocates only for a long key without a big enough spare
      if (key.key.size() > kSsoCapacity && spare_keys_.capacity() == 0) spare_keys_.reserve(kMaxSpareKeys);
    } catch (...) {
      entries_.pop_back();  // the table is as it was (the slot is not taken yet)
      throw;
    }
    slots_[s] = Slot{.tag = tag, .pos = static_cast<uint32_t>(pos)};
    return pos;
  }

  // Erases the entry at pos; the last entry moves to pos.
  void erase(size_t pos) noexcept {
    LOCKSTEP_CHECK(pos < entries_.size(), "erase an existing entry");  // noexcept: terminates
    remove_slot(slot_of(pos));
    const size_t last = entries_.size() - 1;
    if (pos != last) {
      slots_[slot_of(last)].pos = static_cast<uint32_t>(pos);
      entries_[pos] = std::move(entries_[last]);
    }
    keep_key_buffer(entries_.back().key);
    entries_.pop_back();
    shrink_if_sparse();
  }

  // Storage, for tests of the memory bound: both return to their minimum once every key is gone.
  size_t slot_count() const { return slots_.size(); }
  size_t entry_capacity() const { return entries_.capacity(); }

  // Verifies every invariant above; O(size). For tests.
  void check() const {
    size_t used = 0;
    for (size_t s = 0; s < slots_.size(); ++s) {
      const Slot slot = slots_[s];
      if (slot.pos == kEmpty) continue;
      ++used;
      LOCKSTEP_CHECK(slot.pos < entries_.size(), "a slot points at an entry");
      LOCKSTEP_CHECK(tag_of(entries_[slot.pos].hash) == slot.tag, "a slot's tag is its entry's hash");
      LOCKSTEP_CHECK(slot_of(slot.pos) == s, "an entry has one slot, reachable from its home");
      LOCKSTEP_CHECK(find(KeyRef(entries_[slot.pos].key, entries_[slot.pos].hash)) == slot.pos, "keys are unique");
    }
    LOCKSTEP_CHECK(used == entries_.size(), "every entry has a slot");
    LOCKSTEP_CHECK(entries_.size() * 2 <= slots_.size() || slots_.empty(), "load <= 1/2");
    LOCKSTEP_CHECK(spare_keys_.size() <= kMaxSpareKeys, "spare key buffers are bounded");
  }

 private:
  struct Slot {
    uint32_t tag = 0;
    uint32_t pos = kEmpty;
  };
  static constexpr uint32_t kEmpty = std::numeric_limits<uint32_t>::max();

  // What a std::string holds without allocating.
  static constexpr size_t kSsoCapacity = std::string().capacity();

  // a == b. Keys are usually short, and equal hashes make equality likely: compares up to 16
  // bytes with a few overlapping loads instead of a call to memcmp.
  static bool same_key(std::string_view a, std::string_view b) noexcept {
    const size_t n = a.size();
    if (n != b.size()) return false;
    const char* x = a.data();
    const char* y = b.data();
    if (n >= 8 && n <= 16) return load<uint64_t>(x) == load<uint64_t>(y) && load<uint64_t>(x + n - 8) == load<uint64_t>(y + n - 8);
    if (n >= 4 && n < 8) return load<uint32_t>(x) == load<uint32_t>(y) && load<uint32_t>(x + n - 4) == load<uint32_t>(y + n - 4);
    if (n < 4) {
      for (size_t i = 0; i < n; ++i) {  // at most 3 rounds
        if (x[i] != y[i]) return false;
      }
      return true;
    }
    return a == b;
  }
  template <class Word>
  static Word load(const char* p) noexcept {
    Word w;
    std::memcpy(&w, p, sizeof w);
    return w;
  }

  static uint32_t tag_of(size_t hash) { return static_cast<uint32_t>(hash); }

  // The slot pointing at entry pos (which exists).
  size_t slot_of(size_t pos) const {
    size_t s = tag_of(entries_[pos].hash) & mask_;
    for (size_t probes = 0; probes <= mask_; ++probes, s = (s + 1) & mask_) {
      if (slots_[s].pos == pos) return s;
      LOCKSTEP_CHECK(slots_[s].pos != kEmpty, "an entry's slot is reachable from its home slot");
    }
    LOCKSTEP_CHECK(false, "an entry has a slot");
    return 0;
  }

  // Backward-shift deletion: empties slot s, then moves later members of its probe run back so
  // that no entry's home-to-slot path crosses an empty slot.
  void remove_slot(size_t hole) {
    size_t s = hole;
    for (size_t probes = 0; probes < mask_; ++probes) {
      s = (s + 1) & mask_;
      const Slot slot = slots_[s];
      if (slot.pos == kEmpty) break;
      const size_t home = slot.tag & mask_;
      // slot may fill the hole iff the hole lies on its path from home, i.e. in [home, s).
      if (((s - home) & mask_) >= ((s - hole) & mask_)) {
        slots_[hole] = slot;
        hole = s;
      }
    }
    slots_[hole] = Slot{};
  }

  // Replaces the index by one of slot_count slots (a power of two > size()), rebuilt in entry
  // order. Strong guarantee: the allocation happens before anything changes.
  void rebuild(size_t slot_count) {
    std::vector<Slot> fresh(slot_count);
    const size_t mask = slot_count - 1;
    for (size_t pos = 0; pos < entries_.size(); ++pos) {
      const uint32_t tag = tag_of(entries_[pos].hash);
      size_t s = tag & mask;
      for (size_t probes = 0; probes <= mask && fresh[s].pos != kEmpty; ++probes) s = (s + 1) & mask;
      fresh[s] = Slot{.tag = tag, .pos = static_cast<uint32_t>(pos)};
    }
    slots_.swap(fresh);
    mask_ = mask;
  }

  void reserve_entries(size_t capacity) {
    std::vector<Entry> fresh;
    fresh.reserve(capacity);
    for (Entry& e : entries_) fresh.push_back(std::move(e));
    entries_.swap(fresh);
  }

  void shrink_if_sparse() noexcept {
    try {
      if (slots_.size() > kMinSlots && entries_.size() * 8 < slots_.size()) rebuild(slots_.size() / 2);
      if (entries_.capacity() > kMinEntries && entries_.size() * 4 < entries_.capacity()) {
        reserve_entries(std::max(kMinEntries, entries_.capacity() / 2));
      }
    } catch (...) {  // out of memory: keep the larger storage, which is still correct
    }
  }

  // Keeps a leaving key's heap buffer if there is room (the reserve above means no allocation).
  void keep_key_buffer(std::string& key) noexcept {
    if (key.capacity() > kSsoCapacity && key.capacity() <= kMaxSpareKeyBytes &&
        spare_keys_.size() < spare_keys_.capacity()) {
      spare_keys_.push_back(std::move(key));
    }
  }

  std::vector<Slot> slots_;  // empty until the first insert
  size_t mask_ = 0;          // slots_.size() - 1
  std::vector<Entry> entries_;
  std::vector<std::string> spare_keys_;  // capacity kMaxSpareKeys once a long key was seen
};

template <class T>
class WaitQueue {
 public:
  WaitQueue() = default;
  // Moves leave the source empty (table entries move on erase and regrowth).
  WaitQueue(WaitQueue&& other) noexcept : items_(std::move(other.items_)), head_(std::exchange(other.head_, 0)) {
    other.items_.clear();
  }
  WaitQueue& operator=(WaitQueue&& other) noexcept {
    items_ = std::move(other.items_);
    head_ = std::exchange(other.head_, 0);
    other.items_.clear();
    return *this;
  }
  bool empty() const { return head_ == items_.size(); }
  size_t size() const { return items_.size() - head_; }
  const T& front() const { return items_[head_]; }
  void push_back(T item) { items_.push_back(std::move(item)); }
  void pop_front() {
    ++head_;
    if (head_ == items_.size()) {
      items_.clear();
      head_ = 0;
    } else if (head_ >= 32 && head_ * 2 >= items_.size()) {
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }
  // Removes the first item matching pred; whether one was found.
  template <class Pred>
  bool erase_first(Pred pred) {
    for (size_t i = head_; i < items_.size(); ++i) {
      if (!pred(items_[i])) continue;
      items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(i));
      if (empty()) {
        items_.clear();
        head_ = 0;
      }
      return true;
    }
    return false;
  }
  auto begin() const { return items_.begin() + static_cast<std::ptrdiff_t>(head_); }
  auto end() const { return items_.end(); }

 private:
  std::vector<T> items_;
  size_t head_ = 0;
};

}  // namespace lockstep::keyed
