#include "services/keyed/backend/keyed_backend.h"

#include <stdexcept>

#include <fmt/format.h>

#include "sim/assert.h"

namespace lockstep {

using keyed::RwMode;

// --- the lease-shaped view ---

// Owners are the LockSpec values. Holds never expire; nothing is fenced.
class KeyedSimBackend::LeaseView final : public LockAdapter {
 public:
  explicit LeaseView(KeyedSimBackend& backend) : backend_(backend) {}

  std::string_view name() const override { return backend_.rw_ ? "keyed-rw" : "fifo"; }
  FencingSupport fencing() const override { return FencingSupport::none; }

  AdapterResult create_lock(const LockSpec& spec) override {
    if (owned(spec)) return {.status = AdapterStatus::contended};
    if (backend_.rw_) {
      std::optional<keyed::RwHandle> handle =
          backend_.rw_->try_acquire(spec.key, RwMode::exclusive);
      if (!handle) return {.status = AdapterStatus::contended};
      rw_holds_.emplace(owner(spec), std::move(*handle));
      return {};
    }
    const std::optional<keyed::RequestId> id = backend_.fifo_->try_acquire_now(spec.key);
    if (!id) return {.status = AdapterStatus::contended};
    fifo_holds_.emplace(owner(spec), *id);
    return {};
  }

  AdapterResult release_lock(const LockSpec& spec) override {
    if (auto it = rw_holds_.find(owner(spec)); it != rw_holds_.end()) {
      it->second.unlock();
      rw_holds_.erase(it);
      backend_.rw_->throw_if_broken();
      return {};
    }
    if (auto it = fifo_holds_.find(owner(spec)); it != fifo_holds_.end()) {
      backend_.fifo_->release_now(spec.key, it->second);
      fifo_holds_.erase(it);
      backend_.fifo_->throw_if_broken();
      return {};
    }
    return {.status = AdapterStatus::not_owner};
  }

  AdapterResult extend_lock(const LockSpec& spec, int64_t) override { return is_valid_lock(spec); }
  AdapterResult is_valid_lock(const LockSpec& spec) override {
    return owned(spec) ? AdapterResult{} : AdapterResult{.status = AdapterStatus::not_owner};
  }

 private:
  using Owner = std::pair<std::string, std::string>;  // key, value
  static Owner owner(const LockSpec& spec) { return {spec.key, spec.value}; }
  bool owned(const LockSpec& spec) const {
    return rw_holds_.count(owner(spec)) != 0 || fifo_holds_.count(owner(spec)) != 0;
  }

