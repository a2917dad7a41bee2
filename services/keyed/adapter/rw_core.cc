#include "services/keyed/adapter/rw_core.h"

#include <string>

#include "base/check.h"

namespace lockstep::keyed {

std::string_view to_string(RwMode mode) { return mode == RwMode::shared ? "shared" : "exclusive"; }

RwCore::KeyView RwCore::view(const KeyState& state) {
  return {.shared_holders = state.shared_holders,
          .exclusive_held = state.exclusive_holder != kNoRequest,
          .waiting = state.queue.size(),
          .exclusive_first = !state.queue.empty() && state.queue.front().mode == RwMode::exclusive};
}

bool RwCore::admits_shared_now(const KeyView& key) const {
  return !key.exclusive_held && key.waiting == 0;
}

bool RwCore::grantable_now(const KeyState& state, RwMode mode) const {
  if (mode == RwMode::shared) return admits_shared_now(view(state));
  return state.exclusive_holder == kNoRequest && state.shared_holders == 0 && state.queue.empty();
}

void RwCore::grant(KeyState& state, RequestId id, RwMode mode) {
  if (mode == RwMode::shared) {
    LOCKSTEP_CHECK(state.exclusive_holder == kNoRequest,
                   "a shared grant never overlaps an exclusive");
    ++state.shared_holders;
  } else {
    LOCKSTEP_CHECK(state.exclusive_holder == kNoRequest && state.shared_holders == 0,
                   "an exclusive grant happens only when no one holds");
    state.exclusive_holder = id;
  }
}

void RwCore::serve_queue(KeyState& state, std::vector<RequestId>& granted) {
  // Bounded by the queue: every round pops one waiter or returns.
  while (!state.queue.empty() && state.exclusive_holder == kNoRequest) {
    const Waiter head = state.queue.front();
    if (head.mode == RwMode::exclusive && state.shared_holders > 0) return;
    state.queue.pop_front();
    grant(state, head.id, head.mode);
    granted.push_back(head.id);
  }
}

void RwCore::free_if_idle(size_t pos) {
  const KeyState& state = keys_.at(pos).state;
  if (state.shared_holders == 0 && state.exclusive_holder == kNoRequest && state.queue.empty())
    keys_.erase(pos);
}

size_t RwCore::find_or_throw(const KeyRef& key) {
  const size_t pos = keys_.find(key);
  LOCKSTEP_CHECK(pos != kAbsent, "the key has a holder or a waiter, so it has state");
  return pos;
}

RwAdmission RwCore::request(const KeyRef& key, RwMode mode) {
  size_t pos = keys_.find(key);
  if (pos == kAbsent) pos = keys_.insert(key);
  KeyState& state = keys_.at(pos).state;
  const RequestId id = next_id_++;
  if (grantable_now(state, mode)) {
    grant(state, id, mode);
    return {.id = id, .granted = true};
  }
  state.queue.push_back({.id = id, .mode = mode});
  return {.id = id, .granted = false};
}

std::optional<RequestId> RwCore::try_acquire(const KeyRef& key, RwMode mode) {
  size_t pos = keys_.find(key);
  if (pos != kAbsent && !grantable_now(keys_.at(pos).state, mode)) return std::nullopt;
  if (pos == kAbsent) pos = keys_.insert(key);
  const RequestId id = next_id_++;
  grant(keys_.at(pos).state, id, mode);
  return id;
}

void RwCore::release(const KeyRef& key, RequestId id, RwMode mode,
                     std::vector<RequestId>& granted) {
  const size_t pos = find_or_throw(key);
  KeyState& state = keys_.at(pos).state;
  if (mode == RwMode::shared) {
    LOCKSTEP_CHECK(state.shared_holders > 0, "a shared release needs a shared holder");
    --state.shared_holders;
  } else {
    LOCKSTEP_CHECK(state.exclusive_holder == id, "only the exclusive holder releases it");
    state.exclusive_holder = kNoRequest;
  }
  if (!state.queue.empty() && serves_queue_after_release(view(state))) serve_queue(state, granted);
  free_if_idle(pos);
}

bool RwCore::cancel(const KeyRef& key, RequestId id, std::vector<RequestId>& granted) {
  const size_t pos = keys_.find(key);
  if (pos == kAbsent) return false;
  KeyState& state = keys_.at(pos).state;
  if (!state.queue.erase_first([id](const Waiter& w) { return w.id == id; })) return false;
  serve_queue(state, granted);
  free_if_idle(pos);
  return true;
}

size_t RwCore::entries(std::string_view key) const {
  const size_t pos = keys_.find(key);
  if (pos == kAbsent) return 0;
  const KeyState& state = keys_.at(pos).state;
  return state.shared_holders + (state.exclusive_holder != kNoRequest ? 1 : 0) + state.queue.size();
}

RwKeySnapshot RwCore::snapshot(std::string_view key) const {
  RwKeySnapshot out;
  const size_t pos = keys_.find(key);
  if (pos == kAbsent) return out;
  const KeyState& state = keys_.at(pos).state;
  out.shared_holders = state.shared_holders;
  out.exclusive_holder = state.exclusive_holder;
  for (const Waiter& w : state.queue) out.waiting.emplace_back(w.id, w.mode);
  return out;
}

}  // namespace lockstep::keyed
