#include "scenarios/backends/lease_events.h"

#include <cstdint>

namespace lockstep {

namespace {

constexpr int64_t kLeaseForever_us = INT64_MAX / 4;  // a lock key written without PX
constexpr int64_t kUsPerMs = 1000;

}  // namespace

std::optional<HistoryEvent> lease_event_from(std::string_view node_name,
                                             const sim::KeyspaceEvent& e,
                                             std::string_view lock_prefix) {
  if (e.key.rfind(lock_prefix, 0) != 0) return std::nullopt;  // fencing counters and other keys
  HistoryEvent event{.client = e.client,
                     .key = e.key.substr(lock_prefix.size()),
                     .server = std::string(node_name),
                     .value = e.value};
  switch (e.kind) {
    case sim::KeyspaceEvent::Kind::set:
      event.kind = EventKind::grant;
      event.ttl_us = e.ttl_ms >= 0 ? e.ttl_ms * kUsPerMs : kLeaseForever_us;
      return event;
    case sim::KeyspaceEvent::Kind::pexpire:
      event.kind = EventKind::extend;
      event.ttl_us = e.ttl_ms * kUsPerMs;
      return event;
    case sim::KeyspaceEvent::Kind::del:
      event.kind = EventKind::revoke;
      event.detail = "del";
      return event;
    case sim::KeyspaceEvent::Kind::expired:
      return std::nullopt;  // the lease ran out by the server's clock: nothing was revoked
  }
  return std::nullopt;
}

}  // namespace lockstep
