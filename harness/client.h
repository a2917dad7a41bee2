#pragma once
// A workload client: the code of one simulated process, written as plain blocking steps.
//
// Every step that touches the lock or the guarded resource is recorded in the history: lock
// operations as invoke/complete pairs, the critical section as cs_enter (on a successful acquire)
// and cs_exit (just before a release, when the client sees its validity end, or when it dies),
// faults it suffers as fault events. The steps never throw for expected lock outcomes (contention,
// a lock that is gone): they return them, so a scenario reads like its description.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "adapters/core/locker.h"
#include "harness/client_side_leases.h"
#include "harness/recorder.h"
#include "harness/resource.h"
#include "harness/scenario_world.h"

namespace lockstep {

struct ClientSetup {
  int id = 0;
  std::string name;
  int node = 0;
  ScenarioWorld* world = nullptr;
  Recorder* recorder = nullptr;
  GuardedResource* resource = nullptr;
  LockAdapter* adapter = nullptr;
  uint64_t random_seed = 0;
  ClientSideLeases* leases = nullptr;  // only where servers do not report their leases
};

// The client's adapter as its Locker sees it where leases are derived from the clients
// (ClientSideLeases): it notes the true time each acquire attempt is sent, so that a derived
// grant starts at the attempt that won it, not at the first of its retries. Everything else goes
// through unchanged.
class AttemptTimedAdapter final : public LockAdapter {
 public:
  AttemptTimedAdapter(LockAdapter& inner, ScenarioWorld& world) : inner_(inner), world_(world) {}

  std::string_view name() const override { return inner_.name(); }
  FencingSupport fencing() const override { return inner_.fencing(); }
  AdapterResult create_lock(const LockSpec& spec) override {
    last_create_sent_us_ = world_.now_us();
    return inner_.create_lock(spec);
  }
  AdapterResult release_lock(const LockSpec& spec) override { return inner_.release_lock(spec); }
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override {
    return inner_.extend_lock(spec, ttl_ms);
  }
  AdapterResult is_valid_lock(const LockSpec& spec) override { return inner_.is_valid_lock(spec); }
  bool is_whole_library() const override { return inner_.is_whole_library(); }
  bool retries_itself() const override { return inner_.retries_itself(); }
  int64_t validity_end_us(const LockSpec& spec, int64_t requested_at_us,
                          int64_t ttl_ms) const override {
    return inner_.validity_end_us(spec, requested_at_us, ttl_ms);
  }

  // True time the latest create_lock was sent.
  TimeUs last_create_sent_us() const { return last_create_sent_us_; }

 private:
  LockAdapter& inner_;
  ScenarioWorld& world_;
  TimeUs last_create_sent_us_ = 0;
};

class Client {
 public:
  explicit Client(ClientSetup setup);

  int id() const { return setup_.id; }
  const std::string& name() const { return setup_.name; }
  int node() const { return setup_.node; }
  Clock& clock() { return setup_.world->clock(setup_.node); }
  FencingSupport fencing() const { return setup_.adapter->fencing(); }

  // Acquires key, retrying per `retry`. On success the client is inside the critical section.
  std::optional<Lock> acquire(const std::string& key, int64_t ttl_ms,
                              RetrySettings retry = RetrySettings::none());
  // Leaves the critical section (if inside) and releases. Whether the release removed the lock.
  bool release(Lock& lock);
  // Extends; false (recorded as fail) when the lock is no longer ours.
  bool extend(Lock& lock, int64_t ttl_ms);
  bool is_locked(Lock& lock);
  // Leaves the critical section without releasing: the client saw its validity end.
  void leave(Lock& lock);

  // For careful holders, which work only while their lock is valid: when the lock's current lease
  // (its grant or latest successful extend) stops being valid, in microseconds on this client's
  // monotonic clock, as the lock reports it (Lock::valid_until_us); 0 once released.
  int64_t validity_end_us(const Lock& lock) const;
  // Enters the critical section again: a careful holder leaves it while an extend is in flight
  // (it cannot tell whether its validity survives the call) and comes back when the extend
  // succeeded within the validity.
  void reenter(const Lock& lock) { enter(lock); }

  // The guarded resource, with the lock's fencing token. nullopt / false when refused.
  std::optional<int64_t> read(const Lock& lock);
  bool write(const Lock& lock, int64_t value);
  // read, work for work_ms, write read+1. False if either access was refused.
  bool increment(const Lock& lock, int64_t work_ms);
  // Starts the lock's auto-extension (Lock::auto_extend; every_ms 0: a third of its TTL).
  void auto_extend(Lock& lock, int64_t every_ms);
  // A careful holder's long work: reads the resource, then steps of step_ms (cut short to end at
  // the validity the lock knows then), each writing the next value, until work_ms is done or
  // lock.lost() says the lock may be gone, which it asks before every write. A loss leaves the critical section (traced with its reason). Returns
  // whether the work finished.
  bool work_until_lost(Lock& lock, int64_t work_ms, int64_t step_ms);

  void sleep_ms(int64_t duration_ms);
  // Stop-the-world for duration_ms of true time starting now; resumes exactly here.
  void pause(int64_t duration_ms);
  // Dies here without cleaning up: records the fault, leaves any critical section, unwinds.
  [[noreturn]] void crash();

 private:
  void enter(const Lock& lock);
  void exit_critical_section(const std::string& key);
  size_t record_invoke(Op op, const std::string& key);
  void record_granted(Op op, const Lock& lock, std::string detail = {});
  // An operation that threw: an unknown outcome, or an error (nothing took effect), with the
  // lock's value so that the judge can look for an effect on the servers.
  void record_failed(Op op, const Lock& lock, const LockError& error);
  void record_complete(Op op, const std::string& key, Outcome outcome,
                       std::optional<uint64_t> token = {}, std::string detail = {});

  ClientSetup setup_;
  SeededRandom random_;
  std::unique_ptr<AttemptTimedAdapter> timed_;  // only where leases are derived (setup_.leases)
  Locker locker_;
  // The keys whose critical sections it is in: one at a time, or several when its operations on
  // different keys run concurrently (fibers of one process sharing its lock client).
  std::set<std::string> inside_keys_;
  std::set<std::string> held_values_;  // locks acquired and not released yet, by value
};

}  // namespace lockstep
