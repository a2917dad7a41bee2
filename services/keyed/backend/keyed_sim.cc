#include "services/keyed/backend/keyed_sim.h"

#include <algorithm>

#include <fmt/format.h>

#include "sim/assert.h"

namespace lockstep {

using keyed::FifoAdmit;
using keyed::KeyedLockError;
using keyed::kNoRequest;
using keyed::RequestId;
using keyed::RwMode;

// --- SimKeyedRw ---

SimKeyedRw::SimKeyedRw(sim::World& world, std::unique_ptr<keyed::RwStateMachine> core,
                       std::string lock_name, KeyStateHook on_key_state)
    : world_(world),
      core_(std::move(core)),
      guard_(std::move(lock_name)),
      on_key_state_(std::move(on_key_state)) {
  LOCKSTEP_SIM_CHECK(core_ != nullptr, "a SimKeyedRw needs a core");
}

void SimKeyedRw::note(std::string_view key) {
  if (!on_key_state_) return;
  on_key_state_(key, guard_.call_quietly(
                         "entries", key, [&] { return core_->entries(key); }, size_t{0}));
}

void SimKeyedRw::check_new_id(std::string_view call, RequestId id) {
  if (id == kNoRequest) guard_.fail(fmt::format("{} gave a request no id (kNoRequest)", call));
  if (parked_.count(id) != 0 || held_.count(id) != 0)
    guard_.fail(fmt::format("{} gave request id {}, which a live request has", call, id));
}

bool SimKeyedRw::wake_granted(std::string_view key, std::string_view call) {
  // Checked before any is carried out: a grant list with one bad id wakes no one.
  for (size_t i = 0; i < granted_.size() && !guard_.broken(); ++i) {
    const RequestId id = granted_[i];
    const auto it = parked_.find(id);
    const bool twice = std::find(granted_.begin(), granted_.begin() + static_cast<ptrdiff_t>(i),
                                 id) != granted_.begin() + static_cast<ptrdiff_t>(i);
    if (it == parked_.end() || it->second.granted || twice) {
      guard_.record(fmt::format("{}(key '{}') granted request {}, which is not waiting", call,
                                MachineGuard::one_line(key), id));
    } else if (it->second.key != key) {
      guard_.record(fmt::format("{}(key '{}') granted request {}, which waits on key '{}'", call,
                                MachineGuard::one_line(key), id,
                                MachineGuard::one_line(it->second.key)));
    }
  }
  if (guard_.broken()) {
    granted_.clear();
    return false;
  }
  for (RequestId id : granted_) {
    Parked& parked = parked_.at(id);
    parked.granted = true;
    held_.insert(id);
    world_.wake(parked.waiter);
  }
  granted_.clear();
  return true;
}

void SimKeyedRw::wait(std::string_view key, RequestId id, RwMode mode) {
  LOCKSTEP_SIM_CHECK(world_.in_fiber(), "only a fiber can wait for a keyed lock");
  const sim::Waiter waiter = world_.prepare_park();
  parked_[id] = Parked{.waiter = waiter, .key = std::string(key)};
  try {
    world_.park(waiter);
  } catch (...) {  // ProcessKilled: a dead fiber must not keep or block the key
    const bool granted = parked_.at(id).granted;
    parked_.erase(id);
    if (granted) {
      end_hold(key, id, mode);
    } else {
      const bool withdrawn = guard_.call_quietly(
          "cancel", key, [&] { return core_->cancel(key, id, granted_); }, true);
      if (!withdrawn)
        guard_.record(fmt::format("cancel(key '{}') of waiting request {} found it not waiting",
                                  MachineGuard::one_line(key), id));
      note(key);
      wake_granted(key, "cancel");
    }
    throw;
  }
  LOCKSTEP_SIM_CHECK(parked_.at(id).granted, "a keyed-rw waiter is woken only by its grant");
  parked_.erase(id);
}

keyed::RwHandle SimKeyedRw::acquire(std::string_view key, RwMode mode) {
  std::string owned_key(key);
  const keyed::RwAdmission admission =
      guard_.call("request", key, [&] { return core_->request(key, mode); });
  check_new_id("request", admission.id);
  if (admission.granted) held_.insert(admission.id);
  note(key);
  if (!admission.granted) wait(key, admission.id, mode);
  return keyed::RwHandle(this, std::move(owned_key), admission.id, mode);
}

std::optional<keyed::RwHandle> SimKeyedRw::try_acquire(std::string_view key, RwMode mode) {
  const std::optional<RequestId> id =
      guard_.call("try_acquire", key, [&] { return core_->try_acquire(key, mode); });
  if (!id) return std::nullopt;
  check_new_id("try_acquire", *id);
  held_.insert(*id);
  note(key);
  return keyed::RwHandle(this, std::string(key), *id, mode);
}

size_t SimKeyedRw::key_count() const {
  return guard_.call("key_count", "", [&] { return core_->key_count(); });
}

void SimKeyedRw::end_hold(const keyed::KeyRef& key, RequestId id, RwMode mode) noexcept {
  held_.erase(id);
  guard_.call_quietly(
      "release", key.key,
      [&] {
        core_->release(key, id, mode, granted_);
        return true;
      },
      false);
  note(key.key);
  wake_granted(key.key, "release");
}

void SimKeyedRw::release(const keyed::KeyRef& key, RequestId id, RwMode mode) noexcept {
  end_hold(key, id, mode);
}

// --- SimFifoLock ---

SimFifoLock::SimFifoLock(sim::World& world, std::unique_ptr<keyed::FifoStateMachine> core,
                         std::string lock_name, KeyStateHook on_key_state, RefusalHook on_refused)
    : world_(world),
      core_(std::move(core)),
      guard_(std::move(lock_name)),
      on_key_state_(std::move(on_key_state)),
      on_refused_(std::move(on_refused)) {
  LOCKSTEP_SIM_CHECK(core_ != nullptr, "a SimFifoLock needs a core");
}

bool SimFifoLock::held(std::string_view key) const {
  return guard_.call("held", key, [&] { return core_->held(key); });
}

size_t SimFifoLock::waiting(std::string_view key) const {
  return guard_.call("waiting", key, [&] { return core_->waiting(key); });
}

size_t SimFifoLock::size() const {
  return guard_.call("size", "", [&] { return core_->size(); });
}

void SimFifoLock::note(std::string_view key) noexcept {
  if (!on_key_state_) return;
  const size_t entries = guard_.call_quietly(
      "held/waiting", key, [&] { return (core_->held(key) ? 1 : 0) + core_->waiting(key); },
      size_t{0});
  on_key_state_(key, entries);
}

void SimFifoLock::check_new_id(std::string_view call, RequestId id) {
  if (id == kNoRequest) guard_.fail(fmt::format("{} gave a request no id (kNoRequest)", call));
  if (parked_.count(id) != 0 || held_.count(id) != 0)
    guard_.fail(fmt::format("{} gave request id {}, which a live request has", call, id));
}

bool SimFifoLock::waits(RequestId id, std::string_view key) const {
  const auto it = parked_.find(id);
  return it != parked_.end() && it->second.end == WaitEnd::waiting && it->second.key == key;
}

void SimFifoLock::wake(RequestId id, WaitEnd end) {
  auto it = parked_.find(id);
  LOCKSTEP_SIM_CHECK(it != parked_.end(), "every queued request has a parked fiber");
  it->second.end = end;
  world_.wake(it->second.waiter);
}

RequestId SimFifoLock::acquire(std::string_view key, const keyed::WithLockOptions& options) {
  const keyed::FifoAdmission admission =
      guard_.call("request", key, [&] { return core_->request(key); });
  switch (admission.admit) {
    case FifoAdmit::invalid_key:
      throw KeyedLockError::invalid_key(
          key, guard_.call("limits", key, [&] { return core_->limits(); }).max_key_length);
    case FifoAdmit::queue_full:
      throw KeyedLockError::queue_full(
          key, guard_.call("limits", key, [&] { return core_->limits(); }).max_waiters_per_key);
    case FifoAdmit::granted:
      check_new_id("request", admission.id);
      held_.insert(admission.id);
      note(key);
      return admission.id;
    case FifoAdmit::queued: break;
  }
  check_new_id("request", admission.id);
  note(key);
  return wait(key, admission.id, options);
}

RequestId SimFifoLock::wait(std::string_view key, RequestId id,
                            const keyed::WithLockOptions& options) {
  LOCKSTEP_SIM_CHECK(world_.in_fiber(), "only a fiber can wait for a keyed lock");
  const sim::Waiter waiter = world_.prepare_park();
  parked_[id] = Parked{.waiter = waiter, .key = std::string(key), .node = world_.current_node()};
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
      const bool withdrawn = guard_.call_quietly(
          "cancel", key, [&] { return core_->cancel(key, id); }, true);
      if (!withdrawn)
        guard_.record(fmt::format("cancel(key '{}') of waiting request {} found it not waiting",
                                  MachineGuard::one_line(key), id));
      note(key);
    }
    throw;
  }
  const WaitEnd end = parked_.at(id).end;
  parked_.erase(id);
  if (end == WaitEnd::granted) return id;
  if (end == WaitEnd::cleared) throw KeyedLockError::cleared(key);
  // The deadline passed while still queued: withdraw; the holder and the others are untouched.
  if (!guard_.call("cancel", key, [&] { return core_->cancel(key, id); }))
    guard_.fail(fmt::format("cancel(key '{}') of waiting request {} found it not waiting",
                            MachineGuard::one_line(key), id));
  note(key);
  throw KeyedLockError::timeout(key, *options.max_wait_ms);
}

