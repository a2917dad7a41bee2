#include "services/etcd/adapter/etcd_lock_adapter.h"

#include <algorithm>

#include <fmt/format.h>

#include "services/etcd/client/etcd_json.h"

namespace lockstep {

using etcd::base64_encode;
using etcd::bytes_field;
using etcd::int_field;
using etcd::kLeaseNotFound;

AdapterResult EtcdLockAdapter::create_lock(const LockSpec& spec) {
  Clock& clock = *options_.clock;
  const int64_t started_us = clock.monotonic_us();
  Held held;
  Step step = grant(spec.ttl_ms, held);
  if (!step.result.ok()) return step.result;
  const int64_t deadline_us = started_us + rpc_.lock_wait_ms * 1000;
  const int64_t refresh_every_us = std::max<int64_t>(1, spec.ttl_ms * 1000 / 3);
  int64_t next_refresh_us = held.refreshed_at_us + refresh_every_us;
  EtcdJson reply;
  {
    std::unique_ptr<EtcdStream> call = options_.connection->open(
        "/v3/lock/lock",
        {{"name", base64_encode(name_of(spec.key))}, {"lease", std::to_string(held.lease)}});
    while (true) {
      const int64_t now_us = clock.monotonic_us();
      if (now_us >= deadline_us) {
        call.reset();  // closing the call makes the server delete our key
        return give_up(held.lease, contended(fmt::format("queued {} ms", rpc_.lock_wait_ms)));
      }
      if (rpc_.lease_check && now_us >= next_refresh_us) {
        const int64_t sent_us = now_us;
        int64_t ttl_s = 0;
        const Step alive = keepalive(held.lease, &ttl_s);
        next_refresh_us = sent_us + refresh_every_us;
        if (alive.result.ok() && ttl_s <= 0) {
          call.reset();
          return give_up(held.lease, contended("its lease expired while it waited in the queue"));
        }
        if (alive.result.ok()) held.refreshed_at_us = sent_us;
        // A keepalive that failed: the validity check below decides. Either way the stream is
        // read next, even when the keepalive took longer than the interval between them: a
        // refresh must never starve Lock's answer (a 31 ms lock whose keepalives take 11 ms
        // each, through a follower, would otherwise keep refreshing until lock_wait_ms).
      }
      const int64_t read_from_us = clock.monotonic_us();
      const int64_t until_us =
          rpc_.lease_check ? std::min(deadline_us, next_refresh_us) : deadline_us;
      EtcdResult message = call->next(std::max<int64_t>(0, until_us - read_from_us));
      if (message.status == IoStatus::timeout) continue;
      if (!message.ok()) {
        call.reset();
        return give_up(held.lease, {.status = AdapterStatus::backend_error,
                                    .message = "Lock RPC: " + message.message});
      }
      if (message.refused()) {
        call.reset();
        const std::string text = message.error_text();
        return give_up(held.lease, text == kLeaseNotFound
                                       ? contended("Lock RPC: " + text)
                                       : AdapterResult{.status = AdapterStatus::backend_error,
                                                       .message = "Lock RPC: " + text});
      }
      reply = std::move(message.body);
      break;
    }
  }
  held.key = bytes_field(reply, "key").value_or("");
  int64_t token = int_field(reply.value("header", EtcdJson::object()), "revision").value_or(0);
  if (rpc_.lease_check) {
    bool still = false;
    step = key_held(held.key, held.lease, &still, &token);
    if (!step.result.ok()) return give_up(held.lease, step.result);
    if (!still) {
      return give_up(held.lease,
                     contended(fmt::format("the Lock RPC returned {}, which is gone: its lease "
                                           "expired while it waited (etcd-io/etcd#11456)",
                                           held.key)));
    }
    // Last, after every round trip: a lock whose validity (from the last keepalive that
    // succeeded) ended while Lock answered or the key was read is not reported held.
    const int64_t valid_until_us =
        held.refreshed_at_us + std::min(spec.ttl_ms * 1000, held.lease_ttl_s * 1'000'000);
    if (clock.monotonic_us() >= valid_until_us) {
      return give_up(held.lease, contended("the lock's validity ended before it was confirmed"));
    }
  }
  remember(spec.value, held);
  return {.fencing_token = static_cast<uint64_t>(token)};
}

}  // namespace lockstep
