#include "services/redlock/adapter/redlock_errors.h"

namespace lockstep {

std::string_view to_string(RedlockErrorCause cause) {
  switch (cause) {
    case RedlockErrorCause::not_enough_clients: return "not enough clients";
    case RedlockErrorCause::no_consensus: return "no consensus";
    case RedlockErrorCause::took_too_long: return "took too long to acquire";
    case RedlockErrorCause::no_longer_valid: return "lock no longer valid";
    case RedlockErrorCause::max_hold_exceeded: return "max hold time exceeded";
    case RedlockErrorCause::release_failure: return "release failure";
  }
  return "unknown";
}

RedlockError::RedlockError(RedlockErrorCause cause, const std::string& message)
    : LockError(std::string(to_string(cause)) + ": " + message), cause_(cause) {}

}  // namespace lockstep
