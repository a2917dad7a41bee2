#include "services/keyed/backend/keyed_sim.h"

#include "sim/assert.h"

namespace lockstep {

using keyed::FifoAdmit;
using keyed::KeyedLockError;
using keyed::RequestId;
using keyed::RwMode;

// --- SimKeyedRw ---

SimKeyedRw::SimKeyedRw(sim::World& world, std::unique_ptr<keyed::RwCore> core,
                       KeyStateHook on_key_state)
    : world_(world), core_(std::move(core)), on_key_state_(std::move(on_key_state)) {
  LOCKSTEP_SIM_CHECK(core_ != nullptr, "a SimKeyedRw needs a core");
}

void SimKeyedRw::note(std::string_view key) {
  if (on_key_state_) on_key_state_(key, core_->entries(key));
}

void SimKeyedRw::wake_granted() {
  for (RequestId id : granted_) {
    auto it = parked_.find(id);
    LOCKSTEP_SIM_CHECK(it != parked_.end(), "every queued request has a parked fiber");
    it->second.granted = true;
    world_.wake(it->second.waiter);
  }
  granted_.clear();
}

void SimKeyedRw::wait(std::string_view key, RequestId id, RwMode mode) {
  LOCKSTEP_SIM_CHECK(world_.in_fiber(), "only a fiber can wait for a keyed lock");
  const sim::Waiter waiter = world_.prepare_park();
  parked_[id] = Parked{.waiter = waiter};
  try {
    world_.park(waiter);
  } catch (...) {  // ProcessKilled: a dead fiber must not keep or block the key
    const bool granted = parked_.at(id).granted;
    parked_.erase(id);
    if (granted) {
      core_->release(key, id, mode, granted_);
    } else {
      core_->cancel(key, id, granted_);
    }
    note(key);
    wake_granted();
    throw;
  }
  LOCKSTEP_SIM_CHECK(parked_.at(id).granted, "a keyed-rw waiter is woken only by its grant");
  parked_.erase(id);
}

keyed::RwHandle SimKeyedRw::acquire(std::string_view key, RwMode mode) {
  std::string owned_key(key);
  const keyed::RwAdmission admission = core_->request(key, mode);
  note(key);
  if (!admission.granted) wait(key, admission.id, mode);
  return keyed::RwHandle(this, std::move(owned_key), admission.id, mode);
}

std::optional<keyed::RwHandle> SimKeyedRw::try_acquire(std::string_view key, RwMode mode) {
  const std::optional<RequestId> id = core_->try_acquire(key, mode);
  if (!id) return std::nullopt;
  note(key);
  return keyed::RwHandle(this, std::string(key), *id, mode);
}

void SimKeyedRw::release(const keyed::KeyRef& key, RequestId id, RwMode mode) noexcept {
  core_->release(key, id, mode, granted_);
  note(key.key);
  wake_granted();
}

// --- SimFifoLock ---

SimFifoLock::SimFifoLock(sim::World& world, std::unique_ptr<keyed::FifoCore> core,
                         KeyStateHook on_key_state, RefusalHook on_refused)
    : world_(world),
      core_(std::move(core)),
      on_key_state_(std::move(on_key_state)),
      on_refused_(std::move(on_refused)) {
  LOCKSTEP_SIM_CHECK(core_ != nullptr, "a SimFifoLock needs a core");
}

void SimFifoLock::note(std::string_view key) {
  if (on_key_state_) on_key_state_(key, (core_->held(key) ? 1 : 0) + core_->waiting(key));
}

void SimFifoLock::wake(RequestId id, WaitEnd end) {
  auto it = parked_.find(id);
  LOCKSTEP_SIM_CHECK(it != parked_.end(), "every queued request has a parked fiber");
  it->second.end = end;
  world_.wake(it->second.waiter);
}

RequestId SimFifoLock::acquire(std::string_view key, const keyed::WithLockOptions& options) {
  const keyed::FifoAdmission admission = core_->request(key);
  switch (admission.admit) {
    case FifoAdmit::invalid_key:
      throw KeyedLockError::invalid_key(key, core_->limits().max_key_length);
    case FifoAdmit::queue_full:
      throw KeyedLockError::queue_full(key, core_->limits().max_waiters_per_key);
    case FifoAdmit::granted: note(key); return admission.id;
    case FifoAdmit::queued: break;
  }
  note(key);
  return wait(key, admission.id, options);
}

RequestId SimFifoLock::wait(std::string_view key, RequestId id,
                            const keyed::WithLockOptions& options) {
  LOCKSTEP_SIM_CHECK(world_.in_fiber(), "only a fiber can wait for a keyed lock");
  const sim::Waiter waiter = world_.prepare_park();
  parked_[id] = Parked{.waiter = waiter, .node = world_.current_node()};
  const sim::TimeUs deadline_us =
      options.max_wait_ms
          ? world_.now_us() + std::max<int64_t>(*options.max_wait_ms, 0) * sim::kUsPerMs
          : sim::kTimeNever;
  try {
    world_.park(waiter, deadline_us);
  } catch (...) {  // ProcessKilled: a dead fiber must not keep or block the key
    const WaitEnd end = parked_.at(id).end;
    parked_.erase(id);
    if (end == WaitEnd::granted) release(std::string(key), id);
    if (end == WaitEnd::waiting) {
      core_->cancel(key, id);
      note(key);
    }
    throw;
  }
  const WaitEnd end = parked_.at(id).end;
  parked_.erase(id);
  if (end == WaitEnd::granted) return id;
  if (end == WaitEnd::cleared) throw KeyedLockError::cleared(key);
  // The deadline passed while still queued: withdraw; the holder and the others are untouched.
  LOCKSTEP_SIM_CHECK(core_->cancel(key, id),
                     "a waiter that was neither granted nor cleared is queued");
  note(key);
  throw KeyedLockError::timeout(key, *options.max_wait_ms);
}

void SimFifoLock::release(const std::string& key, RequestId id) noexcept {
  const RequestId next = core_->release(key, id);
  note(key);
  if (next != keyed::kNoRequest) wake(next, WaitEnd::granted);
}

size_t SimFifoLock::clear() {
  const std::vector<keyed::FifoRejection> rejected = core_->clear();
  for (const keyed::FifoRejection& r : rejected) {
    note(r.key);
    if (auto it = parked_.find(r.id); on_refused_ && it != parked_.end())
      on_refused_(it->second.node, r.key);
    wake(r.id, WaitEnd::cleared);
  }
  return rejected.size();
}

std::optional<RequestId> SimFifoLock::try_acquire_now(std::string_view key) {
  const std::optional<RequestId> id = core_->try_acquire(key);
  if (id) note(key);
  return id;
}

}  // namespace lockstep
