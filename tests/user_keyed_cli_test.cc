// A user's keyed locks, registered the way a user registers them (tests/user_keyed_main.cc), held
// to the command line's contract: a lock with an exclusion or ordering bug of its own is a shrunk,
// replayable counterexample of `sweep` (exit 1); its correct variant passes the sweep (exit 0); a
// lock whose call throws, or that grants a request that does not wait, ends as an error of the run
// (exit 4) with one stderr line naming the lock and the call: never 70 or an abort.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#define LOCKSTEP_BINARY USER_KEYED_BINARY
#include "tests/cli_support.h"

namespace lockstep {
namespace {

using testing::CommandResult;
using testing::run_lockstep;
using testing::TempDir;

// Lines of stderr other than the "report: FILE" line a --report writes there.
size_t error_lines(const std::string& text) {
  size_t n = 0;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end == std::string::npos ? end : end - at);
    if (line.rfind("report: ", 0) != 0) ++n;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return n;
}

void caught_and_replayed(const std::string& adapter, const std::string& invariant) {
  testing::sweep_catches_and_replays(adapter, invariant, "user_keyed_lockstep");
}

TEST_CASE("a user's keyed RW lock that forgets a handed-over writer is caught by sweep",
          "[user-keyed]") {
  caught_and_replayed("my-rw-buggy", "mutual_exclusion");
}

TEST_CASE("a user's keyed FIFO lock that serves the newest waiter first is caught by sweep",
          "[user-keyed]") {
  caught_and_replayed("my-fifo-buggy", "fifo");
}

TEST_CASE("the correct variants of the user's keyed locks pass the sweep", "[user-keyed]") {
  for (const std::string adapter : {"my-rw", "my-fifo"}) {
    const CommandResult sweep = run_lockstep("sweep --adapter " + adapter + " --seeds 500");
    INFO(adapter << "\n" << sweep.out << sweep.err);
    CHECK(sweep.exit_code == 0);
  }
}

TEST_CASE("calibrate catches the user's keyed calibration variants", "[user-keyed]") {
  const CommandResult calibrate = run_lockstep("calibrate --seeds 300 --no-time-target");
  INFO(calibrate.out << calibrate.err);
  CHECK(calibrate.exit_code == 0);
  CHECK(calibrate.out.find("my-rw-buggy") != std::string::npos);
  CHECK(calibrate.out.find("my-fifo-buggy") != std::string::npos);
}

TEST_CASE("the user's keyed locks join the scenarios their traits fit", "[user-keyed]") {
  CHECK(run_lockstep("run writer-starvation --adapter my-rw").exit_code == 0);
  CHECK(run_lockstep("run fifo-queue --adapter my-fifo").exit_code == 0);
  const CommandResult matrix = run_lockstep("matrix --adapter my-rw");
  INFO(matrix.out << matrix.err);
  CHECK(matrix.exit_code == 0);
}

// A run that must end as the run's error: exit 4, one stderr line, and the report's reason names
// the lock and the call.
void ends_as_error(const std::string& args, const std::string& lock, const std::string& call,
                   const std::string& what = " broke its state-machine contract: ") {
  const CommandResult r = run_lockstep(args);
  INFO(args << "\n" << r.out << r.err);
  CHECK(r.exit_code == 4);
  CHECK(error_lines(r.err) == 1);
  CHECK(r.out.find("keyed lock '" + lock + "'" + what + call) != std::string::npos);
}

TEST_CASE(
    "a user's keyed lock whose call throws, or whose answer the driver cannot carry out, ends the "
    "run as an error, never 70 or abort",
    "[user-keyed]") {
  ends_as_error("run writer-starvation --adapter throws-in-acquire", "throws-in-acquire",
                "request(key 'resource') threw: my table is full");
  ends_as_error("run writer-starvation --adapter throws-in-release", "throws-in-release",
                "release(key 'resource') threw: something that is not a std::exception");
  // The message's line break is folded: the report's reason stays one line.
  ends_as_error("run fifo-queue --adapter throws-in-clear", "throws-in-clear",
                "clear() threw: clear() is not implemented");
  ends_as_error("run writer-starvation --adapter grants-stranger", "grants-stranger",
                "release(key 'resource') granted request 1, which is not waiting");
  ends_as_error("run writer-starvation --adapter reuses-id", "reuses-id",
                "request gave request id 1, which a live request has");
  ends_as_error("run fifo-queue --adapter clear-rejects-holder", "clear-rejects-holder",
                "clear() rejected request");
  ends_as_error("run writer-starvation --adapter throws-in-make", "throws-in-make",
                "make_machine threw: std::bad_alloc", ": ");
}

TEST_CASE("a sweep of a user's keyed lock whose call throws exits 4, never 70", "[user-keyed]") {
  TempDir dir("user-keyed");
  for (const std::string adapter :
       {"throws-in-acquire", "throws-in-release", "throws-in-clear", "grants-stranger"}) {
    const CommandResult sweep =
        run_lockstep("sweep --adapter " + adapter + " --seeds 50 --report " + dir.path.string());
    INFO(adapter << "\n" << sweep.out << sweep.err);
    CHECK(sweep.exit_code == 4);
    CHECK(error_lines(sweep.err) == 1);
    CHECK(sweep.out.find("breaks incomplete") != std::string::npos);
  }
}

}  // namespace
}  // namespace lockstep
