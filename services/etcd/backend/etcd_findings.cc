// The etcd locks' documented findings: seed 1 of the default matrix, fencing on (docs/adapters.md,
// "etcd", has the replay lines). Declared here so `matrix` charts them as findings; an etcd or an
// adapter that changes one shows as a difference again.
#include "services/etcd/backend/etcd_backend.h"

namespace lockstep {

namespace {

// etcd keeps a lease longer than the TTL asked: whole seconds rounded up, at least
// ceil(1.5 election timeouts) (1 s here), and an expired lease goes only at the leader's next
// lessor tick (every 500 ms). So a dead or paused holder's lock comes free up to ~1.5 s after its
// TTL: a later client waits past the liveness bound, and a holder paused past its TTL (but not
// its lease) keeps the lock.
void add_lease_granularity(std::vector<Finding>& out, bool extends) {
  const std::string longer =
      "etcd's leases are whole seconds (at least 1 s) and expire on a 500 ms lessor tick: ";
  for (const WorldKind world : {WorldKind::sim, WorldKind::real}) {
    out.push_back({.scenario = "crash-holder",
                   .world = world,
                   .violated = {Invariant::liveness},
                   .summary = longer + "the lock comes free up to 1.5 s after its TTL"});
    // The simulator kills A once a server granted its lease (crash-in-acquire watches for the
    // grant), so its dead holder's lease runs out as crash-holder's does.
    if (world == WorldKind::sim) {
      out.push_back({.scenario = "crash-in-acquire",
                     .world = world,
                     .violated = {Invariant::liveness},
                     .summary = longer + "the dead A's lock comes free up to 1.5 s after its TTL"});
    }
    out.push_back(
        {.scenario = "stolen-lock",
         .world = world,
         .violated = {},
         .summary = longer + "A's 500 ms lock lasts 1 s, so its 800 ms pause loses nothing"});
    if (!extends) continue;
    // A's lease still lives when A asks to extend, so B never got the key before: the premise
    // did not happen, and B waited past the bound. In the real world the runner derives leases
    // from the clients' TTLs, so A's extend, which etcd grants, also looks late.
    Expectation violated = {Invariant::liveness};
    if (world == WorldKind::real) violated.insert(Invariant::valid_on_return);
    out.push_back({.scenario = "extend-after-expiry",
                   .world = world,
                   .violated = violated,
                   .end = RunEnd::vacuous,
                   .summary = longer + "A's lease outlives its TTL, B gets the key only after A's "
                                       "extend (the premise cannot happen)"});
  }
}

}  // namespace

std::vector<Finding> etcd_findings(EtcdLockKind kind) {
  std::vector<Finding> out;
  if (kind == EtcdLockKind::smallest_key) {
    // The known-bad recipe: the servers never grant twice (the lease facts follow the first
    // created key); only the client believes a key that sorts first holds.
    out.push_back({.scenario = "concurrent-race",
                   .violated = {Invariant::mutual_exclusion},
                   .summary = "the later key sorts first, so B holds beside A by its own count: "
                              "mutual_exclusion without a double grant (no lease_exclusion)"});
    return out;
  }
  add_lease_granularity(out, kind != EtcdLockKind::library);
  if (kind == EtcdLockKind::recipe) {
    out.push_back({.scenario = "clock-drift",
                   .violated = {Invariant::lease_exclusion},
                   .summary = "the fast leader revokes A's lease on its lessor tick at 900.7 ms "
                              "true time, B's watch hears it and enters 1.5 ms after A's work "
                              "ended: the double lease, not yet the overlap"});
  }
  if (kind == EtcdLockKind::lock_rpc) {
    // With --set lease_check=off, in both worlds (Debian's etcd 3.4.23 and the simulator alike):
    // the Lock RPC answers a waiter whose lease expired in the queue that it holds the lock. With
    // lease_check=on (the default) the adapter's own check refuses that answer.
    for (const WorldKind world : {WorldKind::sim, WorldKind::real}) {
      out.push_back({.scenario = "lease-expires-while-queued",
                     .world = world,
                     .violated = {Invariant::valid_on_return},
                     .summary = "etcd 3.4's Lock RPC returns a key whose lease expired while it "
                                "waited in the queue, without checking it (etcd-io/etcd#11456)"});
    }
  }
  return out;
}

}  // namespace lockstep
