// What an interrupted real run leaves: nothing. A fatal signal (SIGINT, SIGTERM, SIGHUP) kills the
// registered servers and removes their temp dirs before the process ends; a run killed outright
// (SIGKILL, nothing can run) leaves its dirs to the next start, which removes those whose owner
// pid is gone and never a live run's.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <string>

#include "real/process_registry.h"
#include "real/server_files.h"
#include "services/redis/real/redis_server.h"
#include "tests/real_support.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

struct ChildReport {
  std::string dir;
  pid_t server_pid = 0;
  int signal_number = 0;  // what ended the child (0: it exited)
};

// Forks a child that makes a server dir (and, with_server, starts a redis-server in it), writes
// "DIR PID" to the parent, then raises signal_number with the default action behind our handler.
ChildReport interrupted_child(int signal_number, bool with_server) {
  std::array<int, 2> pipe_fds{};
  REQUIRE(pipe(pipe_fds.data()) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(pipe_fds[0]);
    signal(signal_number, SIG_DFL);  // so the registry's handler hands on to the default: death
    std::string line;
    if (with_server) {
      auto* server = new real::RedisServerProcess();  // never destroyed: the signal ends us
      line = server->dir() + " " + std::to_string(server->pid());
    } else {
      const std::string dir = real::make_server_dir("cleanup-test");
      fs::create_directories(dir + "/a/b");
      std::ofstream(dir + "/a/b/data.rdb") << "x";
      std::ofstream(dir + "/log") << "y";
      line = dir + " 0";
    }
    line += "\n";
    if (write(pipe_fds[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(3);
    raise(signal_number);
    _exit(4);  // not reached: the default action of the signal ends the process
  }
  close(pipe_fds[1]);
  std::string text;
  std::array<char, 512> buffer{};
  for (ssize_t n = 0; (n = read(pipe_fds[0], buffer.data(), buffer.size())) > 0;)
    text.append(buffer.data(), static_cast<size_t>(n));
  close(pipe_fds[0]);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  ChildReport report;
  report.signal_number = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  const size_t space = text.find(' ');
  REQUIRE(space != std::string::npos);
  report.dir = text.substr(0, space);
  report.server_pid = static_cast<pid_t>(std::stol(text.substr(space + 1)));
  return report;
}

bool alive(pid_t pid) { return kill(pid, 0) == 0; }

TEST_CASE("a fatal signal removes the registered temp dirs before the process ends",
          "[real][cleanup]") {
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    const ChildReport child = interrupted_child(signal_number, /*with_server=*/false);
    CHECK(child.signal_number == signal_number);
    CHECK(fs::path(child.dir).filename().string().find("lockstep-cleanup-test-") == 0);
    CHECK_FALSE(fs::exists(child.dir));
  }
}

TEST_CASE("an interrupted run leaves neither its redis-server nor its dir", "[real][cleanup]") {
  testing::require_redis_server();
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    const ChildReport child = interrupted_child(signal_number, /*with_server=*/true);
    CHECK(child.signal_number == signal_number);
    REQUIRE(child.server_pid > 0);
    CHECK_FALSE(alive(child.server_pid));  // killed and reaped by the child's handler
    CHECK_FALSE(fs::exists(child.dir));
  }
}

TEST_CASE("a start removes the dirs of killed runs, never a live run's", "[real][cleanup]") {
  const fs::path parent = fs::path(real::make_server_dir("cleanup-parent"));
  const pid_t dead = fork();
  REQUIRE(dead >= 0);
  if (dead == 0) _exit(0);
  REQUIRE(waitpid(dead, nullptr, 0) == dead);  // reaped: its pid names no process now
  const fs::path stale = parent / ("lockstep-redis-" + std::to_string(dead) + "-Ab12Cd");
  const fs::path live = parent / ("lockstep-redis-" + std::to_string(getppid()) + "-Ef34Gh");
  const fs::path other = parent / "lockstep-notes";
  for (const fs::path& dir : {stale, live, other}) fs::create_directories(dir / "inner");
  CHECK(real::remove_stale_server_dirs(parent.string()) == 1);
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(live));
  CHECK(fs::exists(other));
  std::string dir = parent.string();
  real::remove_server_dir(dir);
  CHECK_FALSE(fs::exists(parent));
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

TEST_CASE("per-process files of dead processes are removed, a live one's kept", "[real][cleanup]") {
  const std::string dir = real::make_server_dir("shm-test");
  const pid_t dead = fork();
  REQUIRE(dead >= 0);
  if (dead == 0) _exit(0);
  REQUIRE(waitpid(dead, nullptr, 0) == dead);
  const fs::path stale = fs::path(dir) / ("mongoc-" + std::to_string(dead));
  const fs::path live = fs::path(dir) / ("mongoc-" + std::to_string(getppid()));
  const fs::path other = fs::path(dir) / "mongoc-notapid";
  for (const fs::path& file : {stale, live, other}) std::ofstream(file) << "counters";
  CHECK(real::remove_stale_pid_files(dir, "mongoc-") == 1);
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(live));
  CHECK(fs::exists(other));
  std::string owned = dir;
  real::remove_server_dir(owned);
}

}  // namespace
}  // namespace lockstep
