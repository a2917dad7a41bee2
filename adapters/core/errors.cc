#include "adapters/core/errors.h"

#include <utility>

namespace lockstep {

LockCreateError::LockCreateError(const std::string& key, const std::string& detail)
    : LockError(detail.empty() ? "lock \"" + key + "\" is held by another owner"
                               : "lock \"" + key + "\" was not granted: " + detail),
      key_(key) {}

RetryError::RetryError(const std::string& message, int attempts, std::exception_ptr last_cause)
    : LockError(message), attempts_(attempts), last_cause_(std::move(last_cause)) {}

ValidationError::ValidationError(std::string parameter, const std::string& why)
    : LockError("invalid " + parameter + ": " + why), parameter_(std::move(parameter)) {}

}  // namespace lockstep
