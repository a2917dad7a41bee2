// A user's owner:deadline Redis lock (examples/own-adapter/my_deadline_lock.cc), registered the way
// a user registers it (tests/user_keyed_main.cc): its lease lives in the value it writes, with no
// TTL on the key, and it declares so (server_expiry = client_value). Such a lock is judged, not an
// error: the correct variant passes the sweep and every matrix cell its traits allow; the variant
// that takes over a live lock is a shrunk counterexample that replays.

#include <string>

#include <catch2/catch.hpp>

#define LOCKSTEP_BINARY USER_KEYED_BINARY
#include "tests/cli_support.h"

namespace lockstep {
namespace {

using testing::CommandResult;
using testing::run_lockstep;

TEST_CASE("a user's owner:deadline lock is judged, and its correct variant passes the sweep",
          "[user-deadline]") {
  const CommandResult sweep = run_lockstep("sweep --adapter my-deadline --seeds 1000");
  INFO(sweep.out << sweep.err);
  CHECK(sweep.exit_code == 0);
  CHECK(sweep.err.find("recorded no lease") == std::string::npos);
  // Seed 1154: c1's clock runs 22% slow, so the deadline it writes ends early by c0's clock and c0
  // takes the key over; c1's reply, held up by a pause, lets it in 9 ms later, and a second pause
  // keeps it inside 2.6 s. The drift began the overlap, the pause prolonged it: excused together.
  // Before, the overlap was measured until c0 left (6.9 s, though c1 left first) and the entrant's
  // pause counted for nothing.
  const CommandResult seed_1154 =
      run_lockstep("sweep --adapter my-deadline --first-seed 1154 --seeds 1");
  INFO(seed_1154.out << seed_1154.err);
  CHECK(seed_1154.exit_code == 0);
}

// The seeds of 20,000 where the correct lock was judged wrong, each a chain of takeovers by clients
// whose wall clocks drift beyond what any wall-deadline lock survives: an extend after a clash kept
// the double grant going past what the clash measured (4868, 9700, 12603, 14088, 14195, 14699,
// 19436); a taker wrote over the record of a holder other than the earliest one the lease checker
// names, and whoever entered after the taker let go entered on that excused erasure (11588, 13719,
// 16072); the taker and the client it overwrote were inside together (4196).
TEST_CASE("takeovers by drifting wall clocks excuse what follows from them, and only that",
          "[user-deadline]") {
  for (const int seed :
       {4196, 4868, 9700, 11588, 12603, 13719, 14088, 14195, 14699, 16072, 19436}) {
    const CommandResult run = run_lockstep(
        "sweep --adapter my-deadline --shrink 0 --seeds 1 --first-seed " + std::to_string(seed));
    INFO("seed " << seed << "\n" << run.out << run.err);
    CHECK(run.exit_code == 0);
    CHECK(run.out.find("excused by their faults: none") == std::string::npos);
  }
}

TEST_CASE("a user's owner:deadline lock gives only the matrix results its traits allow",
          "[user-deadline]") {
  const CommandResult matrix = run_lockstep("matrix --adapter my-deadline");
  INFO(matrix.out << matrix.err);
  CHECK(matrix.exit_code == 0);
}

TEST_CASE("an owner:deadline lock that takes over a live lock is caught by sweep and replays",
          "[user-deadline]") {
  testing::sweep_catches_and_replays("my-deadline-buggy", "lease_exclusion", "user_keyed_lockstep");
}

TEST_CASE("a run of the owner:deadline lock records its leases from the values it writes",
          "[user-deadline]") {
  const CommandResult run = run_lockstep("run sequential --adapter my-deadline --json");
  INFO(run.out << run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("no_leases") == std::string::npos);
}

}  // namespace
}  // namespace lockstep
