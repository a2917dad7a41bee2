// The worker pool (explore/worker_pool.h): results are taken in order whatever the
// number of workers, an early stop or a failure stops and reaps every worker.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "explore/worker_pool.h"
#include "harness/usage_error.h"
#include "real/server_errors.h"

namespace lockstep {
namespace {

// No child of this process is left, running or unreaped.
bool no_children_left() {
  errno = 0;
  return ::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD;
}

std::string square(size_t i) { return std::to_string(i * i); }

TEST_CASE("results are taken in index order, the same for any number of workers", "[pool]") {
  for (int jobs : {1, 2, 3, 7}) {
    std::vector<std::string> taken;
    run_in_order(50, jobs, square, [&](size_t i, const std::string& r) {
      CHECK(i == taken.size());
      taken.push_back(r);
      return true;
    });
    REQUIRE(taken.size() == 50);
    for (size_t i = 0; i < taken.size(); ++i) CHECK(taken[i] == square(i));
    CHECK(no_children_left());
  }
}

TEST_CASE("take returning false stops the pool early, its workers killed and reaped", "[pool]") {
  size_t last = 0;
  run_in_order(100'000, 2, square, [&](size_t i, const std::string&) {
    last = i;
    return i < 10;
  });
  CHECK(last == 10);
  CHECK(no_children_left());
}

TEST_CASE("a work item that throws in a worker is named, after the items before it", "[pool]") {
  std::vector<size_t> taken;
  auto work = [](size_t i) -> std::string {
    if (i == 5) throw std::invalid_argument("five is not allowed");
    return square(i);
  };
  CHECK_THROWS_WITH(run_in_order(20, 3, work,
                                 [&](size_t i, const std::string&) {
                                   taken.push_back(i);
                                   return true;
                                 }),
                    Catch::Contains("item 5: five is not allowed"));
  CHECK(taken == std::vector<size_t>{0, 1, 2, 3, 4});
  CHECK(no_children_left());
}

// Issue 34: a sweep's or matrix's option refused inside a worker was exit 70 with --jobs 2 and
// exit 2 with --jobs 1. The kind crosses the pipe, so the command line maps it the same way.
TEST_CASE("a worker's usage, environment, output and memory errors keep their kind", "[pool]") {
  auto fails_with = [](auto make) {
    return [make](size_t i) -> std::string {
      if (i == 3) throw make();
      return square(i);
    };
  };
  auto none = [](size_t, const std::string&) { return true; };
  for (int jobs : {1, 2}) {
    CHECK_THROWS_AS(run_in_order(6, jobs, fails_with([] { return UsageError("bad --set"); }), none),
                    UsageError);
    CHECK_THROWS_AS(
        run_in_order(6, jobs, fails_with([] { return WorldUnsupportedError("no such fault"); }),
                     none),
        WorldUnsupportedError);
    CHECK_THROWS_AS(
        run_in_order(6, jobs, fails_with([] { return OutputError("cannot write x"); }), none),
        OutputError);
    CHECK_THROWS_AS(
        run_in_order(6, jobs, fails_with([] { return real::ServerUnavailable("no node"); }), none),
        real::ServerUnavailable);
    CHECK_THROWS_AS(
        run_in_order(6, jobs, fails_with([] { return real::ServerStartError("port taken"); }),
                     none),
        real::ServerStartError);
    // A worker's failed allocation is the machine's (exit 3), not the pool's internal error.
    CHECK_THROWS_AS(run_in_order(6, jobs, fails_with([] { return std::bad_alloc(); }), none),
                    std::bad_alloc);
    CHECK_THROWS_WITH(
        run_in_order(6, jobs, fails_with([] { return UsageError("bad --set"); }), none),
        "bad --set");  // the user's message as it is, without the pool's item number
    CHECK(no_children_left());
  }
}

TEST_CASE("a worker that dies is reported, not waited for", "[pool]") {
  auto work = [](size_t i) -> std::string {
    if (i == 4) ::_exit(3);  // only ever runs in a worker: the pool forks for jobs > 1
    return square(i);
  };
  CHECK_THROWS_WITH(run_in_order(9, 2, work, [](size_t, const std::string&) { return true; }),
                    Catch::Contains("died before answering"));
  CHECK(no_children_left());
}

TEST_CASE("more workers than items, and no items at all", "[pool]") {
  std::vector<std::string> taken;
  run_in_order(2, 8, square, [&](size_t, const std::string& r) {
    taken.push_back(r);
    return true;
  });
  CHECK(taken == std::vector<std::string>{"0", "1"});
  run_in_order(0, 4, square, [](size_t, const std::string&) -> bool {
    FAIL("nothing to take");
    return false;
  });
  CHECK(available_cores() >= 1);
  CHECK(no_children_left());
}

TEST_CASE("stop ends the pool: nothing more is taken, also while a worker is still busy",
          "[pool][stop]") {
  for (int jobs : {1, 2}) {
    INFO("jobs " << jobs);
    std::vector<size_t> taken;
    run_in_order(
        1000, jobs, square,
        [&](size_t i, const std::string&) {
          taken.push_back(i);
          return true;
        },
        [&] { return taken.size() >= 3; });
    CHECK(taken == std::vector<size_t>{0, 1, 2});
    CHECK(no_children_left());
  }
  // Item 1 never finishes (its worker waits for a signal that never comes): a stop must not wait
  // for it. The pool asks stop() while it waits, so it returns; its workers are killed and reaped.
  std::vector<size_t> taken;
  auto work = [](size_t i) -> std::string {
    if (i == 1) ::pause();  // only ever runs in a worker: the pool forks for jobs > 1
    return square(i);
  };
  run_in_order(
      10, 2, work,
      [&](size_t i, const std::string&) {
        taken.push_back(i);
        return true;
      },
      [&] { return !taken.empty(); });
  CHECK(taken == std::vector<size_t>{0});
  CHECK(no_children_left());
}

}  // namespace
}  // namespace lockstep
