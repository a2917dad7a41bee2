#pragma once
// RedlockError: every failure of the Redlock API names its cause (Redis-DLM's LockManagerError).
//
//   not_enough_clients  fewer than a majority of nodes answered: the outcome cannot be known
//   no_consensus        enough nodes answered, but fewer than a majority granted (contention)
//   took_too_long       a majority granted, but acquiring used up the lease (validity <= 0)
//   no_longer_valid     extend: the lock's validity had ended, or a majority did not confirm it
//   max_hold_exceeded   extend: the new expiry would pass the lock's max hold time
//   release_failure     release: fewer than a majority of nodes confirmed (the lease may linger)
// On every acquire failure the lock has already been released on every node; a failed extend
// leaves the leases to run out by their TTL (RedlockLock::extend).
#include <string>
#include <string_view>

#include "adapters/core/errors.h"

namespace lockstep {

enum class RedlockErrorCause {
  not_enough_clients,
  no_consensus,
  took_too_long,
  no_longer_valid,
  max_hold_exceeded,
  release_failure,
};
std::string_view to_string(RedlockErrorCause cause);

class RedlockError : public LockError {
 public:
  RedlockError(RedlockErrorCause cause, const std::string& message);
  RedlockErrorCause cause() const { return cause_; }

 private:
  RedlockErrorCause cause_;
};

}  // namespace lockstep
