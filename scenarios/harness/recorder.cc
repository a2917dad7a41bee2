#include "scenarios/harness/recorder.h"

#include <string>

namespace lockstep {

size_t Recorder::record(HistoryEvent e) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (closed_ || full_) return static_cast<size_t>(-1);
  if (history_.size() >= hooks_.events_max) {
    full_ = true;
    if (hooks_.on_full) hooks_.on_full();
    return static_cast<size_t>(-1);
  }
  e.time_us = hooks_.now_us();
  const bool wanted = !hooks_.trace_wants_text || hooks_.trace_wants_text();
  e.trace_line = hooks_.trace_line(wanted ? describe(e) : std::string());
  return history_.add(std::move(e));
}

void Recorder::on_grant(std::string_view server, std::string_view key, std::string_view value,
                        int64_t ttl_us, uint64_t fencing_token) {
  record({.kind = EventKind::grant,
          .client = hooks_.current_client(),
          .key = std::string(key),
          .has_token = true,
          .token = fencing_token,
          .server = std::string(server),
          .value = std::string(value),
          .ttl_us = ttl_us});
}

void Recorder::on_extend(std::string_view server, std::string_view key, std::string_view value,
                         int64_t ttl_us) {
  record({.kind = EventKind::extend,
          .client = hooks_.current_client(),
          .key = std::string(key),
          .server = std::string(server),
          .value = std::string(value),
          .ttl_us = ttl_us});
}

void Recorder::on_revoke(std::string_view server, std::string_view key, std::string_view value,
                         RevokeCause cause) {
  record({.kind = EventKind::revoke,
          .client = hooks_.current_client(),
          .key = std::string(key),
          .server = std::string(server),
          .value = std::string(value),
          .detail = cause == RevokeCause::release ? "release" : "overwrite"});
}

}  // namespace lockstep
