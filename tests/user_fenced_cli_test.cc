// A user's Redis lock with fencing tokens from a counter of its own naming
// (examples/own-adapter/my_fenced_lock.cc), registered the way a user registers it
// (tests/user_keyed_main.cc). Its tokens are judged against the order in which the simulated
// server granted the leases, whatever its keys are called: the lock that draws each token with
// its grant passes, the one that draws it before trying the lock is caught on fencing.

#include <string>

#include <catch2/catch.hpp>

#define LOCKSTEP_BINARY USER_KEYED_BINARY
#include "tests/cli_support.h"

namespace lockstep {
namespace {

using testing::CommandResult;
using testing::run_lockstep;

TEST_CASE("a lock whose token counter has a name of its own passes the sweep", "[user-fenced]") {
  const CommandResult sweep = run_lockstep("sweep --adapter my-fenced --seeds 1000");
  INFO(sweep.out << sweep.err);
  CHECK(sweep.exit_code == 0);
}

TEST_CASE("a lock that draws its token before trying the lock is caught on fencing and replays",
          "[user-fenced]") {
  testing::sweep_catches_and_replays("my-fenced-buggy", "fencing", "user_keyed_lockstep");
}

}  // namespace
}  // namespace lockstep
