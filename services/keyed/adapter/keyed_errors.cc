#include "services/keyed/adapter/keyed_errors.h"

namespace lockstep::keyed {

namespace {

std::string shown(std::string_view key) {
  return std::string(key.substr(0, KeyedLockError::kKeyShownBytes));
}

}  // namespace

std::string_view code_name(KeyedLockCode code) {
  switch (code) {
    case KeyedLockCode::lock_timeout: return "LOCK_TIMEOUT";
    case KeyedLockCode::lock_cleared: return "LOCK_CLEARED";
    case KeyedLockCode::invalid_key: return "INVALID_KEY";
    case KeyedLockCode::lock_queue_full: return "LOCK_QUEUE_FULL";
  }
  return "?";
}

KeyedLockError::KeyedLockError(KeyedLockCode code, std::string_view key, const std::string& detail)
    : LockError(std::string(keyed::code_name(code)) + ": " + detail),
      code_(code),
      key_(shown(key)),
      key_length_(key.size()) {}

KeyedLockError KeyedLockError::timeout(std::string_view key, int64_t max_wait_ms) {
  KeyedLockError e(
      KeyedLockCode::lock_timeout, key,
      "did not get key \"" + shown(key) + "\" within " + std::to_string(max_wait_ms) + " ms");
  e.wait_max_ms_ = max_wait_ms;
  return e;
}

KeyedLockError KeyedLockError::cleared(std::string_view key) {
  return {KeyedLockCode::lock_cleared, key,
          "the lock was cleared while waiting for key \"" + shown(key) + "\""};
}

KeyedLockError KeyedLockError::invalid_key(std::string_view key, size_t max_key_length) {
  KeyedLockError e(KeyedLockCode::invalid_key, key,
                   "key of " + std::to_string(key.size()) +
                       " bytes is longer than max_key_length " + std::to_string(max_key_length));
  e.key_length_max_ = max_key_length;
  return e;
}

KeyedLockError KeyedLockError::queue_full(std::string_view key, size_t max_waiters_per_key) {
  KeyedLockError e(
      KeyedLockCode::lock_queue_full, key,
      std::to_string(max_waiters_per_key) + " callers already wait for key \"" + shown(key) + "\"");
  e.waiters_per_key_max_ = max_waiters_per_key;
  return e;
}

}  // namespace lockstep::keyed
