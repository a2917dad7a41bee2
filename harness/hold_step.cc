#include "harness/hold_step.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "harness/scenario.h"

namespace lockstep {

namespace {

// A fault timed from a call the client is about to make.
void aim_at_call(ScenarioEnv& env, int64_t after_us, FaultTag tag, std::string what,
                 std::function<void()> action, int64_t duration_us = 0) {
  env.schedule_fault_us(env.world().now_us() + after_us, std::move(tag), std::move(what),
                        std::move(action), duration_us);
}

// A careful holder's work: sleeps duration_ms, but only until the lock's validity ends (by the
// client's clock). False, and out of the critical section, when the validity ended first.
bool careful_work_us(Client& c, Lock& lock, int64_t duration_us) {
  const int64_t left_us = c.validity_end_us(lock) - c.clock().monotonic_us();
  if (left_us <= duration_us) {
    // Validity covers [start, end): the holder is out in its last microsecond, before whoever
    // the end lets in (events at one instant run in no promised order).
    if (left_us > 1) c.clock().sleep_for_us(left_us - 1);
    c.leave(lock);
    return false;
  }
  c.clock().sleep_for_us(duration_us);
  return true;
}

bool careful_work(Client& c, Lock& lock, int64_t duration_ms) {
  return careful_work_us(c, lock, duration_ms * 1000);
}

// A careful holder's step: the same calls as lease_step's, its work done only while the lock is
// valid (an extend is asked for regardless), then work until the validity ends. It leaves the critical section when the validity ends, and
// while an extend is in flight (it cannot know whether the call outlives the validity),
// re-entering when the extend succeeded in time. Then it releases (outside the critical section)
// unless the step walks away.
//
// A lock without expiry (a session lock, AdapterTraits::server_expiry none) has no lease to spend:
// its validity is how long its session could last unheard (hours). Its holder works on for the
// TTL it asked, from when the lock came or was extended, as a budget of its own (budget_end_us),
// and leaves; for a lock whose validity ends sooner (lockstep's postgres adapters cut it to the
// TTL from the request), the validity still ends the work first.
void careful_lease_step(Client& c, Lock& lock, const HoldStep& step, int64_t extend_ttl_ms,
                        std::optional<int64_t> budget_end_us) {
  std::optional<int64_t> value;
  bool valid = careful_work(c, lock, 0);
  if (valid) value = c.read(lock);
  if (valid && step.pause_ms > 0) c.pause(step.pause_ms);  // a stop-the-world cannot be careful
  valid = valid && careful_work(c, lock, step.hold_ms);
  if (step.extend) {
    // Tried even when its validity has ended (after a pause, say): a holder may ask to keep a lock
    // it has lost, and the lock must refuse. It works on only if the extend gave it time.
    c.leave(lock);
    valid = c.extend(lock, extend_ttl_ms) && c.clock().monotonic_us() < c.validity_end_us(lock);
    if (valid && budget_end_us) {
      budget_end_us = std::max(*budget_end_us, c.clock().monotonic_us() + extend_ttl_ms * 1000);
    }
    if (valid) c.reenter(lock);
  }
  valid = valid && careful_work(c, lock, 0);
  if (valid && value) c.write(lock, *value + 1);
  // A careful holder is a lease-bound worker: having done the step's work, it keeps working until
  // its validity ends, so whatever validity the adapter overstates, it spends inside.
  if (valid && budget_end_us) {
    careful_work_us(c, lock, std::max<int64_t>(0, *budget_end_us - c.clock().monotonic_us()));
  } else if (valid) {
    careful_work(c, lock, std::numeric_limits<int64_t>::max() / 1000);
  }
  c.leave(lock);
}

// An auto-extending holder's step: its Locker extends in the background while it works for
// hold_ms in steps of a quarter TTL, each cut short to end at the validity the lock knows then,
// asking lost() before every write; it stops when lost() says the lock may be gone. lost() is
// never later than the validity (locker.h), so a Locker that reports a loss late shows as a
// validity outliving its leases, or a lost exclusion.
void auto_extending_step(Client& c, Lock& lock, const HoldStep& step, int64_t ttl_ms) {
  c.auto_extend(lock, 0);
  c.work_until_lost(lock, step.hold_ms, std::max<int64_t>(1, ttl_ms / 4));
  c.leave(lock);
}

// Killed from outside mid-section (ProcessKilled unwinding the step), a client is no longer inside,
// as Client::crash says. A destructor, not catch and rethrow: the unwinding at the end of every run
// that leaves clients parked was a tenth of a memory seed, and a rethrow searches the stack again.
class LeaveWhenKilled {
 public:
  LeaveWhenKilled(Client& c, Lock& lock)
      : client_(c), lock_(lock), exceptions_(std::uncaught_exceptions()) {}
  ~LeaveWhenKilled() {
    if (std::uncaught_exceptions() > exceptions_) client_.leave(lock_);
  }
  LeaveWhenKilled(const LeaveWhenKilled&) = delete;
  LeaveWhenKilled& operator=(const LeaveWhenKilled&) = delete;

