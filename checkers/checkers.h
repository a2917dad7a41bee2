#pragma once
// The invariant checkers. Each reads only the History and reports violations; none has side
// effects. Definitions (docs/DESIGN.md), made exact:
//
// mutual_exclusion  Per key, a client is inside from its cs_enter to its cs_exit (or the end of the
//                   run). Two clients inside at once, unless both are shared, is a violation,
//                   reported at the later entry. Stays that only touch are not: the one inside
//                   had been told its validity ends no later than the instant the other
//                   entered, and left at that instant with no access of the key after the entry
//                   (which of two clients' events at one instant comes first is the
//                   simulator's order, and its claim had ended).
// lease_exclusion   A grant promises owner `value` a lease on key for ttl_us of true time from the
//                   grant; extend moves its end to ttl_us after the extend; a revoke ends it. A
//                   server that loses state (crash, failover) or whose clock runs fast still owes
//                   the promise. Violated when two owners each hold at least meta.quorum servers'
//                   live leases on a key at the same time.
// ownership         A revoke or extend requested by a client other than the lease's owner (the
//                   client the grant went to) is a violation.
// fencing           If meta.monotonic_tokens: the tokens clients received on a key strictly
//                   increase in the order the servers granted the leases: of two successful
//                   acquires, the one granted later has the larger token. When the grant is a
//                   lease fact the servers recorded (linked as lease_links.h says, whatever the
//                   lock's keys and values), its true time orders it; otherwise (leases derived
//                   from clients) only [invocation, completion] bounds it, and two acquires are
//                   ordered only when one's interval ends before the other's begins. Never the
//                   order in which replies arrived. If
//                   meta.fencing_on: an access the resource served (outcome ok) never carries a
//                   token lower than the highest it had seen for that key.
// no_lost_update    The final counter equals the number of writes the resource accepted; the
//                   violation points at the first accepted write that did not raise the counter.
// liveness          Every stuck event is a violation, bound or none: a client whose program had
//                   not finished when the run ended, with nothing left to wake it (the simulator's
//                   runner records one per such client, never for one a fault killed, never at a
//                   bound), reported at the end with the operation and key it waited in. And if
//                   meta.liveness_bound_us > 0: every acquire waits at most the bound after
//                   max(invocation, meta.heal_us): one that fails, or is still pending at the end,
//                   or succeeds later than that, is a violation, and so is one that ends in an
//                   error (not a refusal) at or after meta.heal_us, however soon (a stuck client's
//                   pending acquire is reported once, as stuck).
// fifo              If meta.keyed: no exclusive acquire on a key succeeds while an acquire (of any
//                   mode) invoked earlier on that key is still pending: writers never pass anyone,
//                   so exclusives (and FIFO-lock callers) are served in request order.
// writer_preference If meta.keyed: no shared acquire on a key succeeds while an exclusive acquire
//                   invoked earlier on that key is still pending: readers never pass a queued
//                   writer.
// no_leak           If meta.keyed: whenever a key has no client waiting for it or holding it (an
//                   acquire pending, or one that succeeded and whose release has not completed),
//                   the lock's latest key_state for it says 0 entries; judged when the last one
//                   leaves and at the end of the run.
// valid_on_return   An acquire or extend never reports success for a lease whose validity has
//                   already ended: (a) by the client's own monotonic clock, the validity end the
//                   lock reported (local_valid_until_us, unless validity_assumed: a library that
//                   reports none) is after its reading as the call returned (local_now_us);
//                   (b) by the servers (under the completion's key, else under whatever key
//                   the lock stored its value): where they recorded leases for the
//                   returned lease's value, at least meta.quorum of them are live (granted or
//                   extended, neither ended nor revoked) at the true time the call returned.
// validity_within_lease The validity a lock reports to its caller ends no later than the leases
//                   that back it: a successful acquire or extend that reported a validity ending
//                   at true time V (end_us of its completion) is backed by the servers' lease
//                   facts linked to it (lease_links.h); at least meta.quorum of those leases stay
//                   held (not expired by their promised ttl_us, not revoked; later extends count)
//                   until V, or until the client stopped relying on it (its cs_exit, its release,
//                   its next successful acquire or extend of the key), whichever is earlier.
//                   A background renewal (a `renewal` event: an auto-extension) is such a
//                   claim too, backed by the leases of the claim it renews (the acquire's).
//                   Judged even when no one else enters; not where leases were derived from the
//                   clients (meta.leases_from_clients); not for a call whose quorum of leases was
//                   already gone when it returned (that is valid_on_return).
// error_not_applied If meta.errors_mean_not_applied (the lock follows lockstep's adapter
//                   contract: an error means the operation had no effect; a write that may have
//                   been applied is an unknown outcome): a release that completed with outcome
//                   error removed no lease on meta.quorum servers, and an acquire or extend that
//                   did left no lease behind: meta.quorum servers do not hold a lease it set up
//                   (a grant, an extend) live when the call returned, or when a request delivered
//                   after that set it up. Effects are server facts with the value the client
//                   recorded on the completion, after its invocation: for an extend, up to its
//                   completion; for an acquire or a release, up to the client's next invocation
//                   on the key. Not where leases were derived from the clients. Never excused:
//                   no fault makes an error truthful.
//                   (Each checker is in the file named after its invariant.)
//
// Every checker is O(n log n) in the history length and reports at most per_invariant_max
// violations (the earliest ones).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "history/history.h"
#include "lockstep/invariant.h"

