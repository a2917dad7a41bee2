#pragma once
// Small building blocks shared by the keyed lock cores (adapters/keyed/rw_core.h, fifo_core.h).
//
// KeyTable<State>: per-key state in a hash map looked up by string_view without building a
// std::string (transparent hash). It is only ever looked up, never iterated where order matters:
// a caller that must walk it (FifoCore::clear) sorts what it collects.
// WaitQueue<T>: a FIFO of waiters that allocates nothing until the first push (a key that never
// waits costs no queue memory), with O(1) amortised pop_front and an erase for withdrawals.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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
  // A key whose hash is already known (a handle keeps it from the acquire).
  KeyRef(std::string_view k, size_t known_hash) : key(k), hash(known_hash) {}
  std::string_view key;
  size_t hash;
};

struct KeyHash {
  using is_transparent = void;
  size_t operator()(std::string_view key) const noexcept { return std::hash<std::string_view>{}(key); }
  size_t operator()(const std::string& key) const noexcept { return (*this)(std::string_view(key)); }
  size_t operator()(const KeyRef& key) const noexcept { return key.hash; }
};

struct KeyEqual {
  using is_transparent = void;
  // Stored keys are std::string; lookups come as KeyRef or string_view. One exact overload each.
  bool operator()(const std::string& a, const std::string& b) const noexcept { return a == b; }
  bool operator()(const std::string& a, std::string_view b) const noexcept { return a == b; }
  bool operator()(std::string_view a, const std::string& b) const noexcept { return a == b; }
  bool operator()(const std::string& a, const KeyRef& b) const noexcept { return a == b.key; }
  bool operator()(const KeyRef& a, const std::string& b) const noexcept { return a.key == b; }
};

}  // namespace lockstep::keyed

#if defined(__GLIBCXX__)
// libstdc++ stores a node's hash code only for hashers it thinks slow; ours is as slow as
// std::hash<std::string>, which it caches. Cached codes make erase/extract by iterator and
// rehashing free of rehashing the key: one hash fewer per unlock.
template <>
struct std::__is_fast_hash<lockstep::keyed::KeyHash> : std::false_type {};
#endif

namespace lockstep::keyed {

template <class State>
using KeyTable = std::unordered_map<std::string, State, KeyHash, KeyEqual>;

// Frees a key's table node into a small bounded pool instead of the allocator, and takes nodes
// from it for new keys, so a lock+unlock of an idle key allocates nothing once warm. The pool
// holds at most kMaxSpare nodes whatever the number of keys: idle keys still cost no memory.
template <class State>
class NodePool {
 public:
  static constexpr size_t kMaxSpare = 8;
  using Node = typename KeyTable<State>::node_type;

  // Erases it from table (into the pool when there is room).
  void free(KeyTable<State>& table, typename KeyTable<State>::iterator it) {
    if (spare_.size() >= kMaxSpare) {
      table.erase(it);
      return;
    }
    spare_.push_back(table.extract(it));
  }
  // Inserts a fresh State for key (not present) and returns where.
  typename KeyTable<State>::iterator insert(KeyTable<State>& table, const KeyRef& key) {
    if (spare_.empty()) return table.emplace(std::string(key.key), State{}).first;
    Node node = std::move(spare_.back());
    spare_.pop_back();
    node.key().assign(key.key);
    node.mapped() = State{};
    return table.insert(std::move(node)).position;
  }

 private:
  std::vector<Node> spare_;
};

template <class T>
class WaitQueue {
 public:
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
