#pragma once
// Small building blocks shared by the keyed lock cores (services/keyed/adapter/rw_core.h, fifo_core.h).
//
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

#include "base/check.h"
#include "lockstep/keyed_state_machine.h"  // RequestId, KeyRef

namespace lockstep::keyed {

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
//   slots / 8 and the entry vector when size() falls below capacity / 4, never below kSlotsMin /
//   kEntriesMin; plus at most kSpareKeysMax spare key buffers of at most kSpareKeyMaxBytes each
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
  static constexpr size_t kSlotsMin = 16;  // power of two; holds kEntriesMin at load 1/2
  static constexpr size_t kEntriesMin = 8;
  static constexpr size_t kSpareKeysMax = 8;
  static constexpr size_t kSpareKeyMaxBytes = 512;

  struct Entry {
    // User-provided, so that emplace_back() does not zero the whole entry first (a `rep stos`
    // that cost more than the rest of an insert).
    Entry() noexcept {}  // NOLINT(modernize-use-equals-default): see above
    Entry(size_t h, std::string_view k) : hash(h), key(k) {}
    Entry(size_t h, std::string&& buffer) noexcept : hash(h), key(std::move(buffer)) {}
    size_t hash = 0;
    std::string key;
    State state{};
  };
  static_assert(std::is_nothrow_move_constructible_v<Entry> &&
                    std::is_nothrow_move_assignable_v<Entry>,
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
      if (slot.pos() == kEmpty) return npos;
      if (slot.tag() != tag) continue;
      const Entry& e = entries_[slot.pos()];
      if (e.hash == key.hash && same_key(e.key, key.key)) return slot.pos();
    }
    return npos;
  }

  // Inserts key (which must be absent) with a value-initialised State; returns its position.
  // The common case (room in both vectors, a short key) is inline and small; growth and long
  // keys are out of line. Fewer calls and stores here are what make an uncontended lock cheap.
  size_t insert(const KeyRef& key) {
    // Growth first, while the table is unchanged (it gives the strong guarantee); then the only
    // step that can throw is the copy of a long key, undone if it does.
    if ((entries_.size() + 1) * 2 > slots_.size() || entries_.size() == entries_.capacity()) grow();
    const uint32_t tag = tag_of(key.hash);
    size_t s = tag & mask_;
    for (size_t probes = 0; probes <= mask_; ++probes, s = (s + 1) & mask_) {
      const Slot slot = slots_[s];
      if (slot.pos() == kEmpty) break;
      LOCKSTEP_CHECK(slot.tag() != tag || entries_[slot.pos()].hash != key.hash ||
                         !same_key(entries_[slot.pos()].key, key.key),
                     "insert only keys that are absent");
    }
    LOCKSTEP_CHECK(slots_[s].pos() == kEmpty,
                   "load <= 1/2 leaves an empty slot on every probe path");
    const size_t pos = entries_.size();
    if (key.key.size() <= kSsoCapacity) {
      entries_.emplace_back(key.hash, key.key);  // capacity is reserved: no allocation, no throw
    } else {
      emplace_long(key);
    }
    slots_[s] = Slot::make(tag, pos);
    return pos;
  }

  // Erases the entry at pos; the last entry moves to pos.
  void erase(size_t pos) noexcept {
    LOCKSTEP_CHECK(pos < entries_.size(), "erase an existing entry");  // noexcept: terminates
    remove_slot(slot_of(pos));
    const size_t last = entries_.size() - 1;
    if (pos != last) {
      Slot& moved = slots_[slot_of(last)];
      moved = Slot::make(moved.tag(), pos);
      entries_[pos] = std::move(entries_[last]);
    }
    keep_key_buffer(entries_.back().key);  // the erased key's buffer (a move hands it to the last)
    entries_.pop_back();
    if ((slots_.size() > kSlotsMin && entries_.size() * 8 < slots_.size()) ||
        (entries_.capacity() > kEntriesMin && entries_.size() * 4 < entries_.capacity())) {
      shrink();
    }
  }

  // Storage, for tests of the memory bound: both return to their minimum once every key is gone.
  size_t slot_count() const { return slots_.size(); }
  size_t entry_capacity() const { return entries_.capacity(); }

  // Verifies every invariant above; O(size). For tests.
  void check() const {
    size_t used = 0;
    for (size_t s = 0; s < slots_.size(); ++s) {
      const Slot slot = slots_[s];
      if (slot.pos() == kEmpty) continue;
      ++used;
      LOCKSTEP_CHECK(slot.pos() < entries_.size(), "a slot points at an entry");
      LOCKSTEP_CHECK(tag_of(entries_[slot.pos()].hash) == slot.tag(),
                     "a slot's tag is its entry's hash");
      LOCKSTEP_CHECK(slot_of(slot.pos()) == s, "an entry has one slot, reachable from its home");
      LOCKSTEP_CHECK(
          find(KeyRef(entries_[slot.pos()].key, entries_[slot.pos()].hash)) == slot.pos(),
          "keys are unique");
    }
    LOCKSTEP_CHECK(used == entries_.size(), "every entry has a slot");
    LOCKSTEP_CHECK(entries_.size() * 2 <= slots_.size() || slots_.empty(), "load <= 1/2");
    LOCKSTEP_CHECK(spare_keys_.size() <= kSpareKeysMax, "spare key buffers are bounded");
  }

 private:
  static constexpr uint32_t kEmpty = std::numeric_limits<uint32_t>::max();
  // One 64-bit word (tag low, position high), always written and read whole: a slot written as
  // two 32-bit halves and read back as one word right after (insert, then the release's find)
  // defeats store-to-load forwarding and stalls.
  struct Slot {
    uint64_t bits = uint64_t{kEmpty} << 32;
    static Slot make(uint32_t tag, size_t pos) {
      return Slot{.bits = tag | (uint64_t{static_cast<uint32_t>(pos)} << 32)};
    }
    uint32_t tag() const { return static_cast<uint32_t>(bits); }
    uint32_t pos() const { return static_cast<uint32_t>(bits >> 32); }
  };

  // What a std::string holds without allocating. const, not constexpr: clang 14 cannot evaluate
  // libstdc++'s std::string in a constant expression (GCC can, and still initializes it at compile
  // time).
  static inline const size_t kSsoCapacity = std::string().capacity();

  // a == b. Keys are usually short, and equal hashes make equality likely: compares up to 16
  // bytes with a few overlapping loads instead of a call to memcmp.
  static bool same_key(std::string_view a, std::string_view b) noexcept {
    const size_t n = a.size();
    if (n != b.size()) return false;
    const char* x = a.data();
    const char* y = b.data();
    if (n >= 8 && n <= 16)
      return load<uint64_t>(x) == load<uint64_t>(y) &&
             load<uint64_t>(x + n - 8) == load<uint64_t>(y + n - 8);
    if (n >= 4 && n < 8)
      return load<uint32_t>(x) == load<uint32_t>(y) &&
             load<uint32_t>(x + n - 4) == load<uint32_t>(y + n - 4);
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
      if (slots_[s].pos() == pos) return s;
      LOCKSTEP_CHECK(slots_[s].pos() != kEmpty, "an entry's slot is reachable from its home slot");
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
      if (slot.pos() == kEmpty) break;
      const size_t home = slot.tag() & mask_;
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
      for (size_t probes = 0; probes <= mask && fresh[s].pos() != kEmpty; ++probes)
        s = (s + 1) & mask;
      fresh[s] = Slot::make(tag, pos);
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

  // Makes room for one more entry: the index stays at load <= 1/2, the entry vector has spare
  // capacity. Strong guarantee.
  [[gnu::noinline]] void grow() {
    // Every insert past a power of two comes here, so positions stay below 2^31 < kEmpty.
    LOCKSTEP_CHECK(entries_.size() < (size_t{1} << 31),
                   "positions fit a slot (at most 2^31 keys per table)");
    if (slots_.empty() || (entries_.size() + 1) * 2 > slots_.size())
      rebuild(std::max(kSlotsMin, slots_.size() * 2));
    if (entries_.size() == entries_.capacity())
      reserve_entries(std::max(kEntriesMin, entries_.capacity() * 2));
  }

  // Gives memory back when the table is sparse: the index at load < 1/8 halves, the entry vector
  // at use < 1/4 halves (hysteresis against a grow right after). Never throws: out of memory, the
  // larger storage stays, which is still correct.
  [[gnu::noinline]] void shrink() noexcept {
    try {
      if (slots_.size() > kSlotsMin && entries_.size() * 8 < slots_.size())
        rebuild(slots_.size() / 2);
      if (entries_.capacity() > kEntriesMin && entries_.size() * 4 < entries_.capacity()) {
        reserve_entries(std::max(kEntriesMin, entries_.capacity() / 2));
      }
    } catch (...) {
    }
  }

  // Appends an entry for a key too long for the string's inline buffer, into a spare buffer if
  // there is one. Capacity is reserved; if the copy throws, entries_ is as it was.
  [[gnu::noinline]] void emplace_long(const KeyRef& key) {
    if (spare_keys_.empty()) {
      entries_.emplace_back(key.hash, key.key);  // may throw: nothing appended then
    } else {
      entries_.emplace_back(key.hash, std::move(spare_keys_.back()));
      spare_keys_.pop_back();
      try {
        entries_.back().key.assign(key.key);  // allocates only if the buffer is too small
      } catch (...) {
        entries_.pop_back();
        throw;
      }
    }
    if (spare_keys_.capacity() == 0) {
      try {
        spare_keys_.reserve(kSpareKeysMax);
      } catch (...) {  // no spare buffers then; the insert itself succeeded
      }
    }
  }

  // Keeps a leaving key's heap buffer if there is room (the reserve above means no allocation).
  void keep_key_buffer(std::string& key) noexcept {
    if (key.capacity() > kSsoCapacity && key.capacity() <= kSpareKeyMaxBytes &&
        spare_keys_.size() < spare_keys_.capacity()) {
      spare_keys_.push_back(std::move(key));
    }
  }

  std::vector<Slot> slots_;  // empty until the first insert
  size_t mask_ = 0;          // slots_.size() - 1
  std::vector<Entry> entries_;
  std::vector<std::string> spare_keys_;  // capacity kSpareKeysMax once a long key was seen
};

template <class T>
class WaitQueue {
 public:
  WaitQueue() = default;
  // Moves leave the source empty (table entries move on erase and regrowth).
  WaitQueue(WaitQueue&& other) noexcept
      : items_(std::move(other.items_)), head_(std::exchange(other.head_, 0)) {
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
