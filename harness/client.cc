#include "harness/client.h"

#include <algorithm>

#include <fmt/format.h>

#include "adapters/core/errors.h"

namespace lockstep {

Client::Client(ClientSetup setup)
    : setup_(std::move(setup)),
      random_(setup_.random_seed),
      timed_(setup_.leases != nullptr
                 ? std::make_unique<AttemptTimedAdapter>(*setup_.adapter, *setup_.world)
                 : nullptr),
      locker_({.adapter = timed_ ? timed_.get() : setup_.adapter,
               .clock = &setup_.world->clock(setup_.node),
               .random = &random_,
               .background = &setup_.world->background(setup_.node)}) {}

size_t Client::record_invoke(Op op, const std::string& key) {
  return setup_.recorder->record(
      {.kind = EventKind::invoke, .client = setup_.id, .key = key, .op = op});
}

void Client::record_complete(Op op, const std::string& key, Outcome outcome,
                             std::optional<uint64_t> token, std::string detail) {
  setup_.recorder->record({.kind = EventKind::complete,
                           .client = setup_.id,
                           .key = key,
                           .op = op,
                           .outcome = outcome,
                           .has_token = token.has_value(),
                           .token = token.value_or(0),
                           .detail = std::move(detail)});
}

void Client::record_failed(Op op, const Lock& lock, const LockError& error) {
  const bool unknown = dynamic_cast<const LockOutcomeUnknownError*>(&error) != nullptr;
  setup_.recorder->record({.kind = EventKind::complete,
                           .client = setup_.id,
                           .key = lock.key(),
                           .op = op,
                           .outcome = unknown ? Outcome::unknown : Outcome::error,
                           .value = lock.unique_value(),
                           .detail = error.what()});
}

// A successful acquire or extend, with what the lock told the client: which lease (its value),
// and until when it is valid by the client's own monotonic clock, read as the call returned
// (valid_on_return judges both).
void Client::record_granted(Op op, const Lock& lock, std::string detail) {
  setup_.recorder->record(
      {.kind = EventKind::complete,
       .client = setup_.id,
       .key = lock.key(),
       .op = op,
       .outcome = Outcome::ok,
       .has_token = op == Op::acquire && lock.fencing_token().has_value(),
       .token = op == Op::acquire ? lock.fencing_token().value_or(0) : 0,
       .value = lock.unique_value(),
       .end_us = lock.valid_until_us() != 0
                     ? setup_.world->true_time_at_monotonic(setup_.node, lock.valid_until_us())
                     : 0,
       .local_now_us = clock().monotonic_us(),
       .local_valid_until_us = lock.valid_until_us(),
       .validity_assumed = !lock.validity_reported(),
       .detail = std::move(detail)});
}

std::optional<Lock> Client::acquire(const std::string& key, int64_t ttl_ms, RetrySettings retry) {
  record_invoke(Op::acquire, key);
  Lock lock = locker_.lock(key, ttl_ms).with_retry(std::move(retry));
  try {
    // Giving up is the common refusal here: a value, not a throw.
    if (const std::optional<RetryError> gave_up = lock.try_acquire()) {
      record_complete(Op::acquire, key, Outcome::contended, {},
                      fmt::format("gave up after {} attempts", gave_up->attempts()));
      return std::nullopt;
    }
  } catch (const LockError& e) {
    record_failed(Op::acquire, lock, e);
    return std::nullopt;
  }
  record_granted(Op::acquire, lock, fmt::format("attempts={}", lock.attempts()));
  // The grant's lease runs from the attempt that won it (a retried acquire's first attempt was
  // refused: its send time would make the lease look shorter than the store made it).
  if (setup_.leases != nullptr) {
    setup_.leases->acquired(setup_.id, lock, timed_->last_create_sent_us());
  }
  held_values_.insert(lock.unique_value());
  enter(lock);
  return lock;
}

void Client::enter(const Lock& lock) {
  inside_keys_.insert(lock.key());
  setup_.recorder->record({.kind = EventKind::cs_enter, .client = setup_.id, .key = lock.key()});
}

void Client::exit_critical_section(const std::string& key) {
  if (inside_keys_.erase(key) == 0) return;
  setup_.recorder->record({.kind = EventKind::cs_exit, .client = setup_.id, .key = key});
}

bool Client::release(Lock& lock) {
  exit_critical_section(lock.key());
  record_invoke(Op::release, lock.key());
  const TimeUs invoked_us = setup_.world->now_us();
  if (setup_.leases != nullptr) setup_.leases->release_sent(setup_.id, lock);
  held_values_.erase(lock.unique_value());
  try {
    const bool released = lock.release();
    record_complete(Op::release, lock.key(), released ? Outcome::ok : Outcome::fail);
    if (released && setup_.leases != nullptr) setup_.leases->released(setup_.id, lock, invoked_us);
    return released;
  } catch (const LockError& e) {
    record_failed(Op::release, lock, e);
    return false;
  }
}

bool Client::extend(Lock& lock, int64_t ttl_ms) {
  record_invoke(Op::extend, lock.key());
  const TimeUs invoked_us = setup_.world->now_us();
  try {
    // A lease lost is the usual refusal under faults: a value, not a throw.
    if (const std::optional<LockExtendError> refused = lock.try_extend(ttl_ms)) {
      record_complete(Op::extend, lock.key(), Outcome::fail, {}, refused->what());
      return false;
    }
  } catch (const LockError& e) {
    record_failed(Op::extend, lock, e);
    return false;
  }
  record_granted(Op::extend, lock);
  if (setup_.leases != nullptr) setup_.leases->extended(setup_.id, lock, ttl_ms, invoked_us);
  return true;
}

bool Client::is_locked(Lock& lock) {
  record_invoke(Op::is_locked, lock.key());
  try {
    const bool held = lock.is_locked();
    record_complete(Op::is_locked, lock.key(), held ? Outcome::ok : Outcome::fail);
    return held;
  } catch (const LockError& e) {
    record_complete(Op::is_locked, lock.key(), Outcome::error, {}, e.what());
    return false;
  }
}

void Client::leave(Lock& lock) { exit_critical_section(lock.key()); }

int64_t Client::validity_end_us(const Lock& lock) const {
  if (held_values_.count(lock.unique_value()) == 0) return 0;  // released (or never ours)
  return lock.valid_until_us();
}

std::optional<int64_t> Client::read(const Lock& lock) {
  return setup_.resource->read(setup_.id, lock.key(), lock.fencing_token());
}

bool Client::write(const Lock& lock, int64_t value) {
  return setup_.resource->write(setup_.id, lock.key(), lock.fencing_token(), value);
}

bool Client::increment(const Lock& lock, int64_t work_ms) {
  std::optional<int64_t> value = read(lock);
  if (!value) return false;
  sleep_ms(work_ms);
  return write(lock, *value + 1);
}

void Client::auto_extend(Lock& lock, int64_t every_ms) {
  // Each validity a renewal gives goes into the history, as an extend's completion would, so
  // validity_within_lease judges it against the servers' leases. From the renewing task (another
  // thread, for real): it reads only the node's clock and records.
  auto on_renewed = [this, key = lock.key(), value = lock.unique_value()](int64_t valid_until_us) {
    setup_.recorder->record(
        {.kind = EventKind::renewal,
         .client = setup_.id,
         .key = key,
         .value = value,
         .end_us = setup_.world->true_time_at_monotonic(setup_.node, valid_until_us),
         .local_now_us = clock().monotonic_us(),
         .local_valid_until_us = valid_until_us});
  };
  lock.auto_extend({.every_ms = every_ms, .on_renewed = std::move(on_renewed)});
  setup_.world->trace_linef("{} auto-extends {} every {}ms", setup_.name, lock.key(),
                            every_ms == 0 ? lock.ttl_ms() / 3 : every_ms);
}

bool Client::work_until_lost(Lock& lock, int64_t work_ms, int64_t step_ms) {
  std::optional<int64_t> value = read(lock);
  if (!value) return false;
  const int64_t steps = std::max<int64_t>(1, work_ms / std::max<int64_t>(step_ms, 1));
  for (int64_t step = 0; step < steps; ++step) {
    // Never asleep past the validity it knows: a step ends early at its end, where lost() says so.
    const int64_t left_us = lock.valid_until_us() - clock().monotonic_us();
    clock().sleep_for_us(std::min(step_ms * 1000, std::max<int64_t>(left_us, 0)));
    if (lock.lost()) {
      setup_.world->trace_linef("{} stops: lock {} lost ({})", setup_.name, lock.key(),
                                lock.lost_reason());
      exit_critical_section(lock.key());
      return false;
    }
    if (!write(lock, ++*value)) return false;
  }
  return true;
}

void Client::sleep_ms(int64_t duration_ms) { clock().sleep_for_ms(duration_ms); }

void Client::pause(int64_t duration_ms) {
  const TimeUs duration_us = duration_ms * 1000;
  ScenarioWorld& world = *setup_.world;
  setup_.recorder->record({.kind = EventKind::fault,
                           .client = setup_.id,
                           .end_us = world.now_us() + duration_us,
                           .fault = FaultKind::pause,
                           .amount = duration_us,
                           .detail = fmt::format("pause {} for {}ms", setup_.name, duration_ms)});
  // Called from our own code, the pause stops us here until it ends.
  world.pause(setup_.node, duration_us);
}

void Client::crash() {
  ScenarioWorld& world = *setup_.world;
  setup_.recorder->record({.kind = EventKind::fault,
                           .client = setup_.id,
                           .kills_client = true,
                           .end_us = world.now_us(),
                           .fault = FaultKind::crash,
                           .detail = fmt::format("crash {}", setup_.name)});
  while (!inside_keys_.empty()) {
    const std::string key = *inside_keys_.begin();  // a copy: the exit erases the set's own
    exit_critical_section(key);
  }
  world.crash(
      setup_.node);  // from our own code: unwinds us (ProcessKilled in sim, ClientKilled in real)
  throw ClientKilled{};  // not reached; keeps [[noreturn]] true whatever crash() does
}

}  // namespace lockstep
