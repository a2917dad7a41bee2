#pragma once
// The keyed locks' public seam: a keyed shared/exclusive lock (RwStateMachine) and a keyed FIFO
// lock (FifoStateMachine) as deterministic state machines, requests in, grants out. Implement one
// of these and lockstep runs it: on simulator fibers (services/keyed/backend/keyed_sim.h, every
// keyed scenario, sweep, matrix, calibrate) with the same keyed checkers that judge lockstep's own
// RwCore and FifoCore, which are two implementations among others (rw_core.h, fifo_core.h).
//
// What an implementation is: no threads, clocks, sleeps, randomness or blocking. One driver owns
// it and calls it from one thread (or one fiber at a time); a call returns at once with what the
// lock decides now. Waiting is the driver's: it parks (or blocks) the caller of a request the
// machine queued until a later call names that request as granted, the caller's wait runs out
// (the driver cancels), or clear() rejects it. Timeouts are the driver's too (WithLockOptions'
// max_wait_ms): the machine only sees the cancel. Make the machine a function of its calls
// (no iteration over an unordered container whose order reaches an answer) so a simulated run
// stays a function of its seed.
//
// Ids: every request that is granted or queued gets an id from the machine, not kNoRequest, and
// unique among the requests that are still held or waiting (1, 2, 3, ... is the easy choice). A
// grant names the id of the request it admits.
//
// What the driver holds a machine to, at every call (services/keyed/backend/keyed_sim.h):
// - ids: a new request's id is not kNoRequest and not the id of a live (held or waiting) request;
// - grants: every id a call reports granted (release's and cancel's `granted`, FIFO release's
//   next holder) is a request of that key that is waiting now; none is reported twice;
// - clear(): every rejected id is a request waiting now;
// - no throw: anything thrown out of a call (std::exception or not).
// A machine that breaks one of these has stopped meaning anything (the driver cannot wake a
// request that does not wait): the run ends there as an error (a sweep's seed "incomplete",
// exit 4), with one line naming the lock, the call and what it did or threw. What the driver does
// not check is the lock's judgement: a grant that lets a reader in beside a writer, two callers
// of one FIFO key run together, or a request served out of order is carried out as the machine
// says and judged from the history by the keyed checkers (mutual_exclusion, fifo,
// writer_preference, no_leak, liveness), which is a violation that a sweep shrinks to a replayable
// seed. The driver only ever releases ids it holds and cancels ids that wait, so a machine need
// not defend against those.
//
// entries(key) (RW) and held(key) + waiting(key) (FIFO) must report the machine's real per-key
// state: no_leak judges that a key nobody holds or awaits has 0 entries.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "services/keyed/adapter/key_table.h"

namespace lockstep::keyed {

enum class RwMode : uint8_t { shared, exclusive };
std::string_view to_string(RwMode mode);

struct RwAdmission {
  RequestId id = kNoRequest;
  bool granted = false;  // false: queued; the driver waits for a grant naming id
};

// A keyed shared/exclusive lock: any number of shared holders of a key, or one exclusive.
class RwStateMachine {
 public:
  virtual ~RwStateMachine() = default;

  // A blocking acquire: granted now, or queued (granted later by a release or cancel).
  virtual RwAdmission request(const KeyRef& key, RwMode mode) = 0;
  // A try-acquire: an id if granted now; nullopt otherwise, with nothing queued.
  virtual std::optional<RequestId> try_acquire(const KeyRef& key, RwMode mode) = 0;
  // Ends the hold of request id (granted with `mode` on key); appends to `granted` the waiters of
  // key that now hold, in grant order.
  virtual void release(const KeyRef& key, RequestId id, RwMode mode,
                       std::vector<RequestId>& granted) = 0;
  // Withdraws request id, which waits on key (its caller's wait ran out or it died), appending
  // the waiters that now hold. False if id is not waiting (the driver then releases it instead).
  virtual bool cancel(const KeyRef& key, RequestId id, std::vector<RequestId>& granted) = 0;

  // Keys with any holder or waiter; holders plus waiters of key (0: the key has no state).
  virtual size_t key_count() const = 0;
  virtual size_t entries(std::string_view key) const = 0;
};

struct FifoLimits {
  size_t max_key_length = 256;  // bytes; std::numeric_limits<size_t>::max() disables the check
  size_t max_waiters_per_key = 1000;
};

enum class FifoAdmit { granted, queued, invalid_key, queue_full };

struct FifoAdmission {
  FifoAdmit admit = FifoAdmit::granted;
  RequestId id = kNoRequest;  // granted or queued
};

struct FifoRejection {
  std::string key;
  RequestId id = kNoRequest;
  bool operator==(const FifoRejection&) const = default;
};

// A keyed FIFO lock: one holder per key, callers served in arrival order.
class FifoStateMachine {
 public:
  virtual ~FifoStateMachine() = default;

  // Granted now, queued, or refused (invalid_key, queue_full: no id, nothing changes).
  virtual FifoAdmission request(const KeyRef& key) = 0;
  // Granted now (an id) or nullopt, with nothing queued.
  virtual std::optional<RequestId> try_acquire(const KeyRef& key) = 0;
  // Ends the hold of `holder`; returns the waiter of key that now holds, or kNoRequest.
  virtual RequestId release(const KeyRef& key, RequestId holder) = 0;
  // Withdraws waiter id; false if it is not waiting.
  virtual bool cancel(const KeyRef& key, RequestId id) = 0;
  // Rejects every waiter of every key (the driver fails their calls with LOCK_CLEARED).
  virtual std::vector<FifoRejection> clear() = 0;

  virtual bool held(std::string_view key) const = 0;
  virtual size_t waiting(std::string_view key) const = 0;
  // Keys with state.
  virtual size_t size() const = 0;
  // For the refusals' messages (KeyedLockError::invalid_key, queue_full).
  virtual FifoLimits limits() const = 0;
};

}  // namespace lockstep::keyed