void SimFifoLock::release(const std::string& key, RequestId id) noexcept {
  held_.erase(id);
  const RequestId next = guard_.call_quietly(
      "release", key, [&] { return core_->release(key, id); }, kNoRequest);
  note(key);
  if (next == kNoRequest) return;
  if (!waits(next, key)) {
    guard_.record(fmt::format("release(key '{}') granted request {}, which is not waiting there",
                              MachineGuard::one_line(key), next));
    return;
  }
  held_.insert(next);
  wake(next, WaitEnd::granted);
}

size_t SimFifoLock::clear() {
  const std::vector<keyed::FifoRejection> rejected =
      guard_.call("clear", "", [&] { return core_->clear(); });
  for (size_t i = 0; i < rejected.size(); ++i) {
    const keyed::FifoRejection& r = rejected[i];
    const bool twice = std::find(rejected.begin(), rejected.begin() + static_cast<ptrdiff_t>(i),
                                 r) != rejected.begin() + static_cast<ptrdiff_t>(i);
    if (!waits(r.id, r.key) || twice)
      guard_.fail(fmt::format("clear() rejected request {} on key '{}', which is not waiting there",
                              r.id, MachineGuard::one_line(r.key)));
  }
  for (const keyed::FifoRejection& r : rejected) {
    note(r.key);
    if (auto it = parked_.find(r.id); on_refused_ && it != parked_.end())
      on_refused_(it->second.node, r.key);
    wake(r.id, WaitEnd::cleared);
  }
  return rejected.size();
}

std::optional<RequestId> SimFifoLock::try_acquire_now(std::string_view key) {
  const std::optional<RequestId> id =
      guard_.call("try_acquire", key, [&] { return core_->try_acquire(key); });
  if (!id) return std::nullopt;
  check_new_id("try_acquire", *id);
  held_.insert(*id);
  note(key);
  return id;
}

}  // namespace lockstep
