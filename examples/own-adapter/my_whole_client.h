#pragma once
// A user's whole Redis lock client, registered whole: its acquire is its own retry loop (SET NX PX,
// then a wait of 20-60 ms, for up to twice the TTL), the validity it reports is its own
// arithmetic, and it renews its held locks itself, on a watchdog of its own. lockstep's Locker
// calls its acquire once and takes its word (retries_itself()), and hands auto-extension to it
// (renews_itself()), so the loop, the arithmetic and the watchdog are what the sweep judges.
// Written against lockstep's RedisConnection, Clock, Random and Background seams only.
//
// A SET whose reply never came may have taken the lock. The correct client remembers when the
// first such SET was sent: when a later attempt finds the key holding its own value, the lock is
// its own from that SET, and its validity counts from then. Bug::timed_out_set_lost is the bug
// my-whole-client-buggy exists to catch: it treats a timed-out SET as lost, so when it later finds
// its own value it counts the validity from that later attempt, past the lease the server holds
// (validity_within_lease; mutual_exclusion when another client takes the key in between).
// A grant that came after its validity was over by the client's count is given back (a
// compare-and-delete of its value); a give-back without an answer may still run later and would
// delete a later SET of the same value under its holder, so the loop stops there.
//
// A renewal whose reply never came may or may not have moved the lease: the correct watchdog keeps
// the validity the last answered renewal gave (a renewal that lands late only lengthens the lease)
// and tries again at its next round. Bug::unanswered_renewal_taken (my-whole-client-hopeful)
// counts an unanswered renewal as applied, so its holder works on past a lease nobody renewed.
// The watchdog shares the caller's connection, so the two take turns (Background::make_gate).
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/adapter.h"
#include "lockstep/background.h"
#include "lockstep/clock.h"
#include "lockstep/random.h"
#include "lockstep/redis_connection.h"

namespace my_whole_client {

class MyWholeClient final : public lockstep::LockAdapter {
 public:
  enum class Bug { none, timed_out_set_lost, unanswered_renewal_taken };
  MyWholeClient(lockstep::RedisConnection& connection, lockstep::Clock& clock,
                lockstep::Random& random, lockstep::Background& background, Bug bug)
      : connection_(connection),
        clock_(clock),
        random_(random),
        background_(background),
        gate_(background.make_gate()),
        bug_(bug) {}
  ~MyWholeClient() override;

  std::string_view name() const override;
  lockstep::FencingSupport fencing() const override { return lockstep::FencingSupport::none; }
  // The whole client: its own retries, its own validity, its own renewals.
  bool retries_itself() const override { return true; }
  bool renews_itself() const override { return true; }
  lockstep::AdapterResult start_renewing(const lockstep::LockSpec& spec, int64_t every_ms) override;
  lockstep::RenewalState renewal_state(const lockstep::LockSpec& spec) const override;
  void stop_renewing(const lockstep::LockSpec& spec) override;

  lockstep::AdapterResult create_lock(const lockstep::LockSpec& spec) override;
  lockstep::AdapterResult release_lock(const lockstep::LockSpec& spec) override;
  lockstep::AdapterResult extend_lock(const lockstep::LockSpec& spec, int64_t ttl_ms) override;
  lockstep::AdapterResult is_valid_lock(const lockstep::LockSpec& spec) override;
  // After an acquire: the validity this client computed. After an extend: the TTL from its send.
  int64_t validity_end_us(const lockstep::LockSpec& spec, int64_t requested_at_us,
                          int64_t ttl_ms) const override;

 private:
  // One SET NX PX: granted, refused, not known (its reply never came), not sent (the connection
  // failed first: nothing applied), or failed (an answer it cannot read).
  enum class Attempt { granted, refused, unknown, not_sent, failed };
  Attempt try_set(const lockstep::LockSpec& spec, std::string& error);
  // Whether the key holds our value: the answer to a SET whose reply never came.
  std::optional<bool> holds_own_value(const lockstep::LockSpec& spec, std::string& error);
  // One command, in turn with the watchdog (one connection is one byte stream).
  lockstep::RedisResult send(const std::vector<std::string>& argv) {
    lockstep::GatePass pass(gate_.get());
    return connection_.command(argv);
  }
  // What one lock's watchdog and its holder share: the holder reads it while the watchdog runs.
  struct Renewal {
    mutable std::mutex mutex;
    lockstep::RenewalState state;  // guarded by mutex
    std::unique_ptr<lockstep::BackgroundTask> task;
  };
  // The watchdog of spec's lock: renews it for its TTL every every_ms until stopped or refused.
  void renew(Renewal& renewal, const lockstep::LockSpec& spec, int64_t every_ms,
             lockstep::StopWaiter& stop);

  lockstep::RedisConnection& connection_;
  lockstep::Clock& clock_;
  lockstep::Random& random_;
  lockstep::Background& background_;
  std::shared_ptr<lockstep::CallGate> gate_;
  Bug bug_;
  void forget_validity(const std::string& value);
  // Removes value's renewal from renewals_; its watchdog stops when the caller lets it go, outside
  // state_mutex_ (a renewal in flight may take a while).
  std::unique_ptr<Renewal> take_renewal(const std::string& value);

  // Guards the two maps: the Locker calls start_renewing, renewal_state and stop_renewing beside
  // the calls of its other locks (outside its gate). Never held across a command or a join.
  mutable std::mutex state_mutex_;
  // The validity the last acquire of each value computed (monotonic us), until it is extended or
  // released. One entry per lock this client holds.
  std::map<std::string, int64_t> acquired_valid_until_us_;
  // The locks being renewed, by value.
  std::map<std::string, std::unique_ptr<Renewal>> renewals_;
};

// Registers my-whole-client and my-whole-client-buggy (in the simulator and against a real
// redis-server).
void register_my_whole_clients();

}  // namespace my_whole_client
