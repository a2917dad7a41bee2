#include "harness/value_lease.h"

namespace lockstep {

namespace {

constexpr size_t kDeadlineDigitsMax = 15;  // ms up to year 33658: times 1000 still fits int64

}  // namespace

std::optional<ValueLease> parse_value_lease(std::string_view value) {
  const size_t colon = value.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  const std::string_view digits = value.substr(colon + 1);
  if (digits.empty() || digits.size() > kDeadlineDigitsMax) return std::nullopt;
  int64_t deadline_ms = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    deadline_ms = deadline_ms * 10 + (c - '0');
  }
  return ValueLease{.owner = std::string(value.substr(0, colon)), .deadline_ms = deadline_ms};
}

}  // namespace lockstep
