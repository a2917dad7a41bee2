#pragma once
// A Redis keyspace of string keys and string values, each with an optional absolute expiry in
// node-local milliseconds (Redis 7 stores and replicates absolute times: SET PX becomes PXAT).
//
// Expiry is judged on access, by the caller's `now_ms`, with Redis 7.0's rule (db.c keyIsExpired:
// `now > when`): a key whose expire_at_ms == now_ms still exists; it is gone from now_ms + 1.
// Verified against redis-server 7.0.15: `SET k v PX 1` then `PTTL k` returns 0 (not -2) in about
// 2% of 3,000 pipelined pairs, so a key with no time left is still there.
//
// Two modes (Redis primaries vs replicas):
// - expire_on_access (primaries): an expired key found on access is deleted and reported as an
//   `expired` change (Redis then propagates a DEL and fires the `expired` notification).
// - hide only (replicas): an expired key reads as missing but stays until the primary's DEL
//   arrives, so a replica whose clock runs ahead never loses a key its primary later extends.
//
// Every mutation made through the command primitives (set, del, set_expire, lookup) is reported
// to the ChangeSink passed in, in order; apply() replays a change without reporting it
// (replication, recovery). Keys are kept in a std::map: iteration is in key order.
#include <cstdint>
#include <map>
#include <string>

namespace lockstep::sim {

inline constexpr int64_t kNoExpiry = -1;

struct Entry {
  std::string value;
  int64_t expire_at_ms = kNoExpiry;  // absolute, node-local milliseconds
};

// One mutation of the keyspace, as the node reports and replicates it.
struct KeyChange {
  enum class Kind { set, del, pexpire, expired };
  Kind kind = Kind::set;
  std::string key;
  // set: the value written; del/expired: the value removed; pexpire: the key's current value.
  std::string value;
  int64_t expire_at_ms = kNoExpiry;  // set/pexpire: the key's absolute expiry afterwards
  int64_t ttl_ms = -1;               // set/pexpire: expire_at_ms - now (-1: no expiry)
};

class ChangeSink {
 public:
  virtual ~ChangeSink() = default;
  virtual void on_change(const KeyChange& change) = 0;
};

// A sink that drops everything (reads, tests).
class NullChangeSink final : public ChangeSink {
 public:
  void on_change(const KeyChange&) override {}
};

// Redis 7.0's rule at the boundary: expired only once now is strictly past the expiry.
inline bool is_expired(const Entry& e, int64_t now_ms) {
  return e.expire_at_ms != kNoExpiry && now_ms > e.expire_at_ms;
}

class Keyspace {
 public:
  // --- command primitives (report to sink) ---
  // The live entry for key, or nullptr. An expired key is deleted (reported as `expired`) in
  // expire_on_access mode, hidden otherwise.
  const Entry* lookup(const std::string& key, int64_t now_ms, ChangeSink& sink);
  // Writes key = value with the given absolute expiry (kNoExpiry for none).
  void set(const std::string& key, std::string value, int64_t expire_at_ms, int64_t now_ms,
           ChangeSink& sink);
  // Deletes a live key; false if there was none.
  bool del(const std::string& key, int64_t now_ms, ChangeSink& sink);
  // Sets a live key's absolute expiry; false if there was none.
  bool set_expire(const std::string& key, int64_t expire_at_ms, int64_t now_ms, ChangeSink& sink);

  // --- replay and inspection (no expiry check, nothing reported) ---
  void apply(const KeyChange& change);
  // The stored entry, expired or not (tests, differential comparison).
  const Entry* peek(const std::string& key) const;
  const std::map<std::string, Entry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  void clear() { entries_.clear(); }

  void set_expire_on_access(bool on) { expire_on_access_ = on; }
  bool expire_on_access() const { return expire_on_access_; }

 private:
  std::map<std::string, Entry> entries_;
  bool expire_on_access_ = true;
};

}  // namespace lockstep::sim
