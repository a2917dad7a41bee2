// client-clock-ahead: a client whose wall clock runs ahead, against a lock whose expiry is decided
// by the clock of the client that takes over (a deadline written with the lock: locco's `new
// Date()`, Mongo's time_source=client) and against one that expires by the server's clock.
#include <fmt/format.h>

#include "scenarios/catalogue.h"

namespace lockstep {

Scenario client_clock_ahead_scenario() {
  return {
      .name = "client-clock-ahead",
      .description =
          "A holds (TTL 10000) and works 5000; B's clock is 15000 ahead: with time_source=client "
          "B's "
          "expiry filter finds A's live lock expired and takes it over; with the server's $$NOW, B "
          "waits",
      .options = {int_option("ttl_ms", 10000, "lock TTL", 1),
                  int_option("hold_ms", 5000, "A's work inside the lock"),
                  int_option("clock_ahead_ms", 15000, "how far B's clock runs ahead of true time"),
                  int_option("b_start_ms", 1000, "when B starts asking"), retry_delay_option(100),
                  retry_times_option(100)},
      .fits = on_a_replica_set,
      .fits_text = "a lease lock on a replica set (servers that elect a primary)",
      .expected =
          [](const AdapterTraits& lock, const Options& options, bool fencing_on) {
            // B's first attempt sees A's expiry (TTL from A's start) as past on its own clock.
            const int64_t b_start_ms = options.get_int("b_start_ms");
            const bool takes_over =
                (lock.server_expiry == ExpiryClock::client_wall ||
                 lock.server_expiry == ExpiryClock::client_value) &&
                b_start_ms + options.get_int("clock_ahead_ms") > options.get_int("ttl_ms") &&
                b_start_ms < options.get_int("hold_ms");
            if (!takes_over) return Expectation{};
            Expectation e{Invariant::mutual_exclusion, Invariant::lease_exclusion};
            // Tokens still follow grant order (B's is larger): fencing refuses A's late write.
            if (!fencing_on) e.insert(Invariant::no_lost_update);
            return e;
          },
      .spec =
          [](const Options& o, const AdapterEntry&, WorldKind) {
            const int64_t ttl_ms = o.get_int("ttl_ms");
            ScenarioSpec spec;
            spec.start(spec.add_client("a"), 0,
                       take_work_release_steps(ttl_ms, o.get_int("hold_ms"), retry_from(o)),
                       kStartJitterUs);
            const int b = spec.add_client("b", o.get_int("clock_ahead_ms") * 1000);
            spec.start(b, o.get_int("b_start_ms"),
                       take_work_release_steps(ttl_ms, 100, retry_from(o)), kStartJitterUs);
            return spec;
          },
  };
}

}  // namespace lockstep
