// PgServerProcess and LibpqConnection against a private PostgreSQL 15 cluster: sessions, advisory
// locks, what a terminated session looks like to its client, timeouts, crash and restart, pause,
// and that nothing is left behind (processes, dirs) however the server ends.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "real/server_files.h"
#include "real/tcp_proxy.h"
#include "services/postgres/adapter/libpq_connection.h"
#include "services/postgres/tests/pg_test_support.h"

namespace lockstep {
namespace {

using testing::must;
using SteadyClock = std::chrono::steady_clock;

// Gone, or a zombie nobody reaped yet: either way it runs no more.
bool process_dead(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return true;
  const size_t paren = text.rfind(')');
  return paren == std::string::npos || text[paren + 2] == 'Z' || text[paren + 2] == 'X';
}

// Polls `done` every 5 ms until it holds or timeout_ms pass.
template <typename Done>
bool eventually(Done done, int64_t timeout_ms) {
  const auto deadline = SteadyClock::now() + std::chrono::milliseconds(timeout_ms);
  while (!done()) {
    if (SteadyClock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling a bounded deadline
  }
  return true;
}

LibpqConnection session_on(const real::PgServerProcess& server, int64_t command_timeout_ms = 2000,
                           PgSettings settings = {}) {
  return LibpqConnection(LibpqOptions{.port = server.port(),
                                      .command_timeout_ms = command_timeout_ms,
                                      .settings = std::move(settings)});
}

TEST_CASE("a private cluster takes sessions and advisory locks on loopback", "[postgres][real]") {
  testing::require_postgres();
  real::PgServerProcess server;
  CHECK(server.running());
  LibpqConnection a = session_on(server);
  LibpqConnection b = session_on(server);
  REQUIRE(a.open().ok());
  REQUIRE(b.open().ok());
  CHECK(a.session_pid() > 0);
  CHECK(a.session_pid() != b.session_pid());
  CHECK(must(a, "SELECT pg_try_advisory_lock(42)").scalar() == "t");
  CHECK(must(b, "SELECT pg_try_advisory_lock(42)").scalar() == "f");
  const PgResult unlocked = must(b, "SELECT pg_advisory_unlock(42)");
  CHECK(unlocked.scalar() == "f");
  REQUIRE(unlocked.notices.size() == 1);
  CHECK(unlocked.notices[0] == "WARNING: you don't own a lock of type ExclusiveLock");
  CHECK(must(a, "SELECT pg_advisory_unlock(42)").scalar() == "t");
  CHECK(must(b, "SELECT pg_try_advisory_lock(42)").scalar() == "t");
  // A session's end releases its locks.
  b.close();
  CHECK(!b.is_open());
  CHECK(eventually([&] { return a.execute("SELECT pg_try_advisory_lock(42)").scalar() == "t"; },
                   5000));
}

TEST_CASE("a terminated session is a connection error with 57P01 for its client",
          "[postgres][real]") {
  testing::require_postgres();
  real::PgServerProcess server;
  LibpqConnection victim = session_on(server);
  LibpqConnection admin = session_on(server);
  REQUIRE(victim.open().ok());
  REQUIRE(admin.open().ok());
  must(victim, "SELECT pg_advisory_lock(7)");
  CHECK(must(admin, fmt::format("SELECT pg_terminate_backend({}, 5000)", victim.session_pid()))
            .scalar() == "t");
  CHECK(must(admin, "SELECT pg_try_advisory_lock(7)").scalar() == "t");  // released with it
  const PgResult next = victim.execute("SELECT 1");
  CHECK(next.status == IoStatus::connection_error);
  CHECK(next.sqlstate == "57P01");
  CHECK(!victim.is_open());
  CHECK(victim.open().ok());  // a new session, explicitly
}

TEST_CASE("a reset after the statement was written is connection_lost, and the session ends",
          "[postgres][real]") {
  testing::require_postgres();
  real::PgServerProcess server;
  real::TcpProxy proxy({.upstream_port = server.port()});
  LibpqConnection holder = session_on(server);
  LibpqConnection waiter(LibpqOptions{.port = proxy.port(), .command_timeout_ms = 10'000});
  REQUIRE(holder.open().ok());
  REQUIRE(waiter.open().ok());
  must(holder, "SELECT pg_advisory_lock(3)");
  std::future<PgResult> waited =
      std::async(std::launch::async, [&] { return waiter.execute("SELECT pg_advisory_lock(3)"); });
  const auto waiting = [&] {
    return holder
        .execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
        .scalar();
  };
  REQUIRE(eventually([&] { return waiting() == "1"; }, 5000));  // written whole, and queued
  proxy.reset_all();
  const PgResult lost = waited.get();
  INFO(describe(lost));
  CHECK(lost.status == IoStatus::connection_lost);  // for all it knows, it ran
  CHECK(!waiter.is_open());
  // A backend blocked on a lock reads nothing: it waits on, unaware, takes the lock when the
  // holder lets go, and ends only as it fails to send that result.
  CHECK(waiting() == "1");
  must(holder, "SELECT pg_advisory_unlock(3)");
  CHECK(eventually([&] { return must(holder, "SELECT pg_try_advisory_lock(3)").scalar() == "t"; },
                   5000));
}

TEST_CASE("a statement that outlives the command timeout closes the session", "[postgres][real]") {
  testing::require_postgres();
  real::PgServerProcess server;
  LibpqConnection holder = session_on(server);
  LibpqConnection waiter = session_on(server, 200);
  REQUIRE(holder.open().ok());
  REQUIRE(waiter.open().ok());
  must(holder, "SELECT pg_advisory_lock(1)");
  const PgResult waited = waiter.execute("SELECT pg_advisory_lock(1)");
  CHECK(waited.status == IoStatus::timeout);
  CHECK(!waiter.is_open());
  // lock_timeout as a session setting: the wait ends as the server's error, the session goes on.
  LibpqConnection patient = session_on(server, 2000, {{"lock_timeout", "50"}});
  REQUIRE(patient.open().ok());
  const PgResult refused = patient.execute("SELECT pg_advisory_lock(1)");
  CHECK(refused.status == IoStatus::ok);
  CHECK(refused.sqlstate == "55P03");
  CHECK(patient.is_open());
}

TEST_CASE("a crash ends every session and restart recovers sequences ahead", "[postgres][real]") {
  testing::require_postgres();
  real::PgServerProcess server;
  LibpqConnection a = session_on(server);
  REQUIRE(a.open().ok());
  must(a, "CREATE SEQUENCE s");
  CHECK(must(a, "SELECT nextval('s')").scalar() == "1");
  CHECK(must(a, "SELECT nextval('s')").scalar() == "2");
  must(a, "SELECT pg_advisory_lock(3)");
  const std::vector<pid_t> backends = server.children();
  REQUIRE(!backends.empty());
  server.crash();
  CHECK(!server.running());
  for (pid_t pid : backends) CHECK(process_dead(pid));
  // Written to a socket whose server died, then the end read: for all a knows, it ran.
  CHECK(a.execute("SELECT 1").status == IoStatus::connection_lost);
  server.restart();
  LibpqConnection b = session_on(server);
  REQUIRE(b.open().ok());
  CHECK(must(b, "SELECT pg_try_advisory_lock(3)").scalar() == "t");
  // The first nextval logged 32 values ahead (PostgreSQL's SEQ_LOG_VALS): recovery resumes there.
  CHECK(must(b, "SELECT nextval('s')").scalar() == "34");
}

TEST_CASE("a paused server answers nothing until resumed", "[postgres][real]") {
  testing::require_postgres();
  real::PgServerProcess server;
  LibpqConnection a = session_on(server, 300);
  REQUIRE(a.open().ok());
  server.pause();
  CHECK(a.execute("SELECT 1").status == IoStatus::timeout);
  server.resume();
  REQUIRE(a.open().ok());
  CHECK(must(a, "SELECT 1").scalar() == "1");
}

TEST_CASE("a stopped server leaves no process and no dir", "[postgres][real]") {
  testing::require_postgres();
  std::string dir;
  pid_t postmaster = -1;
  std::vector<pid_t> backends;
  {
    real::PgServerProcess server;
    LibpqConnection a = session_on(server);
    REQUIRE(a.open().ok());
    dir = server.dir();
    postmaster = server.pid();
    backends = server.children();
    CHECK(std::filesystem::exists(dir));
  }
  CHECK(!std::filesystem::exists(dir));
  CHECK(process_dead(postmaster));
  for (pid_t pid : backends) CHECK(process_dead(pid));
}

TEST_CASE("the postmaster dies with the thread that started it, backends with it",
          "[postgres][real]") {
  testing::require_postgres();
  // A harness killed by SIGKILL is the case: PR_SET_PDEATHSIG, armed after the drop to the
  // postgres user, kills the server when its spawning thread ends without stopping it.
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto* server = new real::PgServerProcess();  // never stopped: this process dies under it
    std::ofstream(std::filesystem::temp_directory_path() / "lockstep-pg-pdeath-test")
        << server->pid() << "\n";
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  std::ifstream in(std::filesystem::temp_directory_path() / "lockstep-pg-pdeath-test");
  pid_t postmaster = -1;
  REQUIRE(in >> postmaster);
  std::filesystem::remove(std::filesystem::temp_directory_path() / "lockstep-pg-pdeath-test");
  CHECK(eventually([&] { return process_dead(postmaster); }, 10'000));
  // The dead process's dirs (its server's and its template) are what a killed run leaves: the
  // next start's sweep removes them, as it does here.
  CHECK(real::remove_stale_server_dirs(std::filesystem::temp_directory_path().string()) >= 2);
}

}  // namespace
}  // namespace lockstep
