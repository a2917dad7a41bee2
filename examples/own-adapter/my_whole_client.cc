#include "my_whole_client.h"

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
  acquired_valid_until_us_.erase(spec.value);
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
        if (timeouts_ == Timeouts::may_have_applied && !unknown_sent_us) unknown_sent_us = sent_us;
        break;
      case Attempt::refused: {
        // Held: perhaps by us, from a SET whose reply never came.
        const std::optional<bool> ours = holds_own_value(spec, error);
        if (ours.value_or(false)) {
          if (timeouts_ == Timeouts::lost) {
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
        acquired_valid_until_us_[spec.value] = valid_until_us;
        return {};
      }
      // Over already by our count: give it back and try again. Until the server says it is
      // gone, the key may still hold that lease, from when its SET was sent: a later attempt that
      // finds our value must count from then, not from a SET of its own.
      const RedisResult given_back = send({"EVAL", kReleaseScript, "1", spec.key, spec.value});
      const bool gone = given_back.ok() && given_back.reply.type == RedisReply::Type::integer;
      if (!gone && (!unknown_sent_us || *lease_from_us < *unknown_sent_us)) {
        unknown_sent_us = lease_from_us;
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
  acquired_valid_until_us_.erase(spec.value);
  return owner_checked(send({"EVAL", kReleaseScript, "1", spec.key, spec.value}));
}

AdapterResult MyWholeClient::extend_lock(const lockstep::LockSpec& spec, int64_t ttl_ms) {
  acquired_valid_until_us_.erase(spec.value);
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
  const auto it = acquired_valid_until_us_.find(spec.value);
  if (it != acquired_valid_until_us_.end()) return it->second;
  return requested_at_us + ttl_ms * 1000;  // an extend: the TTL from when it was sent
}

namespace {

lockstep::AdapterEntry whole_client(std::string name, MyWholeClient::Timeouts timeouts,
                                    std::string description) {
  // A lease lock on one Redis, no fencing token, owner-checked release and extend.
  return my_redis::redis_lock_entry(
      std::move(name), std::move(description), {.tokens = lockstep::TokenKind::none},
      [timeouts](lockstep::RedisConnection& c,
                 lockstep::ClientSeams seams) -> std::unique_ptr<lockstep::LockAdapter> {
        return std::make_unique<MyWholeClient>(c, seams.clock, seams.random, timeouts);
      });
}

}  // namespace

void register_my_whole_clients() {
  lockstep::register_adapter(
      whole_client("my-whole-client", MyWholeClient::Timeouts::may_have_applied,
                   "my whole Redis lock client (its own retries and validity)"));
  lockstep::AdapterEntry buggy = whole_client(
      "my-whole-client-buggy", MyWholeClient::Timeouts::lost,
      "whole client that takes a timed-out SET for lost (validity counted from a later attempt)");
  // A calibration variant: `calibrate` must find it breaking this.
  buggy.known_bad = true;
  buggy.breaks = "validity_within_lease";
  buggy.sibling = "my-whole-client";
  lockstep::register_adapter(std::move(buggy));
}

}  // namespace my_whole_client
