#include "my_whole_client.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "lockstep/registry.h"
#include "redis_lock_kit.h"

namespace my_whole_client {

namespace {

using lockstep::AdapterResult;
using lockstep::AdapterStatus;
using lockstep::RedisReply;
using lockstep::RedisResult;

// A bound on the retry loop besides its time budget (each wait is at least 20 ms).
constexpr int kAttemptsMax = 10'000;

using my_redis::failure_of;
using my_redis::kExtendScript;
using my_redis::kReleaseScript;
using my_redis::owner_checked;

}  // namespace

MyWholeClient::Attempt MyWholeClient::try_set(const lockstep::LockSpec& spec, std::string& error) {
  const RedisResult r =
      send({"SET", spec.key, spec.value, "NX", "PX", std::to_string(spec.ttl_ms)});
  if (r.ok() && r.reply.is_nil()) return Attempt::refused;
  if (r.ok() && r.reply.type == RedisReply::Type::status && r.reply.str == "OK") {
    return Attempt::granted;
  }
  error = failure_of(r);
  if (lockstep::may_have_applied(r.status)) return Attempt::unknown;
  return r.ok() ? Attempt::failed : Attempt::not_sent;
}

std::optional<bool> MyWholeClient::holds_own_value(const lockstep::LockSpec& spec,
                                                   std::string& error) {
  const RedisResult r = send({"GET", spec.key});
  if (r.ok() && r.reply.type == RedisReply::Type::string) return r.reply.str == spec.value;
  if (r.ok() && r.reply.is_nil()) return false;
  error = failure_of(r);
  return std::nullopt;
}

AdapterResult MyWholeClient::create_lock(const lockstep::LockSpec& spec) {
  forget_validity(spec.value);
  const int64_t give_up_us = clock_.monotonic_us() + 2 * spec.ttl_ms * 1000;
  // When the first SET whose reply never came was sent: if it took the lock, its lease began no
  // earlier.
  std::optional<int64_t> unknown_sent_us;
  std::string error;
  for (int attempt = 1; attempt <= kAttemptsMax; ++attempt) {
    const int64_t sent_us = clock_.monotonic_us();
    std::optional<int64_t> lease_from_us;
    switch (try_set(spec, error)) {
      case Attempt::granted: lease_from_us = sent_us; break;
      case Attempt::unknown:
        // The bug: a SET without a reply is taken for one that never happened.
        if (bug_ != Bug::timed_out_set_lost && !unknown_sent_us) unknown_sent_us = sent_us;
        break;
      case Attempt::refused: {
        // Held: perhaps by us, from a SET whose reply never came.
        const std::optional<bool> ours = holds_own_value(spec, error);
        if (ours.value_or(false)) {
          if (bug_ == Bug::timed_out_set_lost) {
            lease_from_us = sent_us;  // the bug: as if this attempt had taken it
          } else if (unknown_sent_us) {
            lease_from_us = unknown_sent_us;
          }
        }
        break;
      }
      case Attempt::not_sent: break;  // nothing applied: try again
      case Attempt::failed: return {.status = AdapterStatus::backend_error, .message = error};
    }
    if (lease_from_us) {
      const int64_t valid_until_us = *lease_from_us + spec.ttl_ms * 1000;
      if (clock_.monotonic_us() < valid_until_us) {
        std::lock_guard lock(state_mutex_);
        acquired_valid_until_us_[spec.value] = valid_until_us;
        return {};
      }
      // Over already by our count: give it back and try again. Until the server says it is
      // gone, the key may still hold that lease, from when its SET was sent: a later attempt that
      // finds our value must count from then, not from a SET of its own.
      const RedisResult given_back = send({"EVAL", kReleaseScript, "1", spec.key, spec.value});
      const bool gone = given_back.ok() && given_back.reply.type == RedisReply::Type::integer;
      if (!gone) {
        // No answer: the give-back may still run, later, and it deletes whatever holds our value,
        // so a later SET of ours (this acquire's value) would be deleted under its holder. Stop.
        if (!unknown_sent_us || *lease_from_us < *unknown_sent_us) unknown_sent_us = lease_from_us;
        break;
      }
    }
    const int64_t wait_ms = 20 + static_cast<int64_t>(random_.below(41));
    if (clock_.monotonic_us() + wait_ms * 1000 > give_up_us) break;
    clock_.sleep_for_ms(wait_ms);
  }
  // A SET of ours may still hold the key: leave nothing behind.
  if (unknown_sent_us) (void)send({"EVAL", kReleaseScript, "1", spec.key, spec.value});
  return {.status = AdapterStatus::contended, .message = "gave up after twice the TTL"};
}

AdapterResult MyWholeClient::release_lock(const lockstep::LockSpec& spec) {
  forget_validity(spec.value);
  take_renewal(spec.value).reset();  // its watchdog first: a renewal after the release is refused
  return owner_checked(send({"EVAL", kReleaseScript, "1", spec.key, spec.value}));
}

AdapterResult MyWholeClient::extend_lock(const lockstep::LockSpec& spec, int64_t ttl_ms) {
  forget_validity(spec.value);
  return owner_checked(
      send({"EVAL", kExtendScript, "1", spec.key, spec.value, std::to_string(ttl_ms)}));
}

AdapterResult MyWholeClient::is_valid_lock(const lockstep::LockSpec& spec) {
  std::string error;
  const std::optional<bool> ours = holds_own_value(spec, error);
  if (!ours) return {.status = AdapterStatus::backend_error, .message = error};
  return *ours ? AdapterResult{} : AdapterResult{.status = AdapterStatus::not_owner};
}

int64_t MyWholeClient::validity_end_us(const lockstep::LockSpec& spec, int64_t requested_at_us,
                                       int64_t ttl_ms) const {
  std::lock_guard lock(state_mutex_);
  const auto it = acquired_valid_until_us_.find(spec.value);
  if (it != acquired_valid_until_us_.end()) return it->second;
  return requested_at_us + ttl_ms * 1000;  // an extend: the TTL from when it was sent
}

MyWholeClient::~MyWholeClient() {
  // Each watchdog ends before the connection it renews over may go.
  for (auto& [value, renewal] : renewals_) renewal->task.reset();
}

std::string_view MyWholeClient::name() const {
  switch (bug_) {
    case Bug::none: return "my-whole-client";
    case Bug::timed_out_set_lost: return "my-whole-client-buggy";
    case Bug::unanswered_renewal_taken: return "my-whole-client-hopeful";
  }
  return "my-whole-client";
}

lockstep::AdapterResult MyWholeClient::start_renewing(const lockstep::LockSpec& spec,
                                                      int64_t every_ms) {
  std::lock_guard lock(state_mutex_);
  if (renewals_.count(spec.value) != 0) {
    return {.status = AdapterStatus::backend_error, .message = "renewals start once per lock"};
  }
  auto renewal = std::make_unique<Renewal>();
  // The validity its acquire computed; after an extend (whose send time the Locker keeps), none
  // until the first renewal is answered.
  const auto acquired = acquired_valid_until_us_.find(spec.value);
  renewal->state.valid_until_us =
      acquired != acquired_valid_until_us_.end() ? acquired->second : clock_.monotonic_us();
  Renewal* shared = renewal.get();
  renewal->task = background_.start("renew " + spec.key,
                                    [this, shared, spec, every_ms](lockstep::StopWaiter& stop) {
                                      renew(*shared, spec, every_ms, stop);
                                    });
  renewals_[spec.value] = std::move(renewal);
  return {};
}

void MyWholeClient::renew(Renewal& renewal, const lockstep::LockSpec& spec, int64_t every_ms,
                          lockstep::StopWaiter& stop) {
  constexpr int kRenewalsMax = 1'000'000;  // at the shortest interval, hours of holding
  for (int round = 0; round < kRenewalsMax; ++round) {
    if (!stop.wait_for_us(every_ms * 1000)) return;
    const int64_t sent_us = clock_.monotonic_us();
    const AdapterResult result = owner_checked(
        send({"EVAL", kExtendScript, "1", spec.key, spec.value, std::to_string(spec.ttl_ms)}));
    if (stop.stop_requested()) return;  // released meanwhile: the answer is nobody's
    std::lock_guard lock(renewal.mutex);
    int64_t& valid_until_us = renewal.state.valid_until_us;
    switch (result.status) {
      case AdapterStatus::ok:
        valid_until_us = std::max(valid_until_us, sent_us + spec.ttl_ms * 1000);
        break;
      case AdapterStatus::outcome_unknown:
        // Not known to have landed: the last answered renewal's validity stands (one that lands
        // late only lengthens the lease). The bug takes it as landed.
        if (bug_ == Bug::unanswered_renewal_taken)
          valid_until_us = std::max(valid_until_us, sent_us + spec.ttl_ms * 1000);
        break;
      case AdapterStatus::backend_error: break;  // nothing applied: next round
      default: renewal.state.lost_reason = "a renewal was refused: the lock is gone"; return;
    }
  }
  std::lock_guard lock(renewal.mutex);
  renewal.state.lost_reason = "the watchdog made its last renewal";
}

lockstep::RenewalState MyWholeClient::renewal_state(const lockstep::LockSpec& spec) const {
  std::lock_guard state_lock(state_mutex_);
  const auto renewal = renewals_.find(spec.value);
  if (renewal == renewals_.end()) return {.lost_reason = "not renewed by this client"};
  std::lock_guard renewal_lock(renewal->second->mutex);
  return renewal->second->state;
}

void MyWholeClient::stop_renewing(const lockstep::LockSpec& spec) {
  // The task's destructor stops it and waits out a renewal in flight.
  take_renewal(spec.value).reset();
}

void MyWholeClient::forget_validity(const std::string& value) {
  std::lock_guard lock(state_mutex_);
  acquired_valid_until_us_.erase(value);
}

std::unique_ptr<MyWholeClient::Renewal> MyWholeClient::take_renewal(const std::string& value) {
  std::lock_guard lock(state_mutex_);
  const auto it = renewals_.find(value);
  if (it == renewals_.end()) return nullptr;
  std::unique_ptr<Renewal> renewal = std::move(it->second);
  renewals_.erase(it);
  return renewal;
}

namespace {

lockstep::AdapterEntry whole_client(std::string name, MyWholeClient::Bug bug,
                                    std::string description) {
  // A lease lock on one Redis, no fencing token, owner-checked release and extend.
  return my_redis::redis_lock_entry(
      std::move(name), std::move(description), {.tokens = lockstep::TokenKind::none},
      [bug](lockstep::RedisConnection& c,
            lockstep::ClientSeams seams) -> std::unique_ptr<lockstep::LockAdapter> {
        return std::make_unique<MyWholeClient>(c, seams.clock, seams.random, seams.background, bug);
      });
}

// A calibration variant: `calibrate` must find it breaking `breaks`.
lockstep::AdapterEntry buggy(lockstep::AdapterEntry entry, std::string breaks) {
  entry.known_bad = true;
  entry.breaks = std::move(breaks);
  entry.sibling = "my-whole-client";
  return entry;
}

}  // namespace

void register_my_whole_clients() {
  lockstep::register_adapter(
      whole_client("my-whole-client", MyWholeClient::Bug::none,
                   "my whole Redis lock client (its own retries, validity and renewals)"));
  lockstep::register_adapter(
      buggy(whole_client("my-whole-client-buggy", MyWholeClient::Bug::timed_out_set_lost,
                         "whole client that takes a timed-out SET for lost (validity counted from "
                         "a later attempt)"),
            "validity_within_lease"));
  // Not a calibration variant: a sweep meets its bug in few seeds (an auto-extending holder cut
  // off while another client waits), and its counterexamples stay long (the holder's work). The
  // named scenario made for it catches it every time: `run unanswered-renewal`.
  lockstep::register_adapter(
      whole_client("my-whole-client-hopeful", MyWholeClient::Bug::unanswered_renewal_taken,
                   "buggy: a whole client whose watchdog counts an unanswered renewal as applied "
                   "(caught by unanswered-renewal)"));
}

}  // namespace my_whole_client
