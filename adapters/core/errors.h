#pragma once
// The typed errors of the lock API, all under LockError.
//
// Only LockCreateError (the key is held by someone else) is retried by acquire(). Everything
// else (a backend that cannot be reached, a reply that makes no sense, bad arguments) surfaces at
// once, so an acquire that cannot be confirmed is never reported as held.
#include <exception>
#include <stdexcept>
#include <string>

namespace lockstep {

class LockError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The lock was not granted because of contention (another owner holds it, or, for Redlock, no
// quorum agreed): the only error acquire() retries. detail is what the adapter knew beyond that
// (Redlock: how many nodes refused, how many timed out), so a retry that gives up says why.
class LockCreateError : public LockError {
 public:
  explicit LockCreateError(const std::string& key, const std::string& detail = {});
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

// release() with throw_on_fail found the lock gone or owned by someone else.
class LockReleaseError : public LockError {
 public:
  using LockError::LockError;
};

// extend() found the lock gone or owned by someone else (or, for Redlock, no longer valid).
class LockExtendError : public LockError {
 public:
  using LockError::LockError;
};

// acquire() gave up: retries exhausted, total time spent, or a custom delay function said stop.
// Keeps the last cause (normally a LockCreateError).
class RetryError : public LockError {
 public:
  RetryError(const std::string& message, int attempts, std::exception_ptr last_cause);
  int attempts() const { return attempts_; }
  const std::exception_ptr& last_cause() const { return last_cause_; }

 private:
  int attempts_;
  std::exception_ptr last_cause_;
};

// A key, TTL or retry setting that makes no sense. Names the parameter and says why.
class ValidationError : public LockError {
 public:
  ValidationError(std::string parameter, const std::string& why);
  const std::string& parameter() const { return parameter_; }

 private:
  std::string parameter_;
};

// The backend could not be reached, timed out, or answered something unexpected. Not retried.
class BackendError : public LockError {
 public:
  using LockError::LockError;
};

// A create, extend or release was sent but its reply never came: it may have taken effect or
// not. The message says what the caller can still rely on and what to do. Not retried.
class LockOutcomeUnknownError : public BackendError {
 public:
  using BackendError::BackendError;
};

}  // namespace lockstep
