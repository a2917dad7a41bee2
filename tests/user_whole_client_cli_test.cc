// A user's whole Redis lock client (examples/own-adapter/my_whole_client.cc), registered the way a
// user registers it (tests/user_keyed_main.cc): its acquire is its own retry loop and its validity
// its own arithmetic (LockAdapter::retries_itself), so lockstep's Locker calls it once per acquire
// and the sweep judges the client's loop, not the Locker's. The correct client passes the sweep;
// the one that takes a timed-out SET for lost is caught on the validity it computes.

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <catch2/catch.hpp>

#define LOCKSTEP_BINARY USER_KEYED_BINARY
#include "tests/cli_support.h"

namespace lockstep {
namespace {

using testing::CommandResult;
using testing::run_lockstep;

TEST_CASE("a whole client's own retry loop passes the sweep when it counts a timed-out SET",
          "[user-whole-client]") {
  const CommandResult sweep = run_lockstep("sweep --adapter my-whole-client --seeds 1000");
  INFO(sweep.out << sweep.err);
  CHECK(sweep.exit_code == 0);
}

TEST_CASE("a whole client that takes a timed-out SET for lost is caught by sweep and replays",
          "[user-whole-client]") {
  testing::sweep_catches_and_replays("my-whole-client-buggy", "validity_within_lease",
                                     "user_keyed_lockstep");
}

TEST_CASE("a whole client's acquire is one call: the Locker does not retry it",
          "[user-whole-client]") {
  // retry-storm gives every client the Locker's retry settings; a whole client keeps its own, so
  // every acquire in the history is one call of the client's (attempts=1), granted or not.
  const testing::TempDir dir("whole-client");
  const CommandResult run =
      run_lockstep("run retry-storm --adapter my-whole-client --report " + dir.path.string());
  INFO(run.out << run.err);
  CHECK(run.exit_code == 0);
  const std::filesystem::path history =
      dir.path / "retry-storm.my-whole-client.seed1.fencing-on.history.jsonl";
  REQUIRE(std::filesystem::exists(history));
  std::ifstream in(history);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("attempts=1") != std::string::npos);
  CHECK(text.find("attempts=2") == std::string::npos);
}

}  // namespace
}  // namespace lockstep
