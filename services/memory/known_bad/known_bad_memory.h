#pragma once
// The known-bad in-memory lock: the production MemoryAdapter behind a release that does not check
// the owner. It remembers who the store last granted each key to (one adapter is shared by every
// client of the memory backend, so it sees every grant) and releases on that owner's behalf, so a
// release deletes whoever holds the key, as a plain DEL would. Everything else is the production
// adapter's. Caught by stolen-lock (ownership).
#include <map>
#include <string>

#include "lockstep/adapter.h"
#include "lockstep/clock.h"
#include "services/memory/adapter/memory_adapter.h"

namespace lockstep {

// The known-bad clock of bad-wall-clock-expiry: it answers monotonic_us() with the wall reading,
// so the production store it is given times its leases on the wall clock. A forward jump of the
// store's wall clock then ends live leases early; caught by server-clock-jump.
class WallClockAsMonotonic final : public Clock {
 public:
  explicit WallClockAsMonotonic(Clock& node_clock) : node_clock_(node_clock) {}
  int64_t now_us() override { return node_clock_.now_us(); }
  int64_t monotonic_us() override { return node_clock_.now_us(); }
  void sleep_for_us(int64_t duration_us) override { node_clock_.sleep_for_us(duration_us); }

 private:
  Clock& node_clock_;
};

class BadMemoryNoOwnerCheck final : public LockAdapter {
 public:
  explicit BadMemoryNoOwnerCheck(MemoryAdapter& store) : store_(store) {}

  std::string_view name() const override { return "bad-memory-no-owner-check"; }
  FencingSupport fencing() const override { return store_.fencing(); }
  AdapterResult create_lock(const LockSpec& spec) override;
  AdapterResult release_lock(const LockSpec& spec) override;
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override {
    return store_.extend_lock(spec, ttl_ms);
  }
  AdapterResult is_valid_lock(const LockSpec& spec) override { return store_.is_valid_lock(spec); }

 private:
  MemoryAdapter& store_;
  std::map<std::string, std::string> last_owner_;  // key -> the value of its latest grant
};

}  // namespace lockstep
