// connection-reset: A's connections are reset while it holds the lock and works (a NAT or load
// balancer that forgot the flow, a firewall, a server-side kill all send RSTs). A lease with its
// own expiry outlives its holder's connection: the client reconnects, and B waits for A's release
// or the TTL. A session lock does not: the server ends the session, and its locks with it, when
// the RST reaches it, while A learns only at its next statement (outside a session lock's
// envelope). The simulator resets the client's connections in its seams; the real world through
// the client's TCP proxy, which closes both ends with a RST.
#include <fmt/format.h>

#include "scenarios/catalogue.h"

namespace lockstep {

Scenario connection_reset_scenario() {
  return {
      .name = "connection-reset",
      .description =
          "A holds and works (600 of its TTL 1000); at 200 A's connections are reset; B asks "
          "from 250 on. A lease with its own expiry is untouched (B waits); a session lock loses "
          "its session and B gets in while A works on, unaware",
      .options = {int_option("ttl_ms", 1000, "lock TTL", 1),
                  int_option("hold_ms", 600, "A's work inside the lock"),
                  int_option("reset_at_ms", 200, "when A's connections are reset"),
                  int_option("b_hold_ms", 100, "B's work inside the lock"), retry_delay_option(20),
                  retry_times_option(50)},
      .fits =
          [](const AdapterTraits& lock) {
            return is_networked_lease(lock) && lock.sim_faults.connection_resets;
          },
      .fits_text = "a lease lock across a network whose connections can be reset",
      .expected =
          [](const AdapterTraits& lock, const Options& options, bool fencing_on) {
            const bool resets_end_it = lasts_with_session(lock) && !lock.envelope.connection_resets;
            if (!resets_end_it) return Expectation{};
            if (options.get_int("reset_at_ms") >= options.get_int("hold_ms")) return Expectation{};
            // As session-killed: the validity A was told outlives the lease the reset ended.
            Expectation e = overlap_expectation(lock, fencing_on);
            e.insert(Invariant::validity_within_lease);
            return e;
          },
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            return holder_struck_spec(o, o.get_int("reset_at_ms"), SpecAction::reset_connections,
                                      FaultKind::reset, "a's connections are reset");
          },
  };
}

}  // namespace lockstep
