#pragma once
// EtcdLockAdapter: etcd's own lock service, the Lock RPC (v3lock; /v3/lock/lock on the gateway).
//
// create_lock grants a lease for the TTL (whole seconds, rounded up) and calls Lock(name, lease),
// which the server answers once the lock is this lease's: the server queues the caller behind
// every key created before its own and answers when they are gone, however long that takes (up
// to lock_wait_ms here; giving up closes the call, which makes the server delete the caller's key,
// and revokes the lease). Its verdict is the server's lock service's, not one attempt of a retry
// loop (is_whole_library): a wait longer than the TTL is how a queue works.
//
// With lease_check (the default) the adapter is the careful client etcd 3.4 needs: it keeps its
// lease alive while it waits (a keepalive every TTL/3, as a Go session does), and when Lock
// answers it checks that its validity (from the last keepalive that succeeded) has not ended and
// that the returned key still exists with its lease, reading the key's create revision as the
// fencing token. Without it (lease_check=off, and the known-bad bad-etcd-lock-no-lease-check) it is
// the bare client the API documents ("a unique key that exists so long as the lock is held"): no
// keepalive while waiting and the reply trusted as it is, the header's revision as the token. etcd
// 3.4.23 then hands it a lock whose lease expired while it waited (etcd-io/etcd#11456; the
// simulator and Debian's server both do: scenario lease-expires-while-queued).
// Release, extend and is_valid: EtcdLeaseLock's.
#include <cstdint>
#include <string>

#include "services/etcd/adapter/etcd_lease_lock.h"

namespace lockstep {

struct EtcdLockRpcOptions {
  bool lease_check = true;
  int64_t lock_wait_ms = 30'000;  // how long one acquire waits in the server's queue, at most
};

class EtcdLockAdapter final : public EtcdLeaseLock {
 public:
  EtcdLockAdapter(EtcdLockOptions options, EtcdLockRpcOptions rpc)
      : EtcdLeaseLock(std::move(options)), rpc_(rpc) {}

  std::string_view name() const override {
    return rpc_.lease_check ? "etcd-lock" : "etcd-lock (lease_check=off)";
  }
  bool is_whole_library() const override { return true; }
  AdapterResult create_lock(const LockSpec& spec) override;

 private:
  EtcdLockRpcOptions rpc_;
};

}  // namespace lockstep