namespace lockstep {

struct Violation {
  Invariant invariant = Invariant::mutual_exclusion;
  TimeUs time_us = 0;
  std::vector<int> clients;  // sorted, distinct
  std::string key;
  std::string detail;          // one sentence for people
  std::vector<size_t> events;  // history indices that show it, ascending
  // What the excuse judge weighs a fault against (excuse.h), where the checker can say: the client
  // that held first and the one that came in on it (-1: not a story of two), when the first one's
  // claim began (its lease's grant, or its acquire), and by how much the violation outran what
  // was promised (an overlap's length, how far a validity outlived its lease). 0: not measured.
  int holder = -1;
  int entrant = -1;
  TimeUs claim_since_us = 0;
  TimeUs excess_us = 0;
  // Set by excuse_violations (excuse.h): the fault event outside the adapter's envelope that
  // explains it, or nothing; `excuse` says which for people ("not excused" when none does).
  std::optional<size_t> excused_by;
  std::string excuse;
  bool excused() const { return excused_by.has_value(); }
};

struct CheckOptions {
  size_t per_invariant_max = 10;
};

std::vector<Violation> check_mutual_exclusion(const History& history,
                                              const CheckOptions& options = {});
std::vector<Violation> check_lease_exclusion(const History& history,
                                             const CheckOptions& options = {});
std::vector<Violation> check_ownership(const History& history, const CheckOptions& options = {});
std::vector<Violation> check_fencing(const History& history, const CheckOptions& options = {});
std::vector<Violation> check_no_lost_update(const History& history,
                                            const CheckOptions& options = {});
std::vector<Violation> check_liveness(const History& history, const CheckOptions& options = {});
std::vector<Violation> check_fifo(const History& history, const CheckOptions& options = {});
std::vector<Violation> check_writer_preference(const History& history,
                                               const CheckOptions& options = {});
std::vector<Violation> check_no_leak(const History& history, const CheckOptions& options = {});
std::vector<Violation> check_valid_on_return(const History& history,
                                             const CheckOptions& options = {});
std::vector<Violation> check_validity_within_lease(const History& history,
                                                   const CheckOptions& options = {});
std::vector<Violation> check_error_not_applied(const History& history,
                                               const CheckOptions& options = {});

// All of the above, in the order of all_invariants(), violations of each sorted by time.
std::vector<Violation> check_all(const History& history, const CheckOptions& options = {});

}  // namespace lockstep
