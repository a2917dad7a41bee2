#pragma once
// EtcdAdapter: etcd's concurrency recipe (clientv3/concurrency's Mutex), one attempt per call.
//
// create_lock:
//  1. grants a lease for the TTL (whole seconds, rounded up);
//  2. one txn: if NAME/LEASE_HEX does not exist, put it (value: the lock's unique value) with the
//     lease, and read the prefix's first-created key; else read both;
//  3. holds when the first-created key is its own: its create revision is the fencing token;
//  4. otherwise waits for its turn as Mutex.Lock does (waitDeletes): reads the newest key created
//     before its own and watches it until it is deleted, again until none is left; for at most
//     half the TTL from the grant, so a lock it gets still has half its validity (a longer wait
//     would also be refused by the Locker, which drops a grant that came after its TTL); giving
//     up revokes the lease (its key goes, the queue moves on) and is `contended`;
//  5. then reads its own key: it must still exist with its lease. etcd 3.4's Mutex.Lock returned
//     without this check, so a waiter whose lease ran out in the queue was told it held the lock
//     (etcd-io/etcd#11456); a key that is gone is `contended` (the lease expired while queued).
// Release, extend and is_valid: EtcdLeaseLock's (revoke; keepalive and key check; key check).
// A failure midway revokes the lease (best effort) before it is returned.
#include <string>

#include "services/etcd/adapter/etcd_lease_lock.h"

namespace lockstep {

// The known-bad variants of the recipe (services/etcd/known_bad): each gets one thing wrong.
enum class EtcdRecipeFlaw {
  none,
  smallest_key,  // the holder is the smallest key under the prefix, not the first created
};

class EtcdAdapter final : public EtcdLeaseLock {
 public:
  explicit EtcdAdapter(EtcdLockOptions options, EtcdRecipeFlaw flaw = EtcdRecipeFlaw::none)
      : EtcdLeaseLock(std::move(options)), flaw_(flaw) {}

  std::string_view name() const override {
    return flaw_ == EtcdRecipeFlaw::none ? "etcd" : "bad-etcd-smallest-key";
  }
  AdapterResult create_lock(const LockSpec& spec) override;

 private:
  // Waits until no key under prefix was created before my_revision, or deadline_us passes.
  AdapterResult wait_turn(const std::string& prefix, const std::string& my_key, int64_t my_revision,
                          int64_t deadline_us);

  EtcdRecipeFlaw flaw_;
};

}  // namespace lockstep
