#pragma once
// Lease facts from a simulated Redis node's keyspace events: what the Redis and Redlock sim
// backends record, so both judge leases the same way, for whatever keys an adapter uses.
//
// A key holds a lease while it has a TTL: a write that leaves a key with a TTL grants a lease to
// the value written (SET ... PX, or PEXPIRE on a key that held no lease: SETNX then PEXPIRE); a
// PEXPIRE on the key's current lease extends it; a DEL, or a write of another value, revokes it
// on behalf of whoever sent the command; an expiry ends nothing (the promise simply ran out).
// Keys without a TTL (fencing counters, data) are no leases. So a user's lock is judged whatever
// its keys are called. The event's server is the node's name, so a checker can count servers per
// owner; the event's key drops the adapter's lock prefix when it has one, so it reads as the
// key the client asked for. A backend with replicas names the replication group (`group`) as the
// server instead, and passes on what its replicas apply from the primary's stream (replicated:
// no event, but the replica's keys are known): so a release or extend on a promoted replica
// closes or lengthens the lease the primary granted, leases following the lock across a failover,
// while a grant the replica never received is simply gone (the next grant overlaps it).
//
// A lock whose lease lives in its value (ExpiryClock::client_value: "OWNER:DEADLINE_MS" written
// without a TTL, harness/value_lease.h) is read from the values instead, once read_values is
// called: a write of such a value grants OWNER a lease (extends it, when OWNER's lease is the
// key's now) that lasts value_ttl_us(writer, deadline) of true time from the write, and the
// key's lease is OWNER's, so a compare-and-delete by its owner revokes it. A takeover over a live
// lease is a grant like any other: the checkers see the overlap from the two grants.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "harness/value_lease.h"
#include "history/history.h"
#include "services/redis/sim/redis_node.h"

namespace lockstep {

class RedisLeaseEvents {
 public:
  // lock_prefix: the adapter's lock key prefix, dropped from the keys recorded ("" for none);
  // hash_tagged: the adapter wraps the key in a hash tag ("{k}", after any prefix), dropped too;
  // group: the server name events carry ("": each node's own name).
  explicit RedisLeaseEvents(std::string lock_prefix, bool hash_tagged = false,
                            std::string group = {})
      : lock_prefix_(std::move(lock_prefix)), hash_tagged_(hash_tagged), group_(std::move(group)) {}

  // The true time from now until the wall clock of `client` (the writer) reads deadline_ms; >= 0.
  using ValueTtlUs = std::function<int64_t(int client, int64_t deadline_ms)>;
  // From now on, values "OWNER:DEADLINE_MS" written without a TTL are leases (see above).
  void read_values(ValueTtlUs value_ttl_us) { value_ttl_us_ = std::move(value_ttl_us); }

  // The history event for e on node_name, or nullopt when it is no lease fact.
  std::optional<HistoryEvent> on_event(std::string_view node_name, const sim::KeyspaceEvent& e);

 private:
  std::string shown_key(const std::string& key) const;
  // The value lease e writes without a TTL, when values are read and e writes one.
  std::optional<ValueLease> value_lease(const sim::KeyspaceEvent& e) const;
  HistoryEvent on_value_lease(std::map<std::string, std::string>& leased, HistoryEvent event,
                              const sim::KeyspaceEvent& e, const ValueLease& lease);

  std::string lock_prefix_;
  bool hash_tagged_;
  std::string group_;
  ValueTtlUs value_ttl_us_;  // empty: leases are keys with a TTL only
  // Per node, per key: the value whose lease the key holds now (ordered: nothing walks it by hash).
  std::map<std::string, std::map<std::string, std::string>, std::less<>> leased_;
};

}  // namespace lockstep
