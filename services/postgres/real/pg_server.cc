#include "services/postgres/real/pg_server.h"

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <libpq-fe.h>

#include "base/check.h"
#include "real/child_process.h"
#include "real/loopback.h"
#include "real/server_errors.h"
#include "real/server_files.h"

namespace lockstep::real {
namespace {

namespace fs = std::filesystem;

constexpr int kPortAttempts = 5;
constexpr int64_t kInitdbTimeoutMs = 120'000;
constexpr auto kPollInterval = std::chrono::milliseconds(20);
constexpr auto kProcPollInterval = std::chrono::milliseconds(2);
constexpr int64_t kChildrenWaitMs = 10'000;
constexpr size_t kChildrenMax = 4096;  // a bound on one read of /proc

using Clock = std::chrono::steady_clock;

bool executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// The postgres user when the harness runs as root (the server refuses root), else none.
std::optional<RunAs> server_user() {
  if (geteuid() != 0) return std::nullopt;
  const passwd* user = getpwnam("postgres");
  if (user == nullptr) {
    throw ServerUnavailable(
        "running as root, and there is no postgres user to run PostgreSQL as (apt-get install "
        "postgresql-15 creates it)");
  }
  return RunAs{.uid = user->pw_uid, .gid = user->pw_gid};
}

void give_to(const std::optional<RunAs>& user, const fs::path& path) {
  if (!user) return;
  if (lchown(path.c_str(), user->uid, user->gid) != 0) {
    throw std::system_error(errno, std::generic_category(), "chown " + path.string());
  }
}

// The process state letter from /proc/PID/stat ('R', 'S', 'T', 'Z', ...); 0 when it is gone.
char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!in || !std::getline(in, text)) return 0;
  const size_t paren = text.rfind(')');  // the command name may hold spaces and parentheses
  return paren == std::string::npos || paren + 2 >= text.size() ? 0 : text[paren + 2];
}

bool gone(pid_t pid) {
  const char state = process_state(pid);
  return state == 0 || state == 'Z' || state == 'X';
}

// The cluster initdb makes once per process, copied by every server. Removed at exit by the
// process that made it (a forked worker inherits the object, not the ownership).
class Template {
 public:
  ~Template() {
    if (owner_ == getpid()) remove_server_dir(dir_);
  }

  // The template's data dir, made on first use.
  std::string data_dir(const std::string& bin, const std::optional<RunAs>& user) {
    std::lock_guard<std::mutex> guard(mutex_);
    if (!dir_.empty() && owner_ == getpid()) return dir_ + "/data";
    owner_ = getpid();
    dir_ = make_server_dir("postgres-template");
    try {
      give_to(user, dir_);
      ChildProcess initdb(SpawnOptions{.path = bin + "/initdb",
                                       .args = {"-D", dir_ + "/data", "-A", "trust", "-U",
                                                "lockstep", "-N", "-E", "UTF8", "--locale=C"},
                                       .output_path = dir_ + "/initdb.log",
                                       .run_as = user});
      if (!initdb.wait_exit_for_ms(kInitdbTimeoutMs)) {
        throw ServerStartError("initdb did not finish within " + std::to_string(kInitdbTimeoutMs) +
                               " ms");
      }
      if (!fs::exists(dir_ + "/data/global/pg_control")) {
        throw ServerStartError("initdb failed:\n" + tail_of_file(dir_ + "/initdb.log", 2000));
      }
    } catch (...) {
      remove_server_dir(dir_);
      throw;
    }
    return dir_ + "/data";
  }

 private:
  std::mutex mutex_;
  std::string dir_;
  pid_t owner_ = 0;
};

Template& the_template() {
  static Template instance;
  return instance;
}

// Copies the template's data dir to `to`, owned by the server's user (modes kept: 0700).
void copy_cluster(const std::string& from, const std::string& to,
                  const std::optional<RunAs>& user) {
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::permissions(to, fs::perms::owner_all, fs::perm_options::replace);
  give_to(user, to);
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(to)) {
    give_to(user, entry.path());
  }
}

}  // namespace

std::string PgServerProcess::bin_dir() {
  const char* override_dir = std::getenv("LOCKSTEP_PG_BINDIR");
  const std::string dir = override_dir != nullptr && *override_dir != '\0'
                              ? std::string(override_dir)
                              : std::string("/usr/lib/postgresql/15/bin");
  if (!executable(dir + "/postgres") || !executable(dir + "/initdb")) {
    throw ServerUnavailable(fmt::format(
        "no PostgreSQL 15 server in {} (apt-get install postgresql-15, or set LOCKSTEP_PG_BINDIR)",
        dir));
  }
  return dir;
}

PgServerProcess::PgServerProcess(PgServerOptions options) : options_(std::move(options)) {
  LOCKSTEP_CHECK(options_.start_timeout_ms > 0 && options_.stop_timeout_ms > 0, "bounded waits");
  const std::string bin = bin_dir();
  const std::optional<RunAs> user = server_user();
  const std::string from = the_template().data_dir(bin, user);
  dir_ = make_server_dir("postgres");
  try {
    give_to(user, dir_);
    copy_cluster(from, dir_ + "/data", user);
    bool started = false;
    for (int attempt = 0; attempt < kPortAttempts && !started; ++attempt) {
      started = start_on_port(free_loopback_port());
    }
    if (!started) {
      throw ServerStartError(
          fmt::format("postgres could not bind a free loopback port in {} "
                      "attempts:\n{}",
                      kPortAttempts, log_tail()));
    }
  } catch (...) {
    stop();
    throw;
  }
}