  KeyedSimBackend& backend_;
  std::map<Owner, keyed::RwHandle> rw_holds_;
  std::map<Owner, keyed::RequestId> fifo_holds_;
};

// --- the backend ---

namespace {

sim::World& simulator(BackendEnv& env) {
  if (env.sim == nullptr)
    throw WorldUnsupported("the keyed locks' scenarios run in the sim world only");
  return *env.sim;
}

}  // namespace

KeyedSimBackend::KeyedSimBackend(BackendEnv& env, std::unique_ptr<keyed::RwStateMachine> core,
                                 std::string lock_name)
    : world_(simulator(env)), recorder_(env.recorder), steps_(env.recorder, *this) {
  rw_ =
      std::make_unique<SimKeyedRw>(world_, std::move(core), std::move(lock_name), key_state_hook());
  view_ = std::make_unique<LeaseView>(*this);
  recorder_.history().meta.keyed = true;
}

KeyedSimBackend::KeyedSimBackend(BackendEnv& env, std::unique_ptr<keyed::FifoStateMachine> core,
                                 std::string lock_name)
    : world_(simulator(env)), recorder_(env.recorder), steps_(env.recorder, *this) {
  fifo_ = std::make_unique<SimFifoLock>(
      world_, std::move(core), std::move(lock_name), key_state_hook(),
      [this](int node, std::string_view key) { steps_.fifo_refused(node, key); });
  view_ = std::make_unique<LeaseView>(*this);
  recorder_.history().meta.keyed = true;
}

KeyedSimBackend::~KeyedSimBackend() {
  // The world outlives this backend and unwinds unfinished fibers only in its own destructor,
  // when the lock would be gone; a fiber parked in the lock or holding a handle must unwind now.
  for (int node : client_nodes_) {
    if (world_.alive(node)) world_.crash(node);
  }
  view_.reset();  // its handles release into the lock
}

KeyStateHook KeyedSimBackend::key_state_hook() {
  return [this](std::string_view key, size_t entries) {
    recorder_.record({.kind = EventKind::key_state,
                      .key = std::string(key),
                      .counter = static_cast<int64_t>(entries)});
  };
}

LockAdapter& KeyedSimBackend::adapter_for(int, int node) {
  client_nodes_.push_back(node);
  return *view_;
}

size_t KeyedSimBackend::key_count() const { return rw_ ? rw_->key_count() : fifo_->size(); }

namespace {

// A user's make_machine is a user call like any other: what it throws, or a null machine, is the
// run's error before anything ran (exit 4, nothing judged), named like the guard's failures.
template <class Make>
auto made_machine(const std::string& lock_name, const Make& make) -> decltype(make()) {
  decltype(make()) machine;
  try {
    machine = make();
  } catch (const std::exception& e) {
    throw ClientProtocolBroken(fmt::format("keyed lock '{}': make_machine threw: {}", lock_name,
                                           MachineGuard::one_line(e.what())));
  } catch (...) {
    throw ClientProtocolBroken(fmt::format(
        "keyed lock '{}': make_machine threw something that is not a std::exception", lock_name));
  }
  if (!machine)
    throw ClientProtocolBroken(
        fmt::format("keyed lock '{}': make_machine gave no machine", lock_name));
  return machine;
}

void check_made(const std::string& name, bool has_factory) {
  if (!has_factory)
    throw std::invalid_argument(fmt::format("keyed lock \"{}\" has no make_machine", name));
}

}  // namespace

std::unique_ptr<Backend> make_keyed_rw_sim_backend(BackendEnv& env,
                                                   std::unique_ptr<keyed::RwStateMachine> core,
                                                   std::string lock_name) {
  if (!core) core = std::make_unique<keyed::RwCore>();
  return std::make_unique<KeyedSimBackend>(env, std::move(core), std::move(lock_name));
}

std::vector<OptionSpec> fifo_backend_options() {
  return {{.name = "max_key_length",
           .default_value = "256",
           .help = "fifo: longest key in bytes",
           .min = 0},
          {.name = "max_waiters_per_key",
           .default_value = "1000",
           .help = "fifo: waiters per key before LOCK_QUEUE_FULL",
           .min = 0}};
}

std::unique_ptr<Backend> make_fifo_sim_backend(BackendEnv& env, const FifoMachineFactory& make_core,
                                               std::string lock_name) {
  keyed::FifoLimits limits;
  if (env.options.has("max_key_length"))
    limits.max_key_length = static_cast<size_t>(env.options.get_int("max_key_length"));
  if (env.options.has("max_waiters_per_key")) {
    limits.max_waiters_per_key = static_cast<size_t>(env.options.get_int("max_waiters_per_key"));
  }
  std::unique_ptr<keyed::FifoStateMachine> core =
      make_core ? made_machine(lock_name, [&] { return make_core(limits); })
                : std::make_unique<keyed::FifoCore>(limits);
  return std::make_unique<KeyedSimBackend>(env, std::move(core), std::move(lock_name));
}

AdapterEntry keyed_rw_adapter(KeyedRwLockEntry lock) {
  check_made(lock.name, static_cast<bool>(lock.make_machine));
  AdapterTraits traits = kKeyedRwTraits;
  traits.writers_first = lock.writers_first;
  return {.name = lock.name,
          .description = std::move(lock.description),
          .worlds = {WorldKind::sim},
          .traits = traits,
          .known_bad = !lock.breaks.empty(),
          .breaks = lock.breaks,
          .sibling = lock.sibling,
          .make_sim = [name = lock.name, make = std::move(lock.make_machine)](BackendEnv& env) {
            return make_keyed_rw_sim_backend(env, made_machine(name, make), name);
          }};
}

AdapterEntry keyed_fifo_adapter(KeyedFifoLockEntry lock) {
  check_made(lock.name, static_cast<bool>(lock.make_machine));
  AdapterTraits traits = kFifoTraits;
  traits.clear_keeps_exclusion = lock.clear_keeps_exclusion;
  return {.name = lock.name,
          .description = std::move(lock.description),
          .worlds = {WorldKind::sim},
          .traits = traits,
          .known_bad = !lock.breaks.empty(),
          .breaks = lock.breaks,
          .sibling = lock.sibling,
          .options = fifo_backend_options(),
          .make_sim = [name = lock.name, make = std::move(lock.make_machine)](BackendEnv& env) {
            return make_fifo_sim_backend(env, make, name);
          }};
}

// --- steps ---

void KeyedSteps::record(EventKind kind, const Client& c, const std::string& key, Op op,
                        Outcome outcome, bool shared, std::string detail) {
  recorder_.record({.kind = kind,
                    .client = c.id(),
                    .key = key,
                    .op = op,
                    .outcome = outcome,
                    .shared = shared,
                    .detail = std::move(detail)});
}

keyed::RwHandle KeyedSteps::rw_acquire(Client& c, const std::string& key, RwMode mode) {
  LOCKSTEP_SIM_CHECK(backend_.rw() != nullptr, "keyed-rw steps need the keyed-rw adapter");
  const bool shared = mode == RwMode::shared;
  record(EventKind::invoke, c, key, Op::acquire, Outcome::none, shared);
  keyed::RwHandle handle = backend_.rw()->acquire(key, mode);
  record(EventKind::complete, c, key, Op::acquire, Outcome::ok, shared);
  record(EventKind::cs_enter, c, key, Op::none, Outcome::none, shared);
  return handle;
}

std::optional<keyed::RwHandle> KeyedSteps::rw_try_acquire(Client& c, const std::string& key,
                                                          RwMode mode) {
  LOCKSTEP_SIM_CHECK(backend_.rw() != nullptr, "keyed-rw steps need the keyed-rw adapter");
  const bool shared = mode == RwMode::shared;
  record(EventKind::invoke, c, key, Op::acquire, Outcome::none, shared);
  std::optional<keyed::RwHandle> handle = backend_.rw()->try_acquire(key, mode);
  record(EventKind::complete, c, key, Op::acquire, handle ? Outcome::ok : Outcome::contended,
         shared, "try");
  if (handle) record(EventKind::cs_enter, c, key, Op::none, Outcome::none, shared);
  return handle;
}

void KeyedSteps::rw_release(Client& c, keyed::RwHandle& handle) {
  const bool shared = handle.mode() == RwMode::shared;
  const std::string key = handle.key();
  record(EventKind::cs_exit, c, key, Op::none, Outcome::none, shared);
  record(EventKind::invoke, c, key, Op::release, Outcome::none, shared);
  handle.unlock();
  backend_.rw()->throw_if_broken();  // a release cannot throw: a machine's failure surfaces here
  record(EventKind::complete, c, key, Op::release, Outcome::ok, shared);
}

LockFamily KeyedSteps::family() const {
  return backend_.rw() != nullptr ? LockFamily::keyed_rw : LockFamily::keyed_fifo;
}

void KeyedSteps::fifo_clear() { backend_.fifo()->clear(); }

void KeyedSteps::rw_hold(Client& c, const std::string& key, RwMode mode, int64_t hold_ms,
                         int64_t pause_ms) {
  keyed::RwHandle handle = rw_acquire(c, key, mode);
  if (pause_ms > 0) c.pause(pause_ms);
  c.sleep_ms(hold_ms);
  rw_release(c, handle);
}

void KeyedSteps::fifo_refused(int node, std::string_view key) {
  const auto it = fifo_waiting_.find(node);
  if (it == fifo_waiting_.end()) return;  // a waiter outside these steps records its own end
  record(EventKind::complete, *it->second, std::string(key), Op::acquire, Outcome::error, false,
         std::string(keyed::code_name(keyed::KeyedLockCode::lock_cleared)));
  fifo_waiting_.erase(it);
  fifo_refusals_recorded_.insert(node);
}

bool KeyedSteps::fifo_hold(Client& c, const std::string& key, int64_t hold_ms,
                           std::optional<int64_t> max_wait_ms) {
  LOCKSTEP_SIM_CHECK(backend_.fifo() != nullptr, "fifo steps need the fifo adapter");
  record(EventKind::invoke, c, key, Op::acquire);
  fifo_waiting_[c.node()] = &c;
  try {
    backend_.fifo()->with_lock(key,
                               [&] {
                                 fifo_waiting_.erase(c.node());
                                 record(EventKind::complete, c, key, Op::acquire, Outcome::ok);
                                 record(EventKind::cs_enter, c, key, Op::none);
                                 c.sleep_ms(hold_ms);
                                 record(EventKind::cs_exit, c, key, Op::none);
                                 record(EventKind::invoke, c, key, Op::release);
                               },
                               {.max_wait_ms = max_wait_ms});
  } catch (const keyed::KeyedLockError& e) {
    fifo_waiting_.erase(c.node());
    if (fifo_refusals_recorded_.erase(c.node()) > 0) return false;
    const Outcome outcome =
        e.code() == keyed::KeyedLockCode::lock_timeout ? Outcome::fail : Outcome::error;
    record(EventKind::complete, c, key, Op::acquire, outcome, false, std::string(e.code_name()));
    return false;
  } catch (...) {  // killed while waiting or holding, or the machine broke its contract
    fifo_waiting_.erase(c.node());
    throw;
  }
  backend_.fifo()->throw_if_broken();  // a release cannot throw: a machine's failure surfaces here
  record(EventKind::complete, c, key, Op::release, Outcome::ok);
  return true;
}

}  // namespace lockstep
