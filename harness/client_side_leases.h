#pragma once
// Lease facts derived from the clients, for servers that report none (a real redis-server).
//
// Only what the clients' own observations prove is recorded, erring towards "no violation":
// - a grant starts when its acquire completed and ends at most TTL after the acquire was sent
//   (the server granted it somewhere in between, so the true lease covers at least that much);
// - a release ends the releaser's lease when it is sent (the lease is over by then at the latest);
// - a release or extend that succeeded acted on the lease of the last grant completed before it
//   was sent. If that grant went to another client, the operation provably removed or lengthened
//   someone else's lock: it is recorded against that owner, and the ownership checker reports it.
//   A grant of the very lock released or extended counts even when it completed at the same
//   instant as the call was sent (a simulated store reached without latency: the lock cannot be
//   released before it was granted), and so does any grant of this lock later than another's.
// Thread-safe: clients of the real world call it from their own threads.
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "adapters/core/locker.h"
#include "harness/recorder.h"

namespace lockstep {

class ClientSideLeases {
 public:
  explicit ClientSideLeases(Recorder& recorder) : recorder_(recorder) {}

  void acquired(int client, const Lock& lock, TimeUs invoked_us);
  void release_sent(int client, const Lock& lock);
  void released(int client, const Lock& lock, TimeUs invoked_us);
  void extended(int client, const Lock& lock, int64_t ttl_ms, TimeUs invoked_us);

 private:
  struct Grant {
    int client = -1;
    std::string value;
    TimeUs completed_us = 0;
  };
  // The last grant on key completed before t_us, or at t_us if it is `value`'s, or nullptr.
  // Must hold mutex_.
  const Grant* last_grant_before(const std::string& key, TimeUs t_us,
                                 const std::string& value) const;

  Recorder& recorder_;
  std::mutex mutex_;
  std::map<std::string, std::vector<Grant>> grants_;
};

}  // namespace lockstep
