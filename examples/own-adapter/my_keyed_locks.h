#pragma once
// A user's own keyed locks, written against lockstep's keyed state-machine seam only
// (include/lockstep/keyed_state_machine.h): a keyed reader/writer lock with writer
// preference and a keyed FIFO lock. Plain std containers, their own names, nothing of lockstep's
// own cores. Each comes in a correct and a buggy variant; the buggy one is the bug this example
// exists to catch:
//   ReadWriteTable, Bug::forgets_handed_writer: a writer that waited and is handed the key by a
//     release is not marked as the holder, so a reader (or writer) that comes next walks in
//     beside it (mutual_exclusion).
//   FifoTable, Bug::newest_first: the waiters are a stack, so a release hands the key to the
//     newest waiter, not the oldest (fifo).
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/keyed_state_machine.h"

namespace my_keyed {

using lockstep::keyed::FifoAdmission;
using lockstep::keyed::FifoLimits;
using lockstep::keyed::FifoRejection;
using lockstep::keyed::KeyRef;
using lockstep::keyed::RequestId;
using lockstep::keyed::RwAdmission;
using lockstep::keyed::RwMode;

class ReadWriteTable final : public lockstep::keyed::RwStateMachine {
 public:
  enum class Bug { none, forgets_handed_writer };
  explicit ReadWriteTable(Bug bug = Bug::none) : bug_(bug) {}

  RwAdmission request(const KeyRef& key, RwMode mode) override;
  std::optional<RequestId> try_acquire(const KeyRef& key, RwMode mode) override;
  void release(const KeyRef& key, RequestId id, RwMode mode,
               std::vector<RequestId>& granted) override;
  bool cancel(const KeyRef& key, RequestId id, std::vector<RequestId>& granted) override;
  size_t key_count() const override { return rooms_.size(); }
  size_t entries(std::string_view key) const override;

 private:
  struct Ticket {
    RequestId id;
    bool writer;
  };
  struct Room {
    int readers = 0;
    bool writing = false;
    std::deque<Ticket> line;
  };
  static bool may_enter_now(const Room& room, bool writer);
  void let_in_from_line(Room& room, std::vector<RequestId>& granted) const;
  void forget_if_empty(std::string_view key);

  Bug bug_;
  RequestId last_ticket_ = 0;
  std::map<std::string, Room, std::less<>> rooms_;
};

class FifoTable final : public lockstep::keyed::FifoStateMachine {
 public:
  enum class Bug { none, newest_first };
  FifoTable(FifoLimits limits, Bug bug = Bug::none) : limits_(limits), bug_(bug) {}

  FifoAdmission request(const KeyRef& key) override;
  std::optional<RequestId> try_acquire(const KeyRef& key) override;
  RequestId release(const KeyRef& key, RequestId holder) override;
  bool cancel(const KeyRef& key, RequestId id) override;
  std::vector<FifoRejection> clear() override;
  bool held(std::string_view key) const override { return slots_.count(key) != 0; }
  size_t waiting(std::string_view key) const override;
  size_t size() const override { return slots_.size(); }
  FifoLimits limits() const override { return limits_; }

 private:
  struct Slot {
    RequestId owner = 0;
    std::deque<RequestId> waiters{};  // oldest first
  };

  FifoLimits limits_;
  Bug bug_;
  RequestId last_ticket_ = 0;
  std::map<std::string, Slot, std::less<>> slots_;
};

// Registers my-rw, my-rw-buggy, my-fifo and my-fifo-buggy (keyed locks, simulator only).
void register_my_keyed_locks();

}  // namespace my_keyed
