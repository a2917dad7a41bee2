#pragma once
// The simulator drivers of the keyed locks: the same cores as the thread drivers
// (services/keyed/adapter/rw_core.h, fifo_core.h), run on simulator fibers. A caller that must wait parks
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
#include <string>
#include <string_view>
#include <vector>

#include "services/keyed/adapter/fifo_lock.h"
#include "services/keyed/adapter/keyed_rw.h"
#include "sim/world.h"

namespace lockstep {

using KeyStateHook = std::function<void(std::string_view key, size_t entries)>;

class SimKeyedRw final : public keyed::KeyedRwLock {
 public:
  SimKeyedRw(sim::World& world, std::unique_ptr<keyed::RwCore> core,
             KeyStateHook on_key_state = {});

  keyed::RwHandle acquire(std::string_view key, keyed::RwMode mode) override;
  std::optional<keyed::RwHandle> try_acquire(std::string_view key, keyed::RwMode mode) override;
  size_t key_count() const override { return core_->key_count(); }
  const keyed::RwCore& core() const { return *core_; }

 protected:
  void release(const keyed::KeyRef& key, keyed::RequestId id, keyed::RwMode mode) noexcept override;

 private:
  struct Parked {
    sim::Waiter waiter;
    bool granted = false;
  };
  void wait(std::string_view key, keyed::RequestId id, keyed::RwMode mode);
  void wake_granted();
  void note(std::string_view key);

  sim::World& world_;
  std::unique_ptr<keyed::RwCore> core_;
  KeyStateHook on_key_state_;
  std::map<keyed::RequestId, Parked> parked_;
  std::vector<keyed::RequestId> granted_;
};

class SimFifoLock final : public keyed::KeyedFifoLock {
 public:
  // Over `core` (the production FifoCore, or a calibration variant).
  // on_refused(node, key) is told, as clear() decides it, of each waiter it turns away (the node
  // the waiting fiber runs on): the waiter itself learns it only when it next runs, which a pause
  // can put off, but the history must show the refusal when the lock made it.
  using RefusalHook = std::function<void(int node, std::string_view key)>;
  SimFifoLock(sim::World& world, std::unique_ptr<keyed::FifoCore> core,
              KeyStateHook on_key_state = {}, RefusalHook on_refused = {});

  bool held(std::string_view key) const override { return core_->held(key); }
  size_t waiting(std::string_view key) const override { return core_->waiting(key); }
  size_t size() const override { return core_->size(); }
  size_t clear() override;
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
    WaitEnd end = WaitEnd::waiting;
    int node = -1;
  };
  keyed::RequestId wait(std::string_view key, keyed::RequestId id,
                        const keyed::WithLockOptions& options);
  void wake(keyed::RequestId id, WaitEnd end);
  void note(std::string_view key);

  sim::World& world_;
  std::unique_ptr<keyed::FifoCore> core_;
  KeyStateHook on_key_state_;
  RefusalHook on_refused_;
  std::map<keyed::RequestId, Parked> parked_;
};

}  // namespace lockstep
