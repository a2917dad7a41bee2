#include "services/etcd/adapter/etcd_lease_lock.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/check.h"
#include "services/etcd/client/etcd_json.h"

namespace lockstep {

using etcd::base64_encode;
using etcd::int_field;
using etcd::kLeaseNotFound;

namespace {

AdapterResult failed(AdapterStatus status, std::string message) {
  return {.status = status, .message = std::move(message)};
}

}  // namespace

int64_t etcd_lease_ttl_s(int64_t ttl_ms) { return std::max<int64_t>(1, (ttl_ms + 999) / 1000); }

EtcdLeaseLock::EtcdLeaseLock(EtcdLockOptions options) : options_(std::move(options)) {
  LOCKSTEP_CHECK(options_.connection != nullptr && options_.clock != nullptr,
                 "an etcd lock needs a connection and a clock");
}

EtcdLeaseLock::Step EtcdLeaseLock::write(std::string_view path, const EtcdJson& body,
                                         AdapterStatus lease_not_found_is) {
  EtcdResult r = options_.connection->call(path, body);
  const std::string where = fmt::format("{} {}", options_.connection->endpoint(), path);
  if (may_have_applied(r.status))
    return {failed(AdapterStatus::outcome_unknown, fmt::format("{}: {}", where, r.message)), {}};
  if (!r.ok())
    return {failed(AdapterStatus::backend_error, fmt::format("{}: {}", where, r.message)), {}};
  if (r.refused()) {
    const std::string text = r.error_text();
    const AdapterStatus status =
        text == kLeaseNotFound ? lease_not_found_is : AdapterStatus::backend_error;
    return {failed(status, fmt::format("{}: {}", where, text)), {}};
  }
  return {{}, std::move(r.body)};
}

EtcdLeaseLock::Step EtcdLeaseLock::read(std::string_view path, const EtcdJson& body) {
  EtcdResult r = options_.connection->call(path, body);
  if (!r.ok() || r.refused()) {
    return {failed(AdapterStatus::backend_error,
                   fmt::format("{} {}: {}", options_.connection->endpoint(), path, describe(r))),
            {}};
  }
  return {{}, std::move(r.body)};
}

EtcdLeaseLock::Step EtcdLeaseLock::grant(int64_t ttl_ms, Held& held) {
  held.refreshed_at_us = options_.clock->monotonic_us();
  Step step = write("/v3/lease/grant", {{"TTL", etcd_lease_ttl_s(ttl_ms)}});
  if (!step.result.ok()) return step;
  held.lease = int_field(step.reply, "ID").value_or(0);
  held.lease_ttl_s = int_field(step.reply, "TTL").value_or(0);
  if (held.lease == 0 || held.lease_ttl_s <= 0)
    step.result =
        failed(AdapterStatus::backend_error, "lease grant without ID or TTL: " + step.reply.dump());
  return step;
}

EtcdLeaseLock::Step EtcdLeaseLock::keepalive(int64_t lease, int64_t* ttl_s) {
  Step step =
      write("/v3/lease/keepalive", {{"ID", std::to_string(lease)}}, AdapterStatus::not_owner);
  if (step.result.ok()) {
    const EtcdJson& result = step.reply.contains("result") ? step.reply["result"] : step.reply;
    *ttl_s = int_field(result, "TTL").value_or(0);
  }
  return step;
}

AdapterResult EtcdLeaseLock::give_up(int64_t lease, AdapterResult why) {
  if (lease == 0) return why;
  const Step revoked =
      write("/v3/lease/revoke", {{"ID", std::to_string(lease)}}, AdapterStatus::not_owner);
  if (revoked.result.ok() || revoked.result.status == AdapterStatus::not_owner) return why;
  return {.status = AdapterStatus::outcome_unknown,
          .message = fmt::format("{}; then giving its lease back failed ({}), so its key may stay "
                                 "queued, and become the lock, until the lease's TTL",
                                 why.message, revoked.result.message)};
}

EtcdLeaseLock::Step EtcdLeaseLock::key_held(const std::string& key, int64_t lease, bool* held,
                                            int64_t* create_revision) {
  Step step = read("/v3/kv/range", {{"key", base64_encode(key)}});
  *held = false;
  if (!step.result.ok()) return step;
  const EtcdJson kvs = step.reply.value("kvs", EtcdJson::array());
  if (!kvs.empty() && int_field(kvs[0], "lease").value_or(0) == lease) {
    *held = true;
    *create_revision = int_field(kvs[0], "create_revision").value_or(0);
  }
  return step;
}

void EtcdLeaseLock::remember(const std::string& value, Held held) {
  LOCKSTEP_CHECK(held_.size() < kEtcdHeldMax || held_.count(value) > 0,
                 "an etcd adapter holds at most kEtcdHeldMax locks at once");
  held_[value] = std::move(held);
}

AdapterResult EtcdLeaseLock::release_lock(const LockSpec& spec) {
  const auto it = held_.find(spec.value);
  if (it == held_.end()) return failed(AdapterStatus::not_owner, "not acquired by this value");
  Step step = write("/v3/lease/revoke", {{"ID", std::to_string(it->second.lease)}},
                    AdapterStatus::not_owner);
  // Gone either way unless the reply was lost: then a release again may still have work to do.
  if (step.result.status != AdapterStatus::outcome_unknown) held_.erase(it);
  return step.result;
}

AdapterResult EtcdLeaseLock::extend_lock(const LockSpec& spec, int64_t ttl_ms) {
  const auto it = held_.find(spec.value);
  if (it == held_.end()) return failed(AdapterStatus::not_owner, "not acquired by this value");
  Held& held = it->second;
  if (etcd_lease_ttl_s(ttl_ms) > held.lease_ttl_s) {
    // A keepalive renews the lease for the TTL it was granted with: never more.
    return failed(AdapterStatus::not_owner,
                  fmt::format("the lease was granted for {} s: a keepalive cannot make it {} ms",
                              held.lease_ttl_s, ttl_ms));
  }
  const int64_t sent_at_us = options_.clock->monotonic_us();
  int64_t ttl_s = 0;
  Step step = keepalive(held.lease, &ttl_s);
  if (!step.result.ok()) return step.result;
  if (ttl_s <= 0) return failed(AdapterStatus::not_owner, "the lease is gone (keepalive TTL 0)");
  bool still = false;
  int64_t create_revision = 0;
  step = key_held(held.key, held.lease, &still, &create_revision);
  if (!step.result.ok()) {
    // The keepalive took effect: the lease runs on, whatever became of the key. Not knowing
    // whether the extend holds is an unknown outcome, not "nothing happened" (adapter.h).
    return failed(AdapterStatus::outcome_unknown,
                  "the lease was renewed but its key could not be checked: " + step.result.message);
  }
  if (!still) return failed(AdapterStatus::not_owner, "the lease is alive but its key is gone");
  held.refreshed_at_us = sent_at_us;
  return {};
}

AdapterResult EtcdLeaseLock::is_valid_lock(const LockSpec& spec) {
  const auto it = held_.find(spec.value);
  if (it == held_.end()) return failed(AdapterStatus::not_owner, "not acquired by this value");
  bool still = false;
  int64_t create_revision = 0;
  const Step step = key_held(it->second.key, it->second.lease, &still, &create_revision);
  if (!step.result.ok()) return step.result;
  return still ? AdapterResult{} : failed(AdapterStatus::not_owner, "its key is gone");
}

int64_t EtcdLeaseLock::validity_end_us(const LockSpec& spec, int64_t requested_at_us,
                                       int64_t ttl_ms) const {
  const auto it = held_.find(spec.value);
  if (it == held_.end()) return requested_at_us + ttl_ms * 1000;
  const int64_t from = std::max(requested_at_us, it->second.refreshed_at_us);
  return from + std::min(ttl_ms * 1000, it->second.lease_ttl_s * 1'000'000);
}

}  // namespace lockstep
