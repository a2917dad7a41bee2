// RedisServerProcess: a real redis-server that the harness starts on a free loopback port, faults
// (pause, crash, restart, libfaketime clock rate and jumps) and always stops, leaving nothing
// behind.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "real/process_registry.h"
#include "real/server_errors.h"
#include "services/redis/adapter/hiredis_connection.h"
#include "services/redis/real/redis_ping.h"
#include "services/redis/real/redis_server.h"
#include "services/redis/tests/hiredis_support.h"
#include "tests/real_support.h"

namespace lockstep {
namespace {

using real::Persistence;
using real::RedisServerProcess;
using SteadyClock = std::chrono::steady_clock;

bool process_gone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

// Gone, or a zombie that its new parent (init) has not reaped yet: either way it runs no more.
bool process_dead(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_field, name, state;
  if (!(stat >> pid_field >> name >> state)) return true;
  return state == "Z" || state == "X";
}

// Polls `done` every 5 ms until it holds or timeout_ms pass; returns the ms it took (or -1).
template <typename Done>
int64_t ms_until(Done done, int64_t timeout_ms) {
  const auto start = SteadyClock::now();
  while (true) {
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start).count();
    if (done()) return waited;
    if (waited > timeout_ms) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling a bounded deadline
  }
}

TEST_CASE("a server starts on a free loopback port in its own dir and answers",
          "[real][redis-server]") {
  testing::require_redis_server();
  RedisServerProcess first;
  RedisServerProcess second;
  CHECK(first.pid() > 0);
  CHECK(first.running());
  CHECK(first.port() != second.port());
  CHECK(first.dir() != second.dir());
  CHECK(std::filesystem::is_directory(first.dir()));
  CHECK(first.endpoint() == "127.0.0.1:" + std::to_string(first.port()));
  HiredisConnection connection({.port = first.port()});
  CHECK(must(connection, {"PING"}) == RedisReply::status_of("PONG"));
  CHECK(must(connection, {"CONFIG", "GET", "bind"}).elements.at(1) ==
        RedisReply::string_of("127.0.0.1"));
  CHECK(must(connection, {"CONFIG", "GET", "appendonly"}).elements.at(1) ==
        RedisReply::string_of("no"));
  CHECK(must(connection, {"CONFIG", "GET", "save"}).elements.at(1) == RedisReply::string_of(""));
}

TEST_CASE("stop leaves no process and removes the dir, and so does the destructor",
          "[real][redis-server]") {
  testing::require_redis_server();
  const size_t registered_before = real::registered_child_count();
  pid_t pid = 0;
  std::string dir;
  SECTION("stop()") {
    RedisServerProcess server;
    pid = server.pid();
    dir = server.dir();
    CHECK(real::registered_child_count() == registered_before + 1);
    server.stop();
    CHECK_FALSE(server.running());
    server.stop();  // idempotent
  }
  SECTION("destructor") {
    RedisServerProcess server;
    pid = server.pid();
    dir = server.dir();
  }
  SECTION("stop() of a paused server") {
    RedisServerProcess server;
    pid = server.pid();
    dir = server.dir();
    server.pause();
    server.stop();  // how long it took is not asserted: only that nothing is left behind
  }
  CHECK(process_gone(pid));
  CHECK_FALSE(std::filesystem::exists(dir));
  CHECK(real::registered_child_count() == registered_before);
}

TEST_CASE("pause stops answering and resume recovers", "[real][redis-server]") {
  testing::require_redis_server();
  RedisServerProcess server;
  server.pause();
  CHECK_FALSE(real::redis_answers_ping(server.port(), 100));
  server.resume();
  CHECK(real::redis_answers_ping(server.port(), 1000));
}

TEST_CASE("crash and restart on the same port: persistence none loses keys, always keeps them",
          "[real][redis-server]") {
  testing::require_redis_server();
  const Persistence persistence =
      GENERATE(Persistence::none, Persistence::everysec, Persistence::always);
  INFO("persistence " << real::to_string(persistence));
  RedisServerProcess server({.persistence = persistence});
  const int port = server.port();
  const pid_t first_pid = server.pid();
  HiredisConnection connection({.port = port});
  must(connection, {"SET", "kept?", "yes"});
  if (persistence == Persistence::everysec) {
    // everysec may lose the last second; only check that the AOF is in use.
    CHECK(must(connection, {"CONFIG", "GET", "appendfsync"}).elements.at(1) ==
          RedisReply::string_of("everysec"));
  }

  server.crash();
  CHECK_FALSE(server.running());
  CHECK(process_gone(first_pid));
  server.restart();
  CHECK(server.port() == port);
  CHECK(server.pid() != first_pid);

  // The connection opened before the crash was closed by it: the next command notices that before
  // it is sent and reconnects.
  const RedisReply after = must(connection, {"GET", "kept?"});
  if (persistence == Persistence::none) CHECK(after == RedisReply::nil());
  if (persistence == Persistence::always) CHECK(after == RedisReply::string_of("yes"));
}

TEST_CASE("libfaketime x2 makes a PX key expire in about half the time",
          "[real][redis-server][faketime]") {
  testing::require_libfaketime();
  RedisServerProcess server({.clock_rate = "x2"});
  HiredisConnection connection({.port = server.port()});
  must(connection, {"SET", "k", "v", "PX", "1000"});
  const int64_t expired_after_ms = ms_until(
      [&] {
        return must(connection, {"GET", "k"}).is_nil();
      },
      3000);
  INFO("a 1000 ms key expired after " << expired_after_ms << " ms of real time");
  CHECK(expired_after_ms >= 400);  // not at once: the rate is 2, not more
  CHECK(expired_after_ms <= 750);  // well before the 1000 ms a real clock takes
}

TEST_CASE("a clock jump expires keys at once (forward) or lengthens them (backward)",
          "[real][redis-server][faketime]") {
  testing::require_libfaketime();
  RedisServerProcess server({.clock_jumps = true});
  HiredisConnection connection({.port = server.port()});
  must(connection, {"SET", "k", "v", "EX", "60"});
  CHECK(must(connection, {"GET", "k"}) == RedisReply::string_of("v"));

  server.jump_clock_s(120);
  const int64_t expired_after_ms = ms_until(
      [&] {
        return must(connection, {"GET", "k"}).is_nil();
      },
      1000);
  CHECK(expired_after_ms >= 0);  // expired within the poll's bound (FAKETIME_NO_CACHE)

  must(connection, {"SET", "k2", "v", "EX", "60"});
  server.jump_clock_s(-120);
  const int64_t ttl_ms = must(connection, {"PTTL", "k2"}).integer;
  CHECK(ttl_ms > 170'000);
  CHECK(ttl_ms <= 180'000);
}

TEST_CASE("a missing redis-server is ServerUnavailable saying how to get it",
          "[real][redis-server]") {
  const char* old_path = std::getenv("PATH");
  const std::string saved = old_path != nullptr ? old_path : "";
  setenv("PATH", "/nonexistent-lockstep-dir", 1);
  try {
    RedisServerProcess server;
    setenv("PATH", saved.c_str(), 1);
    FAIL("a server started without redis-server on PATH");
  } catch (const real::ServerUnavailable& error) {
    setenv("PATH", saved.c_str(), 1);
    CHECK_THAT(error.what(),
               Catch::Contains("redis-server") && Catch::Contains("apt-get install redis-server"));
  }
}

struct StartedServer {
  pid_t pid = 0;
  char dir[512] = {};
};

TEST_CASE("clock faults without libfaketime are ServerUnavailable saying how to get it",
          "[real][redis-server]") {
  testing::require_redis_server();
  setenv("LOCKSTEP_LIBFAKETIME", "/nonexistent-lockstep-dir/libfaketime.so.1", 1);
  const size_t registered_before = real::registered_child_count();
  try {
    RedisServerProcess server({.clock_rate = "x2"});
    unsetenv("LOCKSTEP_LIBFAKETIME");
    FAIL("a clock-faulted server started without libfaketime");
  } catch (const real::ServerUnavailable& error) {
    unsetenv("LOCKSTEP_LIBFAKETIME");
    CHECK_THAT(error.what(), Catch::Contains("libfaketime") &&
                                 Catch::Contains("apt-get install faketime libfaketime"));
  }
  CHECK(real::registered_child_count() == registered_before);
}

TEST_CASE("the registry kills every server it knows", "[real][redis-server]") {
  testing::require_redis_server();
  SECTION("kill_registered_children (what atexit runs)") {
    RedisServerProcess server;
    real::kill_registered_children();
    CHECK(ms_until([&] { return process_dead(server.pid()); }, 2000) >= 0);
    server.stop();  // reaps it
    CHECK(process_gone(server.pid()));
  }
  SECTION("SIGINT (Ctrl-C) in a harness process leaves no server behind") {
    // As subreaper this test process inherits the orphaned server and can reap it (no zombie
    // waiting for init) and see how it died.
    REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
    int pid_pipe[2];
    REQUIRE(pipe(pid_pipe) == 0);
    const pid_t harness = fork();
    REQUIRE(harness >= 0);
    if (harness == 0) {  // the child plays a harness that gets Ctrl-C while a server runs
      signal(SIGINT, SIG_DFL);
      try {
        RedisServerProcess server;
        StartedServer started{.pid = server.pid()};
        server.dir().copy(started.dir, sizeof(started.dir) - 1);
        if (write(pid_pipe[1], &started, sizeof(started)) != sizeof(started)) _exit(2);
        raise(SIGINT);
      } catch (...) {
      }
      _exit(3);  // not reached when SIGINT ends it
    }
    close(pid_pipe[1]);
    StartedServer started{};
    const bool got_pid = read(pid_pipe[0], &started, sizeof(started)) == sizeof(started);
    close(pid_pipe[0]);
    int status = 0;
    REQUIRE(waitpid(harness, &status, 0) == harness);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGINT);
    REQUIRE(got_pid);
    // The harness's handler killed and reaped its server (so nothing is left for us to reap),
    // and removed the server's temp dir, before SIGINT ended it.
    int server_status = 0;
    CHECK(waitpid(started.pid, &server_status, WNOHANG) == -1);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
    CHECK(process_gone(started.pid));
    CHECK_FALSE(std::filesystem::exists(started.dir));
  }
}

}  // namespace
}  // namespace lockstep
