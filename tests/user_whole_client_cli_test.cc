// A user's whole Redis lock client (examples/own-adapter/my_whole_client.cc), registered the way a
// user registers it (tests/user_keyed_main.cc): its acquire is its own retry loop and its validity
// its own arithmetic (LockAdapter::retries_itself), so lockstep's Locker calls it once per acquire
// and the sweep judges the client's loop, not the Locker's; it renews its locks on a watchdog of
// its own (LockAdapter::renews_itself). The correct client passes the sweep; the one that takes a
// timed-out SET for lost is caught on the validity it computes, and the one whose watchdog counts
// an unanswered renewal as applied by the scenario made for it.

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

// Seed 55405: a SET granted after the holder's pause was over by the client's count; its give-back
// timed out in a stall and ran later, after the loop's next SET of the same value had taken the
// key again, deleting it under its holder. A give-back without an answer now ends the loop.
TEST_CASE("a whole client stops retrying once a give-back goes unanswered", "[user-whole-client]") {
  const CommandResult sweep =
      run_lockstep("sweep --adapter my-whole-client --first-seed 55405 --seeds 1");
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

TEST_CASE("a whole client's own renewal watchdog is what auto-extension runs, and is judged",
          "[user-whole-client]") {
  // The client renews its locks itself (LockAdapter::renews_itself): the Locker hands it the
  // auto-extension, and the holder goes by the validity the client reports. A watchdog that keeps
  // the last answered renewal's validity stops in time; one that counts an unanswered renewal as
  // applied works on past a lease nobody renewed while B holds it.
  const testing::TempDir dir("whole-client-renewal");
  const CommandResult correct = run_lockstep(
      "run unanswered-renewal --adapter my-whole-client --json --report " + dir.path.string());
  INFO(correct.out << correct.err);
  CHECK(correct.exit_code == 0);
  std::ifstream trace(dir.path / "unanswered-renewal.my-whole-client.seed1.fencing-on.trace");
  const std::string text((std::istreambuf_iterator<char>(trace)), std::istreambuf_iterator<char>());
  CHECK(text.find("(renew resource) spawn") != std::string::npos);  // the client's own watchdog
  const CommandResult hopeful =
      run_lockstep("run unanswered-renewal --adapter my-whole-client-hopeful --json");
  INFO(hopeful.out << hopeful.err);
  CHECK(hopeful.exit_code == 1);
  CHECK(hopeful.out.find("\"invariant\": \"mutual_exclusion\"") != std::string::npos);
}

}  // namespace
}  // namespace lockstep
