#pragma once
// The lease facts of a real PostgreSQL, as the harness that runs it knows them.
//
// A real server reports nothing, and a lease derived from the clients' TTL (ClientSideLeases)
// would be wrong for a lock without expiry: it ends with its session, often long before a TTL.
// What the backend knows: a grant when an acquire returns held (its lease promised "until
// revoked", given the run's bound as ttl_us); a revoke when a release is sent (the lease is over
// by the time it is served at the latest), when the backend itself ends sessions (an
// administrator's pg_terminate_backend, a client's death, a server crash), and when the client
// finds that its session was lost (a failed or timed-out statement closes it). Each revoke is
// recorded no later than the server ended the lease, except the last kind, which is recorded when
// the client found out, so it can only make a lease look longer than it was (a violation that
// would not be there, never one hidden).
//
// Thread-safe: each real client calls its adapter from its own thread, faults from another.
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "harness/recorder.h"
#include "lockstep/adapter.h"
#include "services/postgres/adapter/advisory_adapter.h"

namespace lockstep {

class RealPgLeases {
 public:
  explicit RealPgLeases(Recorder& recorder) : recorder_(recorder) {}
  void granted(int client, const LockSpec& spec, uint64_t token, bool has_token);
  // Ends the lease of spec (client's own operation, or requester -1 for the server).
  void revoked(int client, const LockSpec& spec, int requester, const std::string& cause);
  // Ends every lease client holds.
  void revoke_all_of(int client, const std::string& cause);
  void revoke_all(const std::string& cause);
  // The leases of client its adapter no longer believes held end now.
  void reconcile(int client, const AdvisoryAdapter& adapter);

 private:
  void revoke_locked(int client, const std::string& key, const std::string& value, int requester,
                     const std::string& cause);

  Recorder& recorder_;
  std::mutex mutex_;
  std::map<int, std::map<std::string, std::string>> held_;  // client -> key -> value
};

// The adapter a real client uses, reporting its grants and releases to `leases`.
std::unique_ptr<LockAdapter> recording_adapter(std::unique_ptr<AdvisoryAdapter> inner,
                                               RealPgLeases& leases, int client);
// The same for a session lock library's adapter (an npm one's driver): it reports no lost
// session, so its leases end as it releases and as the backend ends its sessions; it has no TTL,
// so its validity is validity_us from the call.
std::unique_ptr<LockAdapter> library_recording_adapter(std::unique_ptr<LockAdapter> inner,
                                                       RealPgLeases& leases, int client,
                                                       int64_t validity_us);

}  // namespace lockstep