PgServerProcess::~PgServerProcess() { stop(); }

std::string PgServerProcess::endpoint() const { return fmt::format("127.0.0.1:{}", port_); }

bool PgServerProcess::running() const { return process_ != nullptr && !process_->reaped(); }

std::string PgServerProcess::log_tail(size_t bytes_max) const {
  return tail_of_file(dir_ + "/postgres.log", bytes_max);
}

std::vector<pid_t> PgServerProcess::children() const {
  std::vector<pid_t> pids;
  if (!running()) return pids;
  std::ifstream in(fmt::format("/proc/{}/task/{}/children", pid_, pid_));
  pid_t child = 0;
  while (pids.size() < kChildrenMax && in >> child) pids.push_back(child);
  return pids;
}

// Starts the postmaster and polls until it accepts sessions, it exits, or start_timeout_ms pass.
bool PgServerProcess::start_on_port(int port) {
  port_ = port;
  std::vector<std::string> args{"-D", dir_ + "/data", "-p", std::to_string(port)};
  std::vector<std::pair<std::string, std::string>> settings{
      {"listen_addresses", "127.0.0.1"},
      {"unix_socket_directories", ""},
      {"max_connections", std::to_string(options_.max_connections)},
      {"shared_buffers", "16MB"},
      {"fsync", "off"},  // a test cluster: a crash of the machine may lose it
      // No checkpoint between a start and a crash: a sequence's value after recovery is then
      // exactly its last logged one, as the simulated server models it.
      {"checkpoint_timeout", "1d"},
      {"max_wal_size", "1GB"}};
  settings.insert(settings.end(), options_.settings.begin(), options_.settings.end());
  for (const auto& [name, value] : settings) {
    args.push_back("-c");
    args.push_back(name + "=" + value);
  }
  process_ = std::make_unique<ChildProcess>(SpawnOptions{.path = bin_dir() + "/postgres",
                                                         .args = std::move(args),
                                                         .output_path = dir_ + "/postgres.log",
                                                         .run_as = server_user()});
  pid_ = process_->pid();
  const std::string port_text = std::to_string(port);
  const char* keys[] = {"host", "port", "user", "dbname", "connect_timeout", nullptr};
  const char* values[] = {"127.0.0.1", port_text.c_str(), "lockstep", "postgres", "1", nullptr};
  const auto deadline = Clock::now() + std::chrono::milliseconds(options_.start_timeout_ms);
  while (Clock::now() < deadline) {
    if (PQpingParams(keys, values, 0) == PQPING_OK) return true;
    if (process_->exited_now()) {
      const std::string log = log_tail(8000);
      if (log.find("Address already in use") != std::string::npos) return false;
      throw ServerStartError("postgres exited at start:\n" + log_tail());
    }
    std::this_thread::sleep_for(kPollInterval);  // polling a bounded deadline
  }
  crash();
  throw ServerStartError(fmt::format("postgres on {} did not accept sessions within {} ms:\n{}",
                                     endpoint(), options_.start_timeout_ms, log_tail()));
}

void PgServerProcess::wait_until_gone(const std::vector<pid_t>& pids) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(kChildrenWaitMs);
  for (pid_t pid : pids) {
    while (!gone(pid) && Clock::now() < deadline) {
      std::this_thread::sleep_for(kProcPollInterval);  // polling a bounded deadline
    }
    if (!gone(pid)) kill(pid, SIGKILL);
  }
}

void PgServerProcess::pause() {
  LOCKSTEP_CHECK(running(), "pause a running server");
  process_->stop_and_wait();  // first, so it starts no backend meanwhile
  for (pid_t child : children()) {
    if (kill(child, SIGSTOP) != 0) continue;
    const auto deadline = Clock::now() + std::chrono::milliseconds(kChildrenWaitMs);
    while (process_state(child) != 'T' && !gone(child) && Clock::now() < deadline) {
      std::this_thread::sleep_for(kProcPollInterval);  // polling a bounded deadline
    }
  }
}

void PgServerProcess::resume() {
  LOCKSTEP_CHECK(running(), "resume a running server");
  for (pid_t child : children()) kill(child, SIGCONT);
  process_->continue_and_wait();
}

void PgServerProcess::crash() {
  if (!running()) return;
  const std::vector<pid_t> backends = children();
  if (process_->stopped()) resume();
  process_->signal(SIGQUIT);  // immediate shutdown: no checkpoint
  if (!process_->wait_exit_for_ms(options_.stop_timeout_ms)) {
    for (pid_t child : backends) kill(child, SIGKILL);
    process_->kill_and_reap();
  }
  wait_until_gone(backends);
}

void PgServerProcess::restart() {
  LOCKSTEP_CHECK(!dir_.empty(), "restart a server that was not stopped");
  crash();
  if (!start_on_port(port_)) {
    throw ServerStartError(fmt::format(
        "postgres could not restart: port {} was taken meanwhile:\n{}", port_, log_tail()));
  }
}

void PgServerProcess::stop() {
  if (running()) {
    const std::vector<pid_t> backends = children();
    if (process_->stopped()) resume();
    process_->signal(SIGINT);  // fast shutdown: ends every session, then a checkpoint
    if (!process_->wait_exit_for_ms(options_.stop_timeout_ms)) {
      for (pid_t child : backends) kill(child, SIGKILL);
      process_->kill_and_reap();
    }
    wait_until_gone(backends);
  }
  process_.reset();
  remove_server_dir(dir_);
}

}  // namespace lockstep::real
