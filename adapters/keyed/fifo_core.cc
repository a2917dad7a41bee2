#include "adapters/keyed/fifo_core.h"

#include <algorithm>

#include "adapters/core/check.h"

namespace lockstep::keyed {

FifoAdmission FifoCore::request(const KeyRef& key) {
  if (key.key.size() > limits_.max_key_length) return {.admit = FifoAdmit::invalid_key};
  auto it = keys_.find(key);
  if (it == keys_.end()) {
    const RequestId id = next_id_++;
    pool_.insert(keys_, key)->second.holder = id;
    return {.admit = FifoAdmit::granted, .id = id};
  }
  KeyState& state = it->second;
  LOCKSTEP_CHECK(state.holder != kNoRequest, "a key with state has a holder");
  if (state.queue.size() >= limits_.max_waiters_per_key) return {.admit = FifoAdmit::queue_full};
  const RequestId id = next_id_++;
  state.queue.push_back(id);
  return {.admit = FifoAdmit::queued, .id = id};
}

std::optional<RequestId> FifoCore::try_acquire(const KeyRef& key) {
  if (key.key.size() > limits_.max_key_length || keys_.find(key) != keys_.end()) return std::nullopt;
  const RequestId id = next_id_++;
  pool_.insert(keys_, key)->second.holder = id;
  return id;
}

RequestId FifoCore::release(const KeyRef& key, RequestId holder) {
  auto it = keys_.find(key);
  LOCKSTEP_CHECK(it != keys_.end() && it->second.holder == holder, "only the holder releases a key");
  KeyState& state = it->second;
  if (state.queue.empty()) {
    pool_.free(keys_, it);
    return kNoRequest;
  }
  state.holder = state.queue.front();
  state.queue.pop_front();
  return state.holder;
}

bool FifoCore::cancel(const KeyRef& key, RequestId id) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return false;
  return it->second.queue.erase_first([id](RequestId w) { return w == id; });
}

std::vector<FifoRejection> FifoCore::clear() {
  std::vector<FifoRejection> rejected;
  for (auto& [key, state] : keys_) {
    for (RequestId id : state.queue) rejected.push_back({.key = key, .id = id});
    state.queue = {};
  }
  // The table's order is its hash layout; callers see request order.
  std::sort(rejected.begin(), rejected.end(),
            [](const FifoRejection& a, const FifoRejection& b) { return a.id < b.id; });
  return rejected;
}

RequestId FifoCore::holder(std::string_view key) const {
  auto it = keys_.find(key);
  return it == keys_.end() ? kNoRequest : it->second.holder;
}

size_t FifoCore::waiting(std::string_view key) const {
  auto it = keys_.find(key);
  return it == keys_.end() ? 0 : it->second.queue.size();
}

std::vector<RequestId> FifoCore::queue(std::string_view key) const {
  auto it = keys_.find(key);
  if (it == keys_.end()) return {};
  return {it->second.queue.begin(), it->second.queue.end()};
}

}  // namespace lockstep::keyed
