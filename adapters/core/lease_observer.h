#pragma once
// LeaseObserver: how a backend that lives in-process (the in-memory store) tells the harness what
// it granted and revoked, so checkers can judge lease_exclusion and ownership from the server's
// side. Simulated servers record the same facts themselves. Production code passes none.
#include <cstdint>
#include <string_view>

namespace lockstep {

enum class RevokeCause { release, overwrite };

class LeaseObserver {
 public:
  virtual ~LeaseObserver() = default;
  // A lease on key for owner value, promised for ttl_us from now.
  virtual void on_grant(std::string_view server, std::string_view key, std::string_view value,
                        int64_t ttl_us, uint64_t fencing_token) = 0;
  // The owner value's lease on key now runs ttl_us from now.
  virtual void on_extend(std::string_view server, std::string_view key, std::string_view value,
                         int64_t ttl_us) = 0;
  // The lease of owner value on key was removed before it expired.
  virtual void on_revoke(std::string_view server, std::string_view key, std::string_view value,
                         RevokeCause cause) = 0;
};

}  // namespace lockstep
