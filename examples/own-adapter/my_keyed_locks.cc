#include "my_keyed_locks.h"

#include <algorithm>

#include "lockstep/keyed.h"
#include "lockstep/registry.h"

namespace my_keyed {

// --- ReadWriteTable ---

bool ReadWriteTable::may_enter_now(const Room& room, bool writer) {
  // Writer preference: nobody passes someone already in line.
  if (!room.line.empty() || room.writing) return false;
  return !writer || room.readers == 0;
}

void ReadWriteTable::let_in_from_line(Room& room, std::vector<RequestId>& granted) const {
  while (!room.line.empty() && !room.writing) {
    const Ticket next = room.line.front();
    if (next.writer) {
      if (room.readers > 0) return;
      room.line.pop_front();
      if (bug_ != Bug::forgets_handed_writer) room.writing = true;
      granted.push_back(next.id);
      return;
    }
    room.line.pop_front();
    ++room.readers;
    granted.push_back(next.id);
  }
}

void ReadWriteTable::forget_if_empty(std::string_view key) {
  const auto it = rooms_.find(key);
  if (it == rooms_.end()) return;
  const Room& room = it->second;
  if (room.readers == 0 && !room.writing && room.line.empty()) rooms_.erase(it);
}

RwAdmission ReadWriteTable::request(const KeyRef& key, RwMode mode) {
  const bool writer = mode == RwMode::exclusive;
  auto it = rooms_.find(key.key);
  if (it == rooms_.end()) it = rooms_.emplace(std::string(key.key), Room{}).first;
  Room& room = it->second;
  const RequestId id = ++last_ticket_;
  if (may_enter_now(room, writer)) {
    if (writer) {
      room.writing = true;
    } else {
      ++room.readers;
    }
    return {.id = id, .granted = true};
  }
  room.line.push_back({id, writer});
  return {.id = id, .granted = false};
}

std::optional<RequestId> ReadWriteTable::try_acquire(const KeyRef& key, RwMode mode) {
  const auto it = rooms_.find(key.key);
  if (it != rooms_.end() && !may_enter_now(it->second, mode == RwMode::exclusive))
    return std::nullopt;
  return request(key, mode).id;
}

void ReadWriteTable::release(const KeyRef& key, RequestId, RwMode mode,
                             std::vector<RequestId>& granted) {
  const auto it = rooms_.find(key.key);
  if (it == rooms_.end()) return;
  Room& room = it->second;
  if (mode == RwMode::exclusive) {
    room.writing = false;
  } else if (room.readers > 0) {
    --room.readers;
  }
  let_in_from_line(room, granted);
  forget_if_empty(key.key);
}

bool ReadWriteTable::cancel(const KeyRef& key, RequestId id, std::vector<RequestId>& granted) {
  const auto it = rooms_.find(key.key);
  if (it == rooms_.end()) return false;
  Room& room = it->second;
  const auto ticket = std::find_if(room.line.begin(), room.line.end(),
                                   [id](const Ticket& t) { return t.id == id; });
  if (ticket == room.line.end()) return false;
  room.line.erase(ticket);
  let_in_from_line(room, granted);
  forget_if_empty(key.key);
  return true;
}

size_t ReadWriteTable::entries(std::string_view key) const {
  const auto it = rooms_.find(key);
  if (it == rooms_.end()) return 0;
  const Room& room = it->second;
  return static_cast<size_t>(room.readers) + (room.writing ? 1 : 0) + room.line.size();
}

// --- FifoTable ---

FifoAdmission FifoTable::request(const KeyRef& key) {
  using lockstep::keyed::FifoAdmit;
  if (key.key.size() > limits_.max_key_length) return {.admit = FifoAdmit::invalid_key};
  const auto it = slots_.find(key.key);
  if (it == slots_.end()) {
    const RequestId id = ++last_ticket_;
    slots_.emplace(std::string(key.key), Slot{.owner = id});
    return {.admit = FifoAdmit::granted, .id = id};
  }
  if (it->second.waiters.size() >= limits_.max_waiters_per_key)
    return {.admit = FifoAdmit::queue_full};
  const RequestId id = ++last_ticket_;
  it->second.waiters.push_back(id);
  return {.admit = FifoAdmit::queued, .id = id};
}

std::optional<RequestId> FifoTable::try_acquire(const KeyRef& key) {
  if (key.key.size() > limits_.max_key_length || slots_.count(key.key) != 0) return std::nullopt;
  return request(key).id;
}

RequestId FifoTable::release(const KeyRef& key, RequestId holder) {
  const auto it = slots_.find(key.key);
  if (it == slots_.end() || it->second.owner != holder) return 0;
  Slot& slot = it->second;
  if (slot.waiters.empty()) {
    slots_.erase(it);
    return 0;
  }
  if (bug_ == Bug::newest_first) {
    slot.owner = slot.waiters.back();
    slot.waiters.pop_back();
  } else {
    slot.owner = slot.waiters.front();
    slot.waiters.pop_front();
  }
  return slot.owner;
}

bool FifoTable::cancel(const KeyRef& key, RequestId id) {
  const auto it = slots_.find(key.key);
  if (it == slots_.end()) return false;
  std::deque<RequestId>& waiters = it->second.waiters;
  const auto found = std::find(waiters.begin(), waiters.end(), id);
  if (found == waiters.end()) return false;
  waiters.erase(found);
  return true;
}

std::vector<FifoRejection> FifoTable::clear() {
  // Every waiter goes; every owner keeps its key until it releases.
  std::vector<FifoRejection> rejected;
  for (auto& [key, slot] : slots_) {
    for (RequestId id : slot.waiters) rejected.push_back({.key = key, .id = id});
    slot.waiters.clear();
  }
  std::sort(rejected.begin(), rejected.end(),
            [](const FifoRejection& a, const FifoRejection& b) { return a.id < b.id; });
  return rejected;
}

size_t FifoTable::waiting(std::string_view key) const {
  const auto it = slots_.find(key);
  return it == slots_.end() ? 0 : it->second.waiters.size();
}

// --- registration ---

void register_my_keyed_locks() {
  using lockstep::keyed_fifo_adapter;
  using lockstep::keyed_rw_adapter;
  lockstep::register_adapter(
      keyed_rw_adapter({.name = "my-rw",
                        .description = "my keyed reader/writer lock (writer preference)",
                        .writers_first = true,
                        .make_machine = [] { return std::make_unique<ReadWriteTable>(); }}));
  lockstep::register_adapter(keyed_rw_adapter(
      {.name = "my-rw-buggy",
       .description = "my keyed reader/writer lock that forgets a writer it hands the key to",
       .writers_first = true,
       .make_machine =
           [] {
             return std::make_unique<ReadWriteTable>(ReadWriteTable::Bug::forgets_handed_writer);
           },
       // A calibration variant: `calibrate` must find it breaking this.
       .breaks = "mutual_exclusion",
       .sibling = "my-rw"}));
  lockstep::register_adapter(keyed_fifo_adapter(
      {.name = "my-fifo",
       .description = "my keyed FIFO lock",
       .make_machine = [](FifoLimits limits) { return std::make_unique<FifoTable>(limits); }}));
  lockstep::register_adapter(keyed_fifo_adapter(
      {.name = "my-fifo-buggy",
       .description = "my keyed FIFO lock whose waiters are a stack (newest first)",
       .make_machine =
           [](FifoLimits limits) {
             return std::make_unique<FifoTable>(limits, FifoTable::Bug::newest_first);
           },
       .breaks = "fifo",
       .sibling = "my-fifo"}));
}

}  // namespace my_keyed
