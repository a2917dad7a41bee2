#pragma once
// The simulator drivers of the keyed locks: a keyed state machine (lockstep's RwCore or FifoCore,
// a calibration variant, or a user's own: include/lockstep/keyed_state_machine.h), run on
// simulator fibers. Every call into the machine is held to the contract of that header by a
// MachineGuard (machine_guard.h): a throw or a grant of a request that does not wait ends the run
// as an error with one line, and the lock refuses every later call. A caller that must wait parks
// its fiber (sim::World::park); a grant or a clear() wakes it; a FIFO max wait is the park's
// deadline (true time). One fiber runs at a time, so no mutex is needed, and a run stays a pure
// function of the seed.
//
// Invariants: every queued request has exactly one parked fiber; a grant marks the waiter as
// holder before waking it, so a waiter whose deadline passes after it was granted holds (no
// timeout); a fiber killed while waiting (its node crashed, or the run is torn down) withdraws its
// request, or releases it if it had been granted, so a dead fiber never keeps a key. on_key_state
// is told the entries (holders + waiters) of every key an operation touched, after the operation.
// The driver must outlive the fibers that use it: whoever owns it unwinds them first
// (KeyedSimBackend does).
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "services/keyed/adapter/fifo_lock.h"
#include "services/keyed/adapter/keyed_rw.h"
#include "services/keyed/backend/machine_guard.h"
#include "sim/world.h"

namespace lockstep {

using KeyStateHook = std::function<void(std::string_view key, size_t entries)>;

class SimKeyedRw final : public keyed::KeyedRwLock {
 public:
  // lock_name names the lock in the guard's messages.
  SimKeyedRw(sim::World& world, std::unique_ptr<keyed::RwStateMachine> core, std::string lock_name,
             KeyStateHook on_key_state = {});

  keyed::RwHandle acquire(std::string_view key, keyed::RwMode mode) override;
  std::optional<keyed::RwHandle> try_acquire(std::string_view key, keyed::RwMode mode) override;
  size_t key_count() const override;
  // Throws the machine's failure if it broke its contract (a release cannot: it is noexcept).
  void throw_if_broken() const { guard_.throw_if_broken(); }

 protected:
  void release(const keyed::KeyRef& key, keyed::RequestId id, keyed::RwMode mode) noexcept override;

 private:
  struct Parked {
    sim::Waiter waiter;
    std::string key;
    bool granted = false;
  };
  void wait(std::string_view key, keyed::RequestId id, keyed::RwMode mode);
  // Checks and carries out the grants in granted_; false (recorded) if the machine broke the
  // contract.
  bool wake_granted(std::string_view key, std::string_view call);
  void end_hold(const keyed::KeyRef& key, keyed::RequestId id, keyed::RwMode mode) noexcept;
  void check_new_id(std::string_view call, keyed::RequestId id);
  void note(std::string_view key);

  sim::World& world_;
  std::unique_ptr<keyed::RwStateMachine> core_;
  mutable MachineGuard guard_;
  KeyStateHook on_key_state_;
  std::map<keyed::RequestId, Parked> parked_;  // waiting (or granted, not yet resumed)
  std::set<keyed::RequestId> held_;            // granted and not released
  std::vector<keyed::RequestId> granted_;
};

class SimFifoLock final : public keyed::KeyedFifoLock {
 public:
  // Over `core` (the production FifoCore, or a calibration variant).
  // on_refused(node, key) is told, as clear() decides it, of each waiter it turns away (the node
  // the waiting fiber runs on): the waiter itself learns it only when it next runs, which a pause
  // can put off, but the history must show the refusal when the lock made it.
  using RefusalHook = std::function<void(int node, std::string_view key)>;
  SimFifoLock(sim::World& world, std::unique_ptr<keyed::FifoStateMachine> core,
              std::string lock_name, KeyStateHook on_key_state = {}, RefusalHook on_refused = {});

  bool held(std::string_view key) const override;
  size_t waiting(std::string_view key) const override;
  size_t size() const override;
  size_t clear() override;
  void throw_if_broken() const { guard_.throw_if_broken(); }
  // Granted at once if the key is idle, else nullopt; for the lease-shaped view. Release with
  // release_now.
  std::optional<keyed::RequestId> try_acquire_now(std::string_view key);
  void release_now(const std::string& key, keyed::RequestId id) { release(key, id); }

 protected:
  keyed::RequestId acquire(std::string_view key, const keyed::WithLockOptions& options) override;
  void release(const std::string& key, keyed::RequestId id) noexcept override;

 private:
  enum class WaitEnd { waiting, granted, cleared };
  struct Parked {
    sim::Waiter waiter;
    std::string key;
    WaitEnd end = WaitEnd::waiting;
    int node = -1;
  };
  keyed::RequestId wait(std::string_view key, keyed::RequestId id,
                        const keyed::WithLockOptions& options);
  // Whether id is a request waiting on key now (what a grant or a rejection must name).
  bool waits(keyed::RequestId id, std::string_view key) const;
  void wake(keyed::RequestId id, WaitEnd end);
  void check_new_id(std::string_view call, keyed::RequestId id);
  void note(std::string_view key) noexcept;

  sim::World& world_;
  std::unique_ptr<keyed::FifoStateMachine> core_;
  mutable MachineGuard guard_;
  std::set<keyed::RequestId> held_;  // granted and not released
  KeyStateHook on_key_state_;
  RefusalHook on_refused_;
  std::map<keyed::RequestId, Parked> parked_;
};

}  // namespace lockstep
