#pragma once
// The history of a run: every client operation's invocation and completion, every critical
// section entered and left, every access to the guarded resource, every lease the servers granted,
// extended or revoked, and every fault, each stamped with true time. Checkers read only this.
//
// Events are appended in true-time order (ties in the order they happened); `index` is the
// position. Client numbers are 0-based; -1 means "no client" (a server event without a requester,
// a fault). trace_line points into the run's trace for excerpts (npos when there is none).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/time.h"
#include "lockstep/fault.h"

namespace lockstep {

enum class EventKind {
  invoke,       // a client began op on key
  complete,     // a client's op ended with outcome (token for a successful acquire)
  cs_enter,     // the client believes it holds key from now (shared: a reader)
  cs_exit,      // the client stops believing it holds key (about to release, saw expiry, died)
  access,       // the guarded resource served or refused op (read/write) carrying token
  grant,        // server granted owner `value` (client) a lease on key for ttl_us
  extend,       // server set the lease of owner `value` to run ttl_us from now; client requested
  revoke,       // server removed the lease of owner `value` before expiry; client requested
  fault,        // a fault happened (detail says what); ends at end_us if it has a duration
  heal,         // every fault has healed: the liveness clock starts
  final_value,  // the guarded resource's counter at the end (counter)
  // an in-process keyed lock now keeps `counter` entries (holders + waiters) for key; 0: freed
  key_state,
  // at the end of a run: `client`'s program had not finished, and nothing was left to wake it (it
  // was parked in op on key, when op is not none). Recorded by the simulator's runner only for a
  // run that ended by running out of events (not at a bound), never for a client a fault killed.
  stuck,
  // a server issued fencing `token` on key to `client` by a step of its own, apart from the grant
  // (Mongo's counter document): tokens are judged in the order the server issued them
  token,
  // `client`'s lock `value` on key was renewed in the background (an auto-extension, or a client
  // that renews its locks itself): valid until end_us of true time from now, by the client's own
  // clock (local_now_us, local_valid_until_us as a successful extend's completion). A renewal has
  // no invocation: it is not a call of the client's program.
  renewal,
};
std::string_view to_string(EventKind kind);
// Every value of each enum, in declaration order: kept beside the enum so a new value is listed
// where it is added (a history reader accepts exactly these).
inline constexpr std::array kEventKindsAll = {
    EventKind::invoke, EventKind::complete, EventKind::cs_enter,    EventKind::cs_exit,
    EventKind::access, EventKind::grant,    EventKind::extend,      EventKind::revoke,
    EventKind::fault,  EventKind::heal,     EventKind::final_value, EventKind::key_state,
    EventKind::stuck,  EventKind::token,    EventKind::renewal};
static_assert(kEventKindsAll.back() == EventKind::renewal, "every EventKind is listed, last last");

enum class Op { none, acquire, release, extend, is_locked, read, write };
std::string_view to_string(Op op);
inline constexpr std::array kOpsAll = {Op::none,      Op::acquire, Op::release, Op::extend,
                                       Op::is_locked, Op::read,    Op::write};

// error: the lock said the operation failed and had no effect; unknown: it said it cannot tell
// whether the operation took effect (a write sent whole whose reply never came). After refused so
// that no earlier value (packed in traces) changes.
enum class Outcome { none, ok, fail, contended, error, refused, unknown };
std::string_view to_string(Outcome outcome);
inline constexpr std::array kOutcomesAll = {Outcome::none,      Outcome::ok,    Outcome::fail,
                                            Outcome::contended, Outcome::error, Outcome::refused,
                                            Outcome::unknown};

struct HistoryEvent {
  size_t index = 0;
  TimeUs time_us = 0;
  EventKind kind = EventKind::invoke;
  int client = -1;
  std::string key;
  Op op = Op::none;
  Outcome outcome = Outcome::none;
  bool has_token = false;
  uint64_t token = 0;
  bool shared = false;  // cs_enter/cs_exit: a shared (reader) hold
  bool kills_client =
      false;           // fault: it killed `client` (whose pending operation then never completes)
  std::string server;  // grant/extend/revoke: which server
  std::string value;   // grant/extend/revoke: the lease owner's unique value
  int64_t ttl_us = 0;  // grant/extend: promised lease length in true time
  // grant: when the lease it rides began its term in true time, where that was before the grant
  // (an etcd key's lease, granted or refreshed while the key waited its turn); 0: at the grant.
  // A server clock that ran fast from then on shortened what the grant promised.
  TimeUs lease_since_us = 0;
  int64_t counter = 0;  // access: the value read or written; final_value: the final count
  // fault: when it ends (== time_us for instant faults); complete of a successful acquire or
  // extend: the true time at which the validity the lock reported ends by the client's own clock
  // (its rate as the call returned), 0 when none was reported
  TimeUs end_us = 0;
  // fault: what it was, and its size in the kind's unit (FaultKind); client and server say whom it
  // struck (-1 / "": every client / every server)
  FaultKind fault = FaultKind::other;
  int64_t amount = 0;
  // complete of a successful acquire or extend: the client's monotonic clock as the call returned,
  // and the validity end the lock reported on it (0: not recorded); `value` is the lease's owner
  int64_t local_now_us = 0;
  int64_t local_valid_until_us = 0;
  // That validity is only what the harness assumed (the TTL from the call) for a library that
  // reports none (LockAdapter::reports_validity): valid_on_return does not hold the lock to it.
  bool validity_assumed = false;
  std::string detail;  // free text for people
  size_t trace_line = static_cast<size_t>(-1);
  // Set by History::add: `key`, `server` and `value` as small numbers, the same for equal strings
  // of one history and dense from 0 in order of first appearance (each kind on its own), so
  // checkers keep per-key state in vectors and look leases up by number, instead of each hashing
  // the strings again.
  uint32_t key_id = 0;
  uint32_t server_id = 0;
  uint32_t value_id = 0;
};

// A lease's identity on one server, (server_id, value_id), as one number.
inline uint64_t server_value_id(const HistoryEvent& e) {
  return (static_cast<uint64_t>(e.server_id) << 32) | e.value_id;
}

// What the checkers need to know about the run as a whole.
struct HistoryMeta {
  int clients = 0;
  int servers = 1;
  int quorum = 1;                 // servers whose leases make a grant (Redlock: N/2+1)
  bool fencing_on = false;        // the resource refuses stale tokens
  bool monotonic_tokens = false;  // the adapter claims strictly increasing tokens per key
  // The lease facts were derived from the clients' operations (real servers report none): they
  // bound when a grant happened by what the client saw, no more precisely.
  bool leases_from_clients = false;
  TimeUs end_us = 0;             // when the run ended
  TimeUs heal_us = 0;            // faults healed by then (0: none)
  TimeUs liveness_bound_us = 0;  // 0: liveness not judged
  bool keyed = false;  // an in-process keyed lock: fifo, writer_preference, no_leak judged
  // The lock follows lockstep's adapter contract, in which an error says the operation had no
  // effect (error_not_applied judges it); a whole library's error claims nothing of the kind.
  bool errors_mean_not_applied = false;
  // The faults the adapter claims to survive: which faults may excuse a violation (excuse.h).
  FaultEnvelope envelope;
};

class History {
 public:
  // Appends e (its index and its ids are set here) and returns the index. An event is 4 cache
  // lines and 4 strings: a recorder hands it over by move, once.
  size_t add(HistoryEvent&& e);
  size_t add(const HistoryEvent& e) { return add(HistoryEvent(e)); }
  const std::vector<HistoryEvent>& events() const { return events_; }
  const HistoryEvent& operator[](size_t i) const { return events_[i]; }
  size_t size() const { return events_.size(); }
  void reserve(size_t n) { events_.reserve(n); }

  HistoryMeta meta;

 private:
  std::vector<HistoryEvent> events_;
  // string -> id, for one of keys, servers and values; looked up only, never walked. Most events
  // have no server or value, and runs of them share a key or a value: the empty string's id and
  // the last other string's are tried first.
  class Ids {
   public:
    uint32_t id_of(const std::string& text);

   private:
    std::unordered_map<std::string, uint32_t> ids_;
    uint32_t empty_id_ = UINT32_MAX;  // none yet
    std::string last_;                // never empty once set
    uint32_t last_id_ = UINT32_MAX;   // none yet
  };
  Ids key_ids_;
  Ids server_ids_;
  Ids value_ids_;
};

// One line per event, for traces and reports: "acquire ok c1 key=k token=3".
std::string describe(const HistoryEvent& e);

}  // namespace lockstep
