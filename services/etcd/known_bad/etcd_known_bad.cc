#include "services/etcd/known_bad/etcd_known_bad.h"

#include "harness/known_bad.h"
#include "services/etcd/adapter/etcd_adapter.h"
#include "services/etcd/adapter/etcd_lock_adapter.h"
#include "services/etcd/backend/etcd_backend.h"
#include "services/service.h"

namespace lockstep {

namespace {

// The recipe holding by the smallest key under the prefix instead of the first created. Keys are
// NAME/LEASE_HEX and a lease ID begins with the granting member's ID: a later waiter whose lease
// came from a member with a smaller ID sorts first and takes the lock beside its holder.
std::unique_ptr<Backend> smallest_key_backend(BackendEnv& env) {
  return make_etcd_sim_backend(env, [](EtcdConnection& connection, Clock& clock, const Options&) {
    return std::unique_ptr<LockAdapter>(std::make_unique<EtcdAdapter>(
        EtcdLockOptions{.connection = &connection, .clock = &clock}, EtcdRecipeFlaw::smallest_key));
  });
}

// The Lock RPC trusted as it answers: no keepalive while queued, no check of the key it returns.
std::unique_ptr<Backend> no_lease_check_backend(BackendEnv& env) {
  return make_etcd_sim_backend(env, [](EtcdConnection& connection, Clock& clock,
                                       const Options& options) {
    return std::unique_ptr<LockAdapter>(std::make_unique<EtcdLockAdapter>(
        EtcdLockOptions{.connection = &connection, .clock = &clock},
        EtcdLockRpcOptions{.lease_check = false, .lock_wait_ms = options.get_int("lock_wait_ms")}));
  });
}

}  // namespace

std::vector<AdapterEntry> etcd_known_bad() {
  const AdapterEntry& recipe = production_adapter("etcd");
  const AdapterEntry& lock_rpc = production_adapter("etcd-lock");
  std::vector<AdapterEntry> out = {
      known_bad_entry(
          {"bad-etcd-smallest-key",
           "mutual_exclusion",
           // a later waiter's lease must come from a member with a smaller ID than the holder's.
           0.45,
           "known-bad: the etcd recipe taking the lock by the smallest key under the prefix, not "
           "the smallest create revision (a later key can sort first)",
           [](AdapterTraits& t) { t.exclusive_grant = false; },
           {"concurrent-race"}},
          recipe, smallest_key_backend),
      known_bad_entry(
          {"bad-etcd-lock-no-lease-check",
           "valid_on_return",
           // a waiter must stay queued past its lease's TTL: most seeds with contention on a key.
           0.45,
           "known-bad: etcd's Lock RPC without the lease check after the wait (no keepalive while "
           "queued, the returned key trusted: etcd-io/etcd#11456)",
           [](AdapterTraits& t) { t.queued_grant = QueuedGrant::trusted; },
           {"lease-expires-while-queued"}},
          lock_rpc, no_lease_check_backend),
  };
  out[0].findings = etcd_findings(EtcdLockKind::smallest_key);
  return out;
}

}  // namespace lockstep
