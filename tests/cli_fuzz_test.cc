// The command line under generated and fixed bad input: every command line ends within a bound,
// exits 0-4 (never 70 or a signal), and an exit 2 is exactly one line on stderr. The binary runs
// as a child under timeout(1), which kills it by PID at the bound. RapidCheck generates the
// command lines (RC_PARAMS in tests/CMakeLists.txt bounds how many per CI run); a fixed corpus
// holds the inputs that once broke it.
#include <sys/stat.h>
#include <unistd.h>

#include <rapidcheck.h>
#include <rapidcheck/catch.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/cli_support.h"

namespace {

using lockstep::testing::CommandResult;
using lockstep::testing::run_binary;

constexpr int kBoundS = 60;  // far above any command here; only a hang reaches it

// The commands run in this directory, so relative --report/--junit values land here; the test
// cases remove it.
std::filesystem::path work_dir() {
  return std::filesystem::temp_directory_path() /
         ("lockstep-cli-fuzz-" + std::to_string(::getpid()));
}

CommandResult bounded(const std::string& args) {
  std::filesystem::create_directories(work_dir());
  // --kill-after: a child that ignores SIGTERM is killed outright.
  return run_binary("cd " + work_dir().string() + " && timeout --kill-after=5 " +
                        std::to_string(kBoundS) + " " LOCKSTEP_BINARY,
                    args);
}

void check_contract(const std::string& args) {
  const CommandResult r = bounded(args);
  INFO("lockstep " << args << "\nexit " << r.exit_code << "\nstderr: " << r.err);
  CHECK(r.exit_code != 124);  // timeout(1): the bound was reached
  CHECK(r.exit_code >= 0);
  CHECK(r.exit_code <= 4);
  if (r.exit_code == 2) {
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.size() > 20);  // names what was wrong, not a bare "error"
  }
}

// Values at and past the bounds, and garbage, for any flag.
const std::vector<std::string> kValues = {"0",
                                          "1",
                                          "2",
                                          "-1",
                                          "010",
                                          "0x10",
                                          "99999999999999999999",
                                          "18446744073709551615",
                                          "+5",
                                          "1.5",
                                          "",
                                          "abc",
                                          "' 3'",
                                          "on",
                                          "off",
                                          "sim",
                                          "real",
                                          "1/2",
                                          "2/2",
                                          "memory",
                                          "redis",
                                          "sequential",
                                          "gc-pause",
                                          "nope",
                                          "ttl_ms=1",
                                          "ttl_ms=0",
                                          "hold_ms=-5",
                                          "retry_times=86400000",
                                          "retry_times=1000001",
                                          "nope=1",
                                          "ttl_ms=",
                                          "=",
                                          "/proc/x",
                                          "/dev/null",
                                          "'a\nb'"};

// Flags of every subcommand, some of them where they do not belong.
const std::vector<std::string> kFlags = {
    "--adapter", "--scenario", "--world",      "--seed",   "--seeds",  "--first-seed",
    "--set",     "--fencing",  "--shard",      "--faults", "--shrink", "--junit",
    "--report",  "--json",     "--keep-going", "--bogus",  "-x",       "--"};

// Subcommands that finish quickly whatever valid values they get from kValues. The matrix names
// one adapter: every adapter's cell of a scenario costs seconds under the sanitizers and parses
// nothing more.
const std::vector<std::string> kSubcommands = {"list",
                                               "run",
                                               "matrix --scenario sequential --adapter memory",
                                               "replay",
                                               "check",
                                               "sweep --seeds 1",
                                               "sweep-merge",
                                               "calibrate --seeds 1 --adapter bad-del-release",
                                               "frobnicate",
                                               ""};

}  // namespace

TEST_CASE("cli fuzz: generated command lines keep the exit-code contract", "[cli][fuzz]") {
  rc::prop("any subcommand, flags and values", [] {
    std::string args = *rc::gen::elementOf(kSubcommands);
    const auto pairs = *rc::gen::container<std::vector<std::pair<std::string, std::string>>>(
        *rc::gen::inRange(0, 4),
        rc::gen::pair(rc::gen::elementOf(kFlags), rc::gen::elementOf(kValues)));
    for (const auto& [flag, value] : pairs) args += " " + flag + " " + value;
    const CommandResult r = bounded(args);
    RC_LOG() << "lockstep " << args << " -> " << r.exit_code << ": " << r.err;
    const bool broken = r.exit_code < 0 || r.exit_code > 4 ||
                        (r.exit_code == 2 && std::count(r.err.begin(), r.err.end(), '\n') != 1);
    // A failure that does not recur on RapidCheck's rerun would leave no trace otherwise.
    if (broken)
      std::fprintf(stderr, "FUZZ FAILURE: lockstep %s -> %d: [%s]\n", args.c_str(), r.exit_code,
                   r.err.c_str());
    RC_ASSERT(r.exit_code >= 0);
    RC_ASSERT(r.exit_code <= 4);
    if (r.exit_code == 2) RC_ASSERT(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  });
  std::filesystem::remove_all(work_dir());
}

TEST_CASE("cli fuzz: the fixed corpus keeps the exit-code contract", "[cli][fuzz]") {
  const auto dir = work_dir() / "corpus";
  std::filesystem::create_directories(dir);
  const std::string fifo = (dir / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::ofstream(dir / "garbage.json") << "{\"scenario\": 3}\n";
  std::ofstream(dir / "empty.json") << "";
  for (const std::string& args : {
           std::string("run sequential --adapter memory --seed -1"),
           std::string("run sequential --adapter memory --seed 010"),
           std::string("run sequential --adapter memory --seed 0x10"),
           std::string("run sequential --adapter memory --seed 99999999999999999999"),
           std::string("run sequential --adapter redis --set retry_times=86400000"),
           std::string("run sequential --adapter memory --report /proc/x"),
           std::string("run sequential --adapter memory --junit /dev/full"),
           std::string("matrix --scenario sequential --adapter memory --report /proc/x"),
           std::string("sweep --adapter memory --seeds 1 --report /proc/x"),
           std::string("list > /dev/full"),
           "replay " + fifo,
           "check " + fifo,
           "replay " + dir.string(),
           "check " + dir.string(),
           "replay " + (dir / "garbage.json").string(),
           "replay " + (dir / "empty.json").string(),
           "sweep-merge " + dir.string(),
       }) {
    check_contract(args);
  }
  std::filesystem::remove_all(work_dir());
}
