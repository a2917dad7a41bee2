#pragma once
// Lease facts from a simulated etcd cluster (etcd_cluster.h's observer), as history events.
//
// An etcd lock is held by the key with the lowest create revision under NAME/ (NAME = the
// adapter's key prefix + the lock's key), so the facts follow that, whichever adapter made the
// keys:
// - grant: a key becomes the first under its prefix (created there, or its predecessors gone),
//   for its owner (the client that granted the key's lease, and the unique value of that client's
//   acquire: the key's own value when it is one the client acquired that lock with, as the
//   recipe's are, since a put applied late, after its acquire gave up, belongs to that acquire
//   and not to the client's next; else the value the client was acquiring on that lock when the
//   key was put, for keys that carry none (the Lock RPC's). A client may acquire several locks
//   at once, and a lease names no lock until a key under a lock's prefix is put with it); it
//   promises what is left of the lease's TTL from its last refresh, in true time as the leader
//   meant it, and says when that refresh was (lease_since_us: a leader's clock that ran fast from
//   then on shortened the promise); its token is the key's create revision;
// - extend: the lease of a holding key is refreshed (a keepalive, by its client; a new leader's
//   promotion, by nobody);
// - revoke: a holding key is deleted by a client's request (a delete, a lease revoke, an Unlock),
//   on that client's behalf; a lease the leader's lessor revokes on expiry ends nothing (its
//   promise ran out; a leader whose clock runs fast breaks it, which lease_exclusion judges);
// - and a Lock RPC that answers a client with a key that no longer exists (etcd-io/etcd#11456)
//   is a grant promising nothing (ttl 0): what the server told the client it holds.
// Server name: "etcd", the cluster, whichever member leads.
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "harness/recorder.h"
#include "services/etcd/sim/etcd_cluster.h"

namespace lockstep {

class EtcdLeaseFacts final : public sim::etcd::EtcdObserver {
 public:
  // now_us: true time. key_prefix: the adapters' (dropped from the keys recorded).
  EtcdLeaseFacts(Recorder& recorder, std::function<TimeUs()> now_us, std::string key_prefix)
      : recorder_(recorder), now_us_(std::move(now_us)), key_prefix_(std::move(key_prefix)) {}

  // The unique value `client` is acquiring on lock `resource` now (the lease of the key it puts
  // under that lock's prefix next is that value's).
  void acquiring(int client, const std::string& resource, const std::string& value) {
    acquiring_[{client, resource}] = value;
    acquired_[{client, resource}].insert(value);
  }

  void on_applied(int client, const std::string& path, const EtcdJson& request,
                  const sim::etcd::Applied& applied) override;
  void on_lease_refreshed(int64_t lease, int64_t ttl_us, int client, bool superseded) override;
  void on_lock_returned(int client, const std::string& key, int64_t lease,
                        bool key_exists) override;

 private:
  struct Owner {
    int client = -1;
    std::string value;
    TimeUs promised_since_us = 0;  // its lease's last refresh (or grant), true time
    TimeUs promised_until_us = 0;  // that + the lease's TTL
  };
  struct Entry {
    std::string key;
    int64_t lease = 0;
  };
  // The lock key's resource ("lockstep/k/1a2b" -> "k"), "" for any other key.
  std::string resource_of(const std::string& key) const;
  void record(EventKind kind, int client, const std::string& resource, const Owner& owner,
              int64_t ttl_us, uint64_t token, std::string detail);

  Recorder& recorder_;
  std::function<TimeUs()> now_us_;
  std::string key_prefix_;
  // The value a client is acquiring a lock with: its lease is that value's.
  std::string value_of(int client, const std::string& resource) const;
  // The owner value of a key put by `client` under `resource`'s prefix (see the header).
  std::string value_of_put(int client, const std::string& resource,
                           const std::string& key_value) const;

  std::map<std::pair<int, std::string>, std::string> acquiring_;  // (client, resource) -> value
  // Every value each client acquired each lock with: bounded by the run's acquires.
  std::map<std::pair<int, std::string>, std::set<std::string>> acquired_;
  std::map<int64_t, Owner> owners_;                         // lease -> owner
  std::map<std::string, std::map<int64_t, Entry>> queues_;  // resource -> create rev -> key
};

}  // namespace lockstep
