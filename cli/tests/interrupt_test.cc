// InterruptWatch (cli/interrupt.h): the first SIGTERM is recorded, a repeat within a second is the
// same request even once the watch has ended (GNU timeout signals the command, then its process
// group: the command may have finished its sweep and dropped the watch in between), and a later
// one ends the process. Each case runs in a forked child, whose end the parent reads.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <csignal>
#include <functional>

#include "cli/interrupt.h"

namespace lockstep {
namespace {

// The child's wait status after body() (exit 0 when body returns).
int in_child(const std::function<void()>& body) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::signal(SIGTERM, SIG_DFL);  // as a fresh process has it (not the test runner's handler)
    body();
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return status;
}

TEST_CASE("the first SIGTERM is recorded, not fatal", "[interrupt]") {
  const int status = in_child([] {
    const InterruptWatch watch;
    raise(SIGTERM);
    if (InterruptWatch::caught() != SIGTERM) _exit(3);
  });
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a repeat within a second after the watch ended is the same request", "[interrupt]") {
  const int status = in_child([] {
    {
      const InterruptWatch watch;
      raise(SIGTERM);  // timeout's signal to the command: the sweep stops and the watch ends
    }
    raise(SIGTERM);  // the same signal to the process group, a moment later
  });
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a second SIGTERM a second or more later ends the process", "[interrupt]") {
  const int status = in_child([] {
    const InterruptWatch watch;
    raise(SIGTERM);
    const timespec wait{.tv_sec = 1, .tv_nsec = 100'000'000};  // past the repeat window
    nanosleep(&wait, nullptr);
    raise(SIGTERM);
  });
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
}

TEST_CASE("without a watch, SIGTERM ends the process as by default", "[interrupt]") {
  const int status = in_child([] {
    { const InterruptWatch watch; }  // nothing caught: the default action is back
    raise(SIGTERM);
  });
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
}

}  // namespace
}  // namespace lockstep
