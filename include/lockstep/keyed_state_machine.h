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
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::keyed {

// Identifies one request to a keyed lock core. Ids are 1, 2, 3, ... in request order per core.
using RequestId = uint64_t;
inline constexpr RequestId kNoRequest = 0;

// The hash of a key for the keyed locks (shard choice, table slots). Keys are mostly short
// ("doc:42", "order:1234"): up to 16 bytes they are read with two overlapping loads and mixed by
// two 64x64->128 multiplies (wyhash's short-input scheme), inline, about 15 instructions instead
// of a call to std::hash's byte loop; longer keys use std::hash. Deterministic (fixed constants,
// no per-process seed), so identical runs lay tables out identically.
inline size_t key_hash(std::string_view key) noexcept {
#if defined(__SIZEOF_INT128__) && SIZE_MAX == UINT64_MAX
  const size_t n = key.size();
  if (n > 16) return std::hash<std::string_view>{}(key);
  const auto* p = reinterpret_cast<const unsigned char*>(key.data());  // NOLINT: byte view
  auto load = [](const unsigned char* at, size_t bytes) {
    uint64_t w = 0;
    std::memcpy(&w, at, bytes);
    return w;
  };
  uint64_t a = 0;
  uint64_t b = 0;
  if (n >= 8) {
    a = load(p, 8);
    b = load(p + n - 8, 8);
  } else if (n >= 4) {
    a = load(p, 4);
    b = load(p + n - 4, 4);
  } else if (n > 0) {
    a = (uint64_t{p[0]} << 16) | (uint64_t{p[n >> 1]} << 8) | p[n - 1];
  }
  __extension__ using u128 = unsigned __int128;
  const u128 first = static_cast<u128>(a ^ 0xa0761d6478bd642fULL) * (b ^ 0xe7037ed1a0b428dbULL);
  const uint64_t lo = static_cast<uint64_t>(first) ^ 0x8ebc6af09c88c6e3ULL ^ n;
  const uint64_t hi = static_cast<uint64_t>(first >> 64) ^ 0xe7037ed1a0b428dbULL;
  const u128 second = static_cast<u128>(lo) * hi;
  return static_cast<size_t>(static_cast<uint64_t>(second) ^ static_cast<uint64_t>(second >> 64));
#else
  return std::hash<std::string_view>{}(key);
#endif
}

// A key with its hash, computed once per operation and reused for the shard choice, the lookup
// and the insertion. Converts implicitly from anything that names a key.
struct KeyRef {
  KeyRef(std::string_view k) : key(k), hash(key_hash(k)) {}      // NOLINT: implicit
  KeyRef(const std::string& k) : KeyRef(std::string_view(k)) {}  // NOLINT: implicit
  KeyRef(const char* k) : KeyRef(std::string_view(k)) {}         // NOLINT: implicit
  // A key whose hash is already known (a handle keeps it from the acquire). known_hash must be
  // key_hash(k): every table compares hashes first.
  KeyRef(std::string_view k, size_t known_hash) : key(k), hash(known_hash) {}
  std::string_view key{};
  size_t hash{};
};

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
  std::string key{};
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
