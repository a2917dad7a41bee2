#pragma once
// The in-memory lock: a TTL lease table in this process, for tests and for single-process use.
//
// Expiry is by the adapter's own Clock's monotonic reading (the "server's" oscillator, never its
// wall clock, which can jump): a lock whose expiry time has passed is gone, whether or not
// anything swept it. Release and extend are owner-checked. Each key has a
// fencing counter that strictly increases with every grant and is kept after the lock is released
// or expires (a few bytes per key ever locked; purge_expired() frees expired locks, not counters).
// Thread-safe: one mutex guards the table; nothing blocks while holding it except the observer,
// which is called under the mutex (so it sees events in the order they took effect) and therefore
// must not block or call back into the adapter.
// A lease covers [grant, grant + ttl): at exactly its expiry time by the clock it is gone.
// Locks are not reentrant: a create by the owner already holding the key is contention.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "adapters/core/lease_observer.h"
#include "lockstep/adapter.h"
#include "lockstep/clock.h"

namespace lockstep {

struct MemoryAdapterOptions {
  Clock* clock = nullptr;              // required
  LeaseObserver* observer = nullptr;   // optional: the harness's server-side view
  std::string server_name = "memory";  // how the observer names this store
};

class MemoryAdapter final : public LockAdapter {
 public:
  explicit MemoryAdapter(MemoryAdapterOptions options);

  std::string_view name() const override { return "memory"; }
  FencingSupport fencing() const override { return FencingSupport::monotonic; }
  AdapterResult create_lock(const LockSpec& spec) override;
  AdapterResult release_lock(const LockSpec& spec) override;
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override;
  AdapterResult is_valid_lock(const LockSpec& spec) override;

  // Removes expired locks; returns how many. Per-key fencing counters are kept.
  size_t purge_expired();
  // Unexpired locks right now.
  size_t size();

 private:
  struct Entry {
    std::string value{};
    int64_t expires_at_us = 0;
  };
  // Must hold mutex_. The live entry for key, or nullptr (dropping an expired one).
  Entry* live_entry(const std::string& key, int64_t now_us);

  MemoryAdapterOptions options_;
  std::mutex mutex_;
  std::map<std::string, Entry> locks_;
  std::map<std::string, uint64_t> fencing_counters_;
};

}  // namespace lockstep
