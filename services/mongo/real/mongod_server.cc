#include "services/mongo/real/mongod_server.h"

#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <thread>
#include <vector>

#include "base/check.h"
#include "real/child_process.h"
#include "real/loopback.h"
#include "real/server_errors.h"
#include "real/server_files.h"
#include "services/mongo/adapter/mongoc_connection.h"

namespace lockstep::real {
namespace {

constexpr int kPortAttempts = 5;
constexpr int64_t kProbeTimeoutMs = 500;
constexpr auto kPollInterval = std::chrono::milliseconds(20);

std::vector<std::string> server_args(int port, const std::string& dir,
                                     const MongodOptions& options) {
  std::vector<std::string> args{"--port",
                                std::to_string(port),
                                "--bind_ip",
                                "127.0.0.1",
                                "--dbpath",
                                dir + "/db",
                                "--replSet",
                                "rs0",
                                "--logpath",
                                dir + "/mongod.log",
                                "--nounixsocket",
                                "--wiredTigerCacheSizeGB",
                                "0.25",
                                "--oplogSize",
                                "64"};
  if (options.ttl_monitor_sleep_secs > 0) {
    args.insert(args.end(), {"--setParameter", "ttlMonitorSleepSecs=" +
                                                   std::to_string(options.ttl_monitor_sleep_secs)});
  }
  return args;
}

// One probe on a fresh client: libmongoc's single-threaded client skips a server whose check
// failed for 5 s, so a client reused across polls would wait out that cooldown.
MongoResult probe(int port, const MongoDocument& command) {
  MongocConnection connection({.uri = "mongodb://127.0.0.1:" + std::to_string(port),
                               .connect_timeout_ms = kProbeTimeoutMs,
                               .socket_timeout_ms = kProbeTimeoutMs * 4,
                               .server_selection_timeout_ms = kProbeTimeoutMs,
                               .app_name = "lockstep-probe"});
  return connection.run_command("admin", command);
}

bool is_true(const MongoDocument& reply, const char* field) {
  return reply.contains(field) && reply[field].is_boolean() && reply[field].get<bool>();
}

}  // namespace

std::string MongodProcess::binary_path() {
  auto found = find_on_path("mongod");
  if (!found)
    throw ServerUnavailable(
        "no mongod on PATH; install MongoDB or set LOCKSTEP_MONGO_URI=mongodb://...");
  return *found;
}

MongodProcess::MongodProcess(MongodOptions options) : options_(options), binary_(binary_path()) {
  LOCKSTEP_CHECK(options_.start_timeout_ms > 0 && options_.stop_timeout_ms > 0, "bounded waits");
  dir_ = make_server_dir("mongod");
  try {
    std::filesystem::create_directories(dir_ + "/db");
    start_on_free_port();
    wait_until_primary();
  } catch (...) {
    stop();
    throw;
  }
}

MongodProcess::~MongodProcess() { stop(); }

bool MongodProcess::running() const { return process_ != nullptr && !process_->reaped(); }

std::string MongodProcess::uri() const { return "mongodb://127.0.0.1:" + std::to_string(port_); }

std::string MongodProcess::log_tail(size_t bytes_max) const {
  return tail_of_file(dir_ + "/mongod.log", bytes_max) +
         tail_of_file(dir_ + "/output.log", bytes_max);
}

void MongodProcess::start_on_free_port() {
  for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
    if (start_on_port(free_loopback_port())) return;
  }
  throw ServerStartError("mongod could not bind a free loopback port in " +
                         std::to_string(kPortAttempts) + " attempts:\n" + log_tail());
}

// Starts mongod and polls hello until it answers, it exits, or start_timeout_ms pass.
bool MongodProcess::start_on_port(int port) {
  port_ = port;
  process_ = std::make_unique<ChildProcess>(SpawnOptions{.path = binary_,
                                                         .args = server_args(port, dir_, options_),
                                                         .output_path = dir_ + "/output.log"});
  pid_ = process_->pid();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.start_timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (probe(port, MongoDocument{{"hello", 1}}).ok()) return true;
    if (process_->exited_now()) {
      const std::string log = log_tail(8000);
      if (log.find("Address already in use") != std::string::npos) return false;
      throw ServerStartError("mongod exited at start:\n" + log_tail());
    }
    std::this_thread::sleep_for(kPollInterval);  // polling a bounded deadline
  }
  process_->kill_and_reap();
  throw ServerStartError("mongod did not answer hello on " + uri() + " within " +
                         std::to_string(options_.start_timeout_ms) + " ms:\n" + log_tail());
}

// Initiates the one-member set (once; AlreadyInitialized after a restart is fine) and polls hello
// until the member is a writable primary.
void MongodProcess::wait_until_primary() {
  const MongoDocument initiate{
      {"replSetInitiate",
       {{"_id", "rs0"},
        {"members",
         MongoDocument::array({{{"_id", 0}, {"host", "127.0.0.1:" + std::to_string(port_)}}})}}}};
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.start_timeout_ms);
  bool initiated = false;
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    const MongoResult hello = probe(port_, MongoDocument{{"hello", 1}});
    if (hello.ok() && is_true(hello.reply, "isWritablePrimary")) return;
    if (hello.ok() && !initiated && !hello.reply.contains("setName")) {
      const MongoResult result = probe(port_, initiate);
      constexpr int kAlreadyInitialized = 23;
      if (result.ok() &&
          (result.reply["ok"] == 1 || result.reply.value("code", 0) == kAlreadyInitialized)) {
        initiated = true;
      } else {
        last = result.ok() ? result.reply.dump() : result.message;
      }
    } else if (hello.ok() && hello.reply.contains("setName")) {
      initiated = true;  // a restart: the set config is on disk, an election is under way
    } else if (!hello.ok()) {
      last = hello.message;
    }
    if (process_->exited_now())
      throw ServerStartError("mongod exited before it became primary:\n" + log_tail());
    std::this_thread::sleep_for(kPollInterval);  // polling a bounded deadline
  }
  throw ServerStartError("mongod on " + uri() + " did not become a writable primary within " +
                         std::to_string(options_.start_timeout_ms) + " ms (" + last + "):\n" +
                         log_tail());
}

void MongodProcess::pause() {
  LOCKSTEP_CHECK(running(), "pause a running server");
  process_->stop_and_wait();
}

void MongodProcess::resume() {
  LOCKSTEP_CHECK(running(), "resume a running server");
  process_->continue_and_wait();
}

void MongodProcess::crash() {
  if (process_ != nullptr) process_->kill_and_reap();
}

void MongodProcess::restart() {
  LOCKSTEP_CHECK(!dir_.empty(), "restart a server that was not stopped");
  crash();
  if (!start_on_port(port_)) {
    throw ServerStartError("mongod could not restart: port " + std::to_string(port_) +
                           " was taken meanwhile:\n" + log_tail());
  }
  wait_until_primary();
}

void MongodProcess::stop() {
  if (running()) process_->terminate(options_.stop_timeout_ms);
  process_.reset();
  remove_server_dir(dir_);
}

}  // namespace lockstep::real
