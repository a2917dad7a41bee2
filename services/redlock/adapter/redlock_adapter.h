#pragma once
// RedlockAdapter: Redlock behind the generic LockAdapter interface, so Locker, Lock and the
// harness drive it like any other lock. One create_lock is one Redlock attempt (Locker retries
// contention); the Redlock settings other than the duration (the Lock's TTL) are the adapter's.
//
// Mapping: a lock granted by a majority with positive validity -> ok (token 0:
// FencingSupport::none, Redlock cannot order grants); anything else -> contended, after releasing
// on every node: no majority, no validity left, and also too few nodes answering (Redlock expects a
// minority of nodes to fail, and Redis-DLM retries every failed attempt; the message says which).
// release: ok when a majority deleted our value (deleting it from a minority removes no lock: we
// held none by then), not_owner when a majority answered otherwise, backend_error when fewer
// answered; our value is deleted wherever it still is, either way. extend: ok only with a majority
// and validity left (and within the max hold time of the lock's first grant), else not_owner.
// is_valid: our validity has not ended by our clock and a majority holds our value.
//
// Invariants: the adapter tracks the locks it granted (value -> validity) until released, failed,
// or pruned once their validity ended by the adapter's clock; at most kHeldLocksMax at once. A
// create at the cap first prunes the expired entries, so only kHeldLocksMax LIVE locks make it a
// backend_error (never unbounded growth, never a cap used up by locks nobody released).
#include <map>
#include <memory>
#include <string>

#include "lockstep/adapter.h"
#include "services/redlock/adapter/redlock_manager.h"

namespace lockstep {

inline constexpr size_t kHeldLocksMax = 1024;

struct RedlockAdapterOptions {
  RedisFanout* fanout = nullptr;
  Clock* clock = nullptr;
  Random* random = nullptr;  // the manager's (adapter values come from the Lock)
  RedlockSettings settings{};
  std::string key_prefix = "lock:";
};

class RedlockAdapter final : public LockAdapter {
 public:
  explicit RedlockAdapter(RedlockAdapterOptions options);

  std::string_view name() const override { return "redlock"; }
  FencingSupport fencing() const override { return FencingSupport::none; }
  AdapterResult create_lock(const LockSpec& spec) override;
  AdapterResult release_lock(const LockSpec& spec) override;
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override;
  AdapterResult is_valid_lock(const LockSpec& spec) override;
  // The held lock's Redlock validity end (valid_until_us); requested_at_us once it is not held.
  int64_t validity_end_us(const LockSpec& spec, int64_t requested_at_us,
                          int64_t ttl_ms) const override;

  RedlockManager& manager() { return manager_; }
  size_t held_locks() const { return held_.size(); }

 private:
  RedlockSettings settings_for(int64_t ttl_ms) const;
  void prune_expired();  // drops the entries whose validity ended by the clock

  RedlockManager manager_;
  std::map<std::string, RedlockLock> held_;  // by value
};

}  // namespace lockstep
