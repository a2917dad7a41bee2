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

struct KeyHash {
  using is_transparent = void;
  size_t operator()(std::string_view key) const noexcept { return std::hash<std::string_view>{}(key); }
};

template <class State>
using KeyTable = std::unordered_map<std::string, State, KeyHash, std::equal_to<>>;

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
