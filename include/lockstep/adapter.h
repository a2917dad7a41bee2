#pragma once
// LockAdapter: what a backend must do for Locker and Lock (the seed library's ILockAdapter).
//
// An adapter makes exactly one attempt per call; retrying is the Locker's job. Expected failures
// come back as values (AdapterStatus), never as exceptions: contention on create, a lock that is
// gone or owned by someone else on release and extend, a backend that failed, a write whose reply
// never came (it may or may not have taken effect: outcome_unknown). Every operation is
// owner-checked: release and extend act only when the stored value equals spec.value, and extend
// never re-creates a lock that is gone.
#include <cstdint>
#include <string>
#include <string_view>

namespace lockstep {

// Whether the backend can issue fencing tokens that strictly increase per key in grant order.
enum class FencingSupport { monotonic, none };
std::string_view to_string(FencingSupport support);

enum class AdapterStatus {
  ok,             // done
  contended,      // create: the key is held by another owner
  not_owner,      // release/extend/is_valid: the lock is gone or belongs to another owner
  backend_error,  // the backend failed or answered something unexpected; message says what
  // create/extend/release: the request may have reached the backend but its reply never came: it
  // was written whole and then timed out or lost its connection (a reset, an EOF: IoStatus's
  // may_have_applied), or it was applied but not acknowledged as asked (a write concern), or it
  // was answered with an error after part of it applied and the clean-up could not confirm it
  // undone. Never for reads (is_valid), which change nothing; never when nothing was sent whole
  // (refused, a connect that timed out, a failed write): that is backend_error.
  outcome_unknown,
};
std::string_view to_string(AdapterStatus status);

struct AdapterResult {
  AdapterStatus status = AdapterStatus::ok;
  uint64_t fencing_token = 0;  // create: the grant's token when fencing is monotonic, else 0
  // backend_error, outcome_unknown: what went wrong; contended, not_owner: why, when the adapter
  // knows more than the status says (which nodes refused, a hold-time limit), else empty.
  std::string message{};

  bool ok() const { return status == AdapterStatus::ok; }
};

// One lock as the adapter sees it: the resource key, this owner's unique value, the TTL.
struct LockSpec {
  std::string key{};
  std::string value{};
  int64_t ttl_ms = 0;
};

// What a whole client that renews its locks itself says of one it renews (LockAdapter::
// renewal_state).
struct RenewalState {
  // Until when the lock is valid by the client's own count, on the caller's monotonic clock
  // (Clock::monotonic_us). A careful holder works only before then.
  int64_t valid_until_us = 0;
  // Why the client gave the lock up (a renewal refused, its watchdog stopped): "" while it holds
  // it.
  std::string lost_reason{};
};

class LockAdapter {
 public:
  virtual ~LockAdapter() = default;

  virtual std::string_view name() const = 0;
  virtual FencingSupport fencing() const = 0;

  // Creates the lock if the key is free (or its previous lock expired). ok carries the token.
  virtual AdapterResult create_lock(const LockSpec& spec) = 0;
  // Removes the lock if spec.value still owns it.
  virtual AdapterResult release_lock(const LockSpec& spec) = 0;
  // Sets the lock to expire ttl_ms from now if spec.value still owns it.
  virtual AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) = 0;
  // ok when spec.value owns an unexpired lock on spec.key, not_owner otherwise.
  virtual AdapterResult is_valid_lock(const LockSpec& spec) = 0;

  // Whether create_lock's verdict is a whole lock library's own (an ext: driver): then the Locker
  // reports it as the library returned it, without its own check that the grant came within the
  // TTL, so a library that returns a lock already over is seen doing so (valid_on_return).
  virtual bool is_whole_library() const { return false; }
  // Whether create_lock is a whole lock client's acquire, its own retries, waits and validity
  // arithmetic included (a user's client registered whole: README, "Your own lock"): the Locker
  // then calls it once per acquire whatever retry settings it was given, and takes its verdict
  // and validity (validity_end_us, which such a client computes itself) as they are: it is a
  // whole library too, whatever is_whole_library answers.
  virtual bool retries_itself() const { return false; }
  // Optional: when spec.value's lock stops being valid, in microseconds on the caller's monotonic
  // clock (Clock::monotonic_us: a wall-clock jump must not stretch a validity). A careful holder
  // works only before then. requested_at_us is the caller's monotonic time when it sent
  // the create or extend that started the current lease of ttl_ms. The default is the lease as the
  // TTL gives it: a server cannot start it before the request is sent, so this never overstates
  // it (clock faults aside). Adapters that compute a validity of their own (Redlock: TTL minus the
  // time spent acquiring and the clock drift) report that instead.
  virtual int64_t validity_end_us(const LockSpec& spec, int64_t requested_at_us,
                                  int64_t ttl_ms) const {
    (void)spec;
    return requested_at_us + ttl_ms * 1000;
  }
  // Optional: whether validity_end_us for spec.value's current lease is the lock's own word (the
  // default rule above is the one a lock's traits declare, ValidityRule::ttl), or only what a
  // harness assumes for a library that reports no validity at all (a careful holder still works
  // only before it). valid_on_return holds a lock to a validity it reported; one it never reported
  // is judged by the servers' leases alone.
  virtual bool reports_validity(const LockSpec& spec) const {
    (void)spec;
    return true;
  }

  // Optional, for a whole client that renews its locks itself (a watchdog of its own, started on
  // ClientSeams::background): Lock::auto_extend then asks start_renewing(spec, every_ms) instead
  // of running the Locker's extensions, reads the client's own word through renewal_state while
  // it renews (never waiting for a renewal in flight), and calls stop_renewing before the release
  // and when the last copy of the Lock is gone. These three are called outside the Locker's gate,
  // beside the calls of the client's other locks and its watchdog: they must not use the
  // connection, and the client guards the state they share (never across a blocking call). stop_renewing returns once the
  // watchdog's renewals of that lock are over; the watchdog must take turns with its caller on a
  // connection they share (Background::make_gate). What the renewals do is judged like any
  // extend, from the servers' lease facts.
  virtual bool renews_itself() const { return false; }
  virtual AdapterResult start_renewing(const LockSpec& spec, int64_t every_ms) {
    (void)spec;
    (void)every_ms;
    return {.status = AdapterStatus::backend_error, .message = "this client does not renew"};
  }
  virtual RenewalState renewal_state(const LockSpec& spec) const {
    (void)spec;
    return {.lost_reason = "this client does not renew"};
  }
  virtual void stop_renewing(const LockSpec& spec) { (void)spec; }
};

}  // namespace lockstep
