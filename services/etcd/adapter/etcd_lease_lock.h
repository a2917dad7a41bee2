#pragma once
// What the two etcd locks share: one lease per lock, owned by the lock's unique value.
//
// An etcd lock is a key under the lock's prefix (NAME/ + the lease ID in hex) attached to a lease:
// whoever's key has the lowest create revision under the prefix holds it, and the key lives as
// long as the lease. So:
// - the lease is granted for the lock's TTL rounded up to whole seconds (etcd's unit; the server
//   raises it to its minimum, ceil(1.5 election timeouts)): the server keeps the lock at least as
//   long as the holder believes it holds;
// - release revokes the lease (its key goes with it): owner-checked and atomic, since only this
//   value knows its lease ID;
// - extend is a keepalive of the lease (TTL 0 in the reply: gone) and then a read of the key
//   (still there with this lease), so a lease kept alive without its key never counts as held;
// - the fencing token is the key's create revision: the next holder's key was created later.
// Transport failures: a timeout after a write was sent is outcome_unknown; a read that failed, a
// broken connection and a refusal other than "lease not found" are backend_error.
//
// Invariants: every operation acts on this value's own lease only; per-lock state is kept only
// between a successful acquire and its release (bounded by kHeldMax live locks per adapter).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "lockstep/adapter.h"
#include "lockstep/clock.h"
#include "services/etcd/client/etcd_connection.h"

namespace lockstep {

inline constexpr size_t kEtcdHeldMax = 4096;

// The lease TTL for a lock of ttl_ms: whole seconds, rounded up, at least 1.
int64_t etcd_lease_ttl_s(int64_t ttl_ms);

struct EtcdLockOptions {
  EtcdConnection* connection = nullptr;
  Clock* clock = nullptr;
  std::string key_prefix = "lockstep/";  // lock "k" is the etcd name "lockstep/k"
};

class EtcdLeaseLock : public LockAdapter {
 public:
  explicit EtcdLeaseLock(EtcdLockOptions options);

  FencingSupport fencing() const override { return FencingSupport::monotonic; }
  AdapterResult release_lock(const LockSpec& spec) override;
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override;
  AdapterResult is_valid_lock(const LockSpec& spec) override;
  // From the latest refresh of the lease this adapter saw succeed (its grant, or a keepalive),
  // for ttl_ms but never longer than the lease's own TTL.
  int64_t validity_end_us(const LockSpec& spec, int64_t requested_at_us,
                          int64_t ttl_ms) const override;

  // The etcd name of a lock key and the prefix its owners' keys live under.
  std::string name_of(const std::string& key) const { return options_.key_prefix + key; }

 protected:
  struct Held {
    int64_t lease = 0;
    int64_t lease_ttl_s = 0;
    std::string key;              // NAME/LEASE_HEX
    int64_t refreshed_at_us = 0;  // monotonic: when the latest successful refresh was sent
  };
  struct Step {
    AdapterResult result;  // ok, or the failure to return
    EtcdJson reply;        // ok: the reply body
  };

  // Another owner holds the lock, and why this acquire gave up on it.
  static AdapterResult contended(std::string why) {
    return {.status = AdapterStatus::contended, .message = std::move(why)};
  }

  // A write request: ok with its reply, or the failure as the adapter reports it. A refusal of
  // `lease_not_found_is` kind becomes that status (not_owner, contended) with the server's text.
  Step write(std::string_view path, const EtcdJson& body,
             AdapterStatus lease_not_found_is = AdapterStatus::backend_error);
  Step read(std::string_view path, const EtcdJson& body);
  // Grants a lease for ttl_ms; ok with held.lease and held.lease_ttl_s set.
  Step grant(int64_t ttl_ms, Held& held);
  // A keepalive: its reply's TTL (0: the lease is gone).
  Step keepalive(int64_t lease, int64_t* ttl_s);
  // After a failed attempt: the lease goes, and the key with it, so `why` is the whole story. When
  // the revoke did not come back done (or "not found"), the attempt's key may stay queued until
  // its lease's TTL, and become the lock with nobody knowing it holds it: that is no clean
  // refusal but an unknown outcome (adapter.h), which says so.
  AdapterResult give_up(int64_t lease, AdapterResult why);
  // Whether `key` exists with `lease` now; its create revision in *create_revision.
  Step key_held(const std::string& key, int64_t lease, bool* held, int64_t* create_revision);
  void remember(const std::string& value, Held held);

  EtcdLockOptions options_;
  std::map<std::string, Held> held_;  // by the lock's unique value
};

}  // namespace lockstep
