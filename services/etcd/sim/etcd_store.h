#pragma once
// The state a simulated etcd member keeps and Raft replicates: the MVCC keyspace (one revision
// per write, each key's create_revision, mod_revision and version), the event history watches read
// from, and the leases (their TTL and attached keys; when they expire is the lessor's business,
// etcd_lessor.h). Every member applies the same committed requests in the same order, so their
// stores stay equal; nothing here reads a clock or a random source.
//
// Requests are the gateway's JSON bodies, answered as etcd 3.4.23 answers them (held to the real
// server by tests/etcd_differential_test.cc): a refusal is {"error", "message", "code"} with the
// gateway's HTTP status. What is modelled: put (prev_kv, lease), range (range_end, limit,
// sort_order/target, max/min create and mod revisions, keys_only, count_only; only the current
// revision: a past `revision` is refused as unsupported, a future one as etcd does), deleterange
// (prev_kv), txn (compares on VERSION, CREATE, MOD, VALUE, LEASE with the four results and
// range_end; put/range/delete_range ops; the duplicate-key rule), lease grant (ID, the minimum
// and maximum TTL), revoke, attach and detach. A write that changes nothing (a delete of nothing,
// a txn of reads) keeps the revision.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "services/etcd/client/etcd_connection.h"

namespace lockstep::sim::etcd {

struct Kv {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
};

struct Event {
  bool deleted = false;  // a DELETE event: kv holds the key and the deleting revision
  Kv kv;
  Kv prev;  // what the key held before (valid when had_prev)
  bool had_prev = false;
};

// One revision's events, as a watch delivers them.
struct Revision {
  int64_t revision = 0;
  std::vector<Event> events;
};

struct LeaseRecord {
  int64_t ttl_s = 0;
  std::set<std::string> keys;
};

// What an applied write did, for whoever watches lease facts (etcd_cluster.h's observer).
struct Applied {
  int http_status = 200;
  EtcdJson body;              // the reply, without its header
  std::vector<Event> events;  // the keys it created, changed or deleted
  int64_t granted_lease = 0;  // a lease grant: the lease
  int64_t revoked_lease = 0;  // a lease revoke: the lease
};

// A refusal as the gateway writes it.
Applied refusal(int grpc_code, const std::string& text);
// The gateway's HTTP status for a gRPC code (grpc-gateway's HTTPStatusFromCode, etcd 3.4's).
int http_status_for(int grpc_code);

inline constexpr int64_t kMaxLeaseTtlS = 9'000'000'000;  // etcd's lease.MaxLeaseTTL

class EtcdStore {
 public:
  explicit EtcdStore(int64_t min_lease_ttl_s) : min_lease_ttl_s_(min_lease_ttl_s) {}

  int64_t revision() const { return revision_; }

  // Checks a write before it is proposed, as etcd's gRPC layer does before Raft: a key given,
  // no key written twice in one txn. nullopt: fine.
  static std::optional<Applied> validate(const std::string& path, const EtcdJson& request);

  // Applies a committed write. lease_id is the ID a lease grant proposes (chosen by the member
  // that received it, when the request gives none).
  Applied apply(const std::string& path, const EtcdJson& request, int64_t lease_id);
  // Serves a read (/v3/kv/range) at the current revision; the reply without its header.
  Applied range(const EtcdJson& request) const;
  // A read-only txn, served like a range.
  Applied read_txn(const EtcdJson& request) const;
  // A txn has writes (in either branch).
  static bool txn_writes(const EtcdJson& request);

  // The keys and leases as they are now.
  const std::map<std::string, Kv>& keys() const { return keys_; }
  const std::map<int64_t, LeaseRecord>& leases() const { return leases_; }
  const LeaseRecord* lease(int64_t id) const;
  // Every revision's events from `from` on (from <= current + 1), for a watch's catch-up.
  std::vector<Event> events_since(int64_t from, const std::string& key,
                                  const std::string& range_end) const;
  // Whether a key is in [key, range_end) as etcd reads a range ("" end: the key alone; "\0":
  // every key from it on).
  static bool in_range(const std::string& k, const std::string& key, const std::string& range_end);

 private:
  struct Txn;  // the write in progress: its revision and events
  Applied put(Txn& txn, const EtcdJson& request);
  Applied delete_range(Txn& txn, const EtcdJson& request);
  Applied do_txn(Txn& txn, const EtcdJson& request);
  Applied grant(const EtcdJson& request, int64_t lease_id);
  Applied revoke(Txn& txn, int64_t lease_id);
  bool compare(const EtcdJson& compare) const;
  void finish(Txn& txn, Applied& applied);
  void detach(const Kv& kv);

  int64_t min_lease_ttl_s_;
  int64_t revision_ = 1;  // a fresh etcd starts at revision 1
  std::map<std::string, Kv> keys_;
  std::map<int64_t, LeaseRecord> leases_;
  std::vector<Revision> history_;  // every write revision's events, in order
};

// A kv as the gateway writes it (integers as strings, defaults omitted).
EtcdJson kv_json(const Kv& kv, bool keys_only = false);

}  // namespace lockstep::sim::etcd
