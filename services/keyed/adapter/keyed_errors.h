#pragma once
// The errors of the FIFO keyed lock, each with a code (the seed's strings) and its context.
//
// LOCK_TIMEOUT     the caller's max wait ran out before it got the key: key, max_wait_ms. The
//                  holder and the other waiters are not touched.
// LOCK_CLEARED     clear() rejected the caller while it waited: key.
// INVALID_KEY      the key is longer than max_key_length bytes: key (its first kKeyShownBytes
//                  bytes only, so a huge key is not copied into every error), key_length (the
//                  actual length), max_key_length.
// LOCK_QUEUE_FULL  max_waiters_per_key callers already wait for the key: key, max_waiters_per_key.
// None of them is ever thrown after the caller's function ran: an error means fn never ran.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "adapters/core/errors.h"

namespace lockstep::keyed {

enum class KeyedLockCode { lock_timeout, lock_cleared, invalid_key, lock_queue_full };
// "LOCK_TIMEOUT", "LOCK_CLEARED", "INVALID_KEY", "LOCK_QUEUE_FULL".
std::string_view code_name(KeyedLockCode code);

class KeyedLockError : public LockError {
 public:
  static constexpr size_t kKeyShownBytes = 64;

  static KeyedLockError timeout(std::string_view key, int64_t max_wait_ms);
  static KeyedLockError cleared(std::string_view key);
  static KeyedLockError invalid_key(std::string_view key, size_t max_key_length);
  static KeyedLockError queue_full(std::string_view key, size_t max_waiters_per_key);

  KeyedLockCode code() const { return code_; }
  std::string_view code_name() const { return keyed::code_name(code_); }
  const std::string& key() const { return key_; }
  size_t key_length() const { return key_length_; }
  std::optional<int64_t> max_wait_ms() const { return wait_max_ms_; }
  std::optional<size_t> max_key_length() const { return key_length_max_; }
  std::optional<size_t> max_waiters_per_key() const { return waiters_per_key_max_; }

 private:
  KeyedLockError(KeyedLockCode code, std::string_view key, const std::string& detail);

  KeyedLockCode code_;
  std::string key_;
  size_t key_length_;
  std::optional<int64_t> wait_max_ms_;
  std::optional<size_t> key_length_max_;
  std::optional<size_t> waiters_per_key_max_;
};

}  // namespace lockstep::keyed
