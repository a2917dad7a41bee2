// A lease that lasts as long as its holder's session (a PostgreSQL advisory lock): the server ends
// the session under a holder that works on, and the holder does not know until it next asks.
#include <fmt/format.h>

#include "scenarios/catalogue.h"

namespace lockstep {

Scenario session_killed_scenario() {
  return {
      .name = "session-killed",
      .description =
          "A holds and works (600 of its TTL 1000); at 200 the server ends A's session "
          "(pg_terminate_backend), which releases its lock; B gets it at once while A works on, "
          "unaware: mutual_exclusion; with monotonic fencing tokens the resource refuses A's "
          "stale write",
      .options = {int_option("ttl_ms", 1000, "lock TTL", 1),
                  int_option("hold_ms", 600, "A's work inside the lock"),
                  int_option("kill_at_ms", 200, "when the server ends A's session"),
                  int_option("b_hold_ms", 100, "B's work inside the lock"), retry_delay_option(20),
                  retry_times_option(50)},
      .fits = lasts_with_session,
      .fits_text = "a lease lock that lasts as long as its holder's session",
      .expected =
          [](const AdapterTraits& lock, const Options& options, bool fencing_on) {
            // A still works after its session ended, and B, coming after the end, gets in.
            if (options.get_int("kill_at_ms") >= options.get_int("hold_ms")) return Expectation{};
            // The server ends A's lease with the session while A relies on the validity it was
            // told: that validity outlived the lease.
            Expectation e = overlap_expectation(lock, fencing_on);
            e.insert(Invariant::validity_within_lease);
            return e;
          },
      // A's release fails: the session and its lock are gone.
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            return holder_struck_spec(o, o.get_int("kill_at_ms"), SpecAction::end_session,
                                      FaultKind::session_end,
                                      "the server ends a's session (pg_terminate_backend)");
          },
  };
}

}  // namespace lockstep
