#pragma once
// A lease that lives in the lock's value (AdapterTraits::server_expiry == ExpiryClock::client_value):
// the record is "OWNER:DEADLINE_MS", the owner being the value the client was given (LockSpec::value,
// which may itself hold ':') and the deadline a decimal count of milliseconds on the writing
// client's wall clock (Unix epoch), after the last ':'. A value of any other form is no such lease:
// the backend then records nothing for it, and a run whose acquires succeeded with no lease seen
// ends as no_leases, as for any lock whose servers record none.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lockstep {

struct ValueLease {
  std::string owner;
  int64_t deadline_ms = 0;
};

// The lease value holds, or nullopt: no ':', an empty owner, or a deadline that is not 1 to 15
// decimal digits (so that it fits an int64 in microseconds).
std::optional<ValueLease> parse_value_lease(std::string_view value);

}  // namespace lockstep
