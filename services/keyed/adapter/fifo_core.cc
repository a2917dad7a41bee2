#include "services/keyed/adapter/fifo_core.h"

#include <algorithm>

#include "base/check.h"

namespace lockstep::keyed {

FifoAdmission FifoCore::request(const KeyRef& key) {
  if (key.key.size() > limits_.max_key_length) return {.admit = FifoAdmit::invalid_key};
  const size_t pos = keys_.find(key);
  if (pos == kAbsent) {
    const size_t fresh = keys_.insert(key);
    const RequestId id = next_id_++;
    keys_.at(fresh).state.holder = id;
    return {.admit = FifoAdmit::granted, .id = id};
  }
  KeyState& state = keys_.at(pos).state;
  LOCKSTEP_CHECK(state.holder != kNoRequest, "a key with state has a holder");
  if (state.queue.size() >= limits_.max_waiters_per_key) return {.admit = FifoAdmit::queue_full};
  const RequestId id = next_id_++;
  state.queue.push_back(id);
  return {.admit = FifoAdmit::queued, .id = id};
}

std::optional<RequestId> FifoCore::try_acquire(const KeyRef& key) {
  if (key.key.size() > limits_.max_key_length || keys_.find(key) != kAbsent) return std::nullopt;
  const size_t fresh = keys_.insert(key);
  const RequestId id = next_id_++;
  keys_.at(fresh).state.holder = id;
  return id;
}

RequestId FifoCore::release(const KeyRef& key, RequestId holder) {
  const size_t pos = keys_.find(key);
  // Only where clear() drops holders: this hold was dropped, and the key may be someone else's.
  if (!clear_keeps_holders() && (pos == kAbsent || keys_.at(pos).state.holder != holder))
    return kNoRequest;
  LOCKSTEP_CHECK(pos != kAbsent && keys_.at(pos).state.holder == holder,
                 "only the holder releases a key");
  KeyState& state = keys_.at(pos).state;
  if (state.queue.empty()) {
    keys_.erase(pos);
    return kNoRequest;
  }
  state.holder = state.queue.front();
  state.queue.pop_front();
  return state.holder;
}

bool FifoCore::cancel(const KeyRef& key, RequestId id) {
  const size_t pos = keys_.find(key);
  if (pos == kAbsent) return false;
  return keys_.at(pos).state.queue.erase_first([id](RequestId w) { return w == id; });
}

std::vector<FifoRejection> FifoCore::clear() {
  std::vector<FifoRejection> rejected;
  for (auto& entry : keys_) {
    for (RequestId id : entry.state.queue) rejected.push_back({.key = entry.key, .id = id});
    entry.state.queue = {};
  }
  if (!clear_keeps_holders()) {
    // Bounded by the table: every round erases one key.
    while (keys_.size() > 0) keys_.erase(keys_.size() - 1);
  }
  // The table's order is its layout; callers see request order.
  std::sort(rejected.begin(), rejected.end(),
            [](const FifoRejection& a, const FifoRejection& b) { return a.id < b.id; });
  return rejected;
}

RequestId FifoCore::holder(std::string_view key) const {
  const size_t pos = keys_.find(key);
  return pos == kAbsent ? kNoRequest : keys_.at(pos).state.holder;
}

size_t FifoCore::waiting(std::string_view key) const {
  const size_t pos = keys_.find(key);
  return pos == kAbsent ? 0 : keys_.at(pos).state.queue.size();
}

std::vector<RequestId> FifoCore::queue(std::string_view key) const {
  const size_t pos = keys_.find(key);
  if (pos == kAbsent) return {};
  return {keys_.at(pos).state.queue.begin(), keys_.at(pos).state.queue.end()};
}

}  // namespace lockstep::keyed
