#pragma once
// RwCore: the keyed shared/exclusive lock (`keyed-rw`, after the keyed-mutex seed) as a
// deterministic state machine: requests in, grants out. No threads, clocks or blocking: a driver
// (KeyedRwMutex for threads, SimKeyedRw for simulator fibers) serialises calls into one core and
// blocks each caller until the core grants its request.
//
// Order, per key (writer preference):
// - A shared request is granted at once iff no exclusive holds the key and no request waits for
//   it: shared holders overlap while no earlier exclusive is pending.
// - An exclusive request is granted at once iff the key has no holder and no waiter.
// - Otherwise the request waits in the key's queue, in request order. Whenever holders leave or a
//   waiter withdraws, the queue is served from its head: consecutive shared requests are granted
//   together while no exclusive holds; an exclusive is granted only when no one holds; serving
//   stops at the first request that cannot be granted. Hence exclusives run in request order, an
//   exclusive waits for the shared holders before it, shared requests that arrive after a queued
//   exclusive wait for it, and no request ever passes an earlier one it conflicts with.
// - try_acquire grants on exactly the condition of an immediate grant and otherwise does nothing:
//   it never queues and never changes the queue.
// - cancel withdraws a waiting request (its caller gave up or died); the queue is served again.
// - Keys are independent. A key has state only while it has a holder or a waiter; the call that
//   leaves it idle frees it, so key_count() == 0 whenever nothing is held or awaited (no_leak).
// - Ids: every request that is granted or queued takes the next id (1, 2, 3, ...); a failed
//   try_acquire takes none. Releasing a request that does not hold is a broken precondition
//   (LOCKSTEP_CHECK throws std::logic_error).
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "lockstep/keyed_state_machine.h"
#include "services/keyed/adapter/key_table.h"

namespace lockstep::keyed {

// What a key looks like from outside, for tests and the state-machine model.
struct RwKeySnapshot {
  uint32_t shared_holders = 0;
  RequestId exclusive_holder = kNoRequest;
  std::vector<std::pair<RequestId, RwMode>> waiting;  // in queue order
  bool operator==(const RwKeySnapshot&) const = default;
};

// lockstep's implementation of the keyed RW state machine (keyed_state_machine.h). The thread
// driver holds RwCores by value, so its calls are direct, not virtual.
class RwCore : public RwStateMachine {
 public:
  RwCore() = default;
  RwCore(const RwCore&) = delete;
  RwCore& operator=(const RwCore&) = delete;

  RwAdmission request(const KeyRef& key, RwMode mode) override;
  std::optional<RequestId> try_acquire(const KeyRef& key, RwMode mode) override;
  // Ends the hold of request id; appends to `granted` the waiters that now hold, in grant order.
  void release(const KeyRef& key, RequestId id, RwMode mode,
               std::vector<RequestId>& granted) override;
  // Withdraws waiting request id, appending new grants. False if id is not waiting on key (it was
  // granted already: the caller holds and must release instead).
  bool cancel(const KeyRef& key, RequestId id, std::vector<RequestId>& granted) override;

  // Keys with any holder or waiter (the per-key state that exists).
  size_t key_count() const override { return keys_.size(); }
  // Holders plus waiters of key; 0 when the key has no state.
  size_t entries(std::string_view key) const override;
  RwKeySnapshot snapshot(std::string_view key) const;

 protected:
  struct KeyView {
    uint32_t shared_holders = 0;
    bool exclusive_held = false;
    size_t waiting = 0;
    bool exclusive_first = false;  // the head of the queue is an exclusive request
  };
  // Whether a new shared request may be granted at once. The rule above (writer preference): no
  // exclusive holds and no one waits. Overridden only by the calibration variant that the suite
  // must catch (services/keyed/known_bad/bad_rw_reader_preference.h); production code never overrides it.
  virtual bool admits_shared_now(const KeyView& key) const;
  // Whether a release that leaves the key as `key` serves its queue: always, since a release is
  // what wakes the waiters. Overridden only by the calibration variant that forgets to wake a
  // queued writer when the last holder leaves (services/keyed/known_bad/bad_rw_lost_wakeup.h).
  virtual bool serves_queue_after_release(const KeyView& key) const {
    static_cast<void>(key);
    return true;
  }

 private:
  struct Waiter {
    RequestId id = kNoRequest;
    RwMode mode = RwMode::shared;
  };
  struct KeyState {
    uint32_t shared_holders = 0;
    RequestId exclusive_holder = kNoRequest;
    WaitQueue<Waiter> queue;
  };

  static KeyView view(const KeyState& state);
  bool grantable_now(const KeyState& state, RwMode mode) const;
  static void grant(KeyState& state, RequestId id, RwMode mode);
  static void serve_queue(KeyState& state, std::vector<RequestId>& granted);
  void free_if_idle(size_t pos);
  size_t find_or_throw(const KeyRef& key);

  static constexpr size_t kAbsent = KeyTable<KeyState>::npos;

  KeyTable<KeyState> keys_;
  RequestId next_id_ = 1;
};

}  // namespace lockstep::keyed