 private:
  Client& client_;
  Lock& lock_;
  const int exceptions_;
};

}  // namespace

void run_hold_step(ScenarioEnv& env, Client& c, const HoldStep& step) {
  ScenarioWorld& world = env.world();
  const int node = c.node();
  if (step.acquire_crash_after_us >= 0) {
    env.schedule_client_kill_us(world.now_us() + step.acquire_crash_after_us, c,
                                fmt::format("crash {} with its acquire on the wire", c.name()),
                                [&world, node] { world.crash(node); });
  }
  if (step.acquire_pause_after_us >= 0) {
    const int64_t pause_us = step.acquire_pause_ms * 1000;
    aim_at_call(
        env, step.acquire_pause_after_us,
        {.kind = FaultKind::pause, .client = c.id(), .amount = pause_us},
        fmt::format("pause {} for {}ms with its acquire on the wire", c.name(),
                    step.acquire_pause_ms),
        [&world, node, pause_us] { world.pause(node, pause_us); }, pause_us);
  }
  const int64_t ttl_ms = step.ttl_ms;
  const int64_t extend_ttl_ms = step.extend_ttl_ms;
  std::optional<Lock> lock = c.acquire(step.key, ttl_ms, step.retry);
  if (!lock) return;
  const LeaveWhenKilled leave_when_killed(c, *lock);
  if (step.auto_extend) {
    auto_extending_step(c, *lock, step, ttl_ms);
  } else if (step.careful) {
    const bool expires = env.adapter().traits.server_expiry != ExpiryClock::none;
    careful_lease_step(
        c, *lock, step, extend_ttl_ms,
        expires ? std::nullopt : std::optional<int64_t>(c.clock().monotonic_us() + ttl_ms * 1000));
  } else {
    std::optional<int64_t> value = c.read(*lock);
    if (step.pause_ms > 0) c.pause(step.pause_ms);
    c.sleep_ms(step.hold_ms);
    if (step.extend) c.extend(*lock, extend_ttl_ms);
    if (value) c.write(*lock, *value + 1);
  }
  if (step.late_ms >= 0) {
    // Its validity is over (a careful holder worked until it ended): later still, it extends and
    // releases a lock it no longer holds. The lock must refuse both and touch the next owner's.
    c.leave(*lock);
    c.sleep_ms(step.late_ms);
    c.extend(*lock, extend_ttl_ms);
    c.leave(*lock);
  }
  if (!step.release) return c.leave(*lock);
  if (step.release_pause_after_us >= 0) {
    const int64_t pause_us = step.release_pause_ms * 1000;
    aim_at_call(
        env, step.release_pause_after_us,
        {.kind = FaultKind::pause, .client = c.id(), .amount = pause_us},
        fmt::format("pause {} for {}ms mid-release", c.name(), step.release_pause_ms),
        [&world, node, pause_us] { world.pause(node, pause_us); }, pause_us);
  }
  c.release(*lock);
}

}  // namespace lockstep
