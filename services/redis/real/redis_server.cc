#include "services/redis/real/redis_server.h"

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
#include "real/faketime.h"
#include "real/loopback.h"
#include "real/server_errors.h"
#include "real/server_files.h"
#include "services/redis/real/redis_ping.h"

namespace lockstep::real {
namespace {

constexpr int kPortAttempts = 5;
constexpr int64_t kPingTimeoutMs = 200;
constexpr auto kPollInterval = std::chrono::milliseconds(5);

std::vector<std::string> server_args(int port, const std::string& dir, Persistence persistence) {
  const bool aof = persistence != Persistence::none;
  return {"--port",
          std::to_string(port),
          "--bind",
          "127.0.0.1",
          "--dir",
          dir,
          "--save",
          "",
          "--appendonly",
          aof ? "yes" : "no",
          "--appendfsync",
          persistence == Persistence::always ? "always" : "everysec",
          "--daemonize",
          "no",
          "--protected-mode",
          "no",
          "--logfile",
          dir + "/redis.log"};
}

}  // namespace

Persistence persistence_from_name(std::string_view name) {
  if (name == "always") return Persistence::always;
  if (name == "everysec") return Persistence::everysec;
  return Persistence::none;
}

std::string_view to_string(Persistence persistence) {
  switch (persistence) {
    case Persistence::none: return "none";
    case Persistence::everysec: return "everysec";
    case Persistence::always: return "always";
  }
  return "?";
}

std::string RedisServerProcess::binary_path() {
  auto found = find_on_path("redis-server");
  if (!found) {
    throw ServerUnavailable("redis-server not found on PATH: apt-get install redis-server");
  }
  return *found;
}

RedisServerProcess::RedisServerProcess(RedisServerOptions options)
    : options_(std::move(options)),
      binary_(binary_path()),
      clock_offset_s_(options_.clock_offset_s) {
  LOCKSTEP_CHECK(options_.start_timeout_ms > 0 && options_.stop_timeout_ms > 0, "bounded waits");
  dir_ = make_server_dir("redis");
  try {
    if (uses_faketime())
      write_faketime_file(dir_ + "/faketime", faketime_spec(clock_offset_s_, options_.clock_rate));
    start_on_free_port();
  } catch (...) {
    stop();
    throw;
  }
}

RedisServerProcess::~RedisServerProcess() { stop(); }

bool RedisServerProcess::uses_faketime() const {
  return options_.clock_jumps || !options_.clock_rate.empty() || options_.clock_offset_s != 0;
}

bool RedisServerProcess::running() const { return process_ != nullptr && !process_->reaped(); }

std::string RedisServerProcess::endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

std::string RedisServerProcess::log_tail(size_t bytes_max) const {
  return tail_of_file(dir_ + "/redis.log", bytes_max) +
         tail_of_file(dir_ + "/output.log", bytes_max);
}

void RedisServerProcess::start_on_free_port() {
  for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
    if (start_on_port(free_loopback_port())) return;
  }
  throw ServerStartError("redis-server could not bind a free loopback port in " +
                         std::to_string(kPortAttempts) + " attempts:\n" + log_tail());
}

// Starts the server and polls PING until it answers, it exits, or start_timeout_ms pass.
bool RedisServerProcess::start_on_port(int port) {
  port_ = port;
  SpawnOptions spawn{.path = binary_,
                     .args = server_args(port, dir_, options_.persistence),
                     .output_path = dir_ + "/output.log"};
  if (uses_faketime()) spawn.extra_env = faketime_environment(dir_ + "/faketime");
  process_ = std::make_unique<ChildProcess>(spawn);
  pid_ = process_->pid();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.start_timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (redis_answers_ping(port, kPingTimeoutMs)) return true;
    if (process_->exited_now()) {
      if (log_tail().find("Address already in use") != std::string::npos) return false;
      throw ServerStartError("redis-server exited at start:\n" + log_tail());
    }
    std::this_thread::sleep_for(kPollInterval);  // polling a bounded deadline
  }
  process_->kill_and_reap();
  throw ServerStartError("redis-server did not answer PING on " + endpoint() + " within " +
                         std::to_string(options_.start_timeout_ms) + " ms:\n" + log_tail());
}

void RedisServerProcess::pause() {
  LOCKSTEP_CHECK(running(), "pause a running server");
  process_->stop_and_wait();
}

void RedisServerProcess::resume() {
  LOCKSTEP_CHECK(running(), "resume a running server");
  process_->continue_and_wait();
}

void RedisServerProcess::crash() {
  if (process_ != nullptr) process_->kill_and_reap();
}

void RedisServerProcess::restart() {
  LOCKSTEP_CHECK(!dir_.empty(), "restart a server that was not stopped");
  crash();
  if (!start_on_port(port_)) {
    throw ServerStartError("redis-server could not restart: port " + std::to_string(port_) +
                           " was taken meanwhile:\n" + log_tail());
  }
}

void RedisServerProcess::stop() {
  if (running()) process_->terminate(options_.stop_timeout_ms);
  process_.reset();
  remove_server_dir(dir_);
}

void RedisServerProcess::jump_clock_s(int64_t seconds) {
  LOCKSTEP_CHECK(uses_faketime(),
                 "start the server with a clock option (e.g. .clock_jumps = true)");
  LOCKSTEP_CHECK(!dir_.empty(), "jump the clock of a server that was not stopped");
  clock_offset_s_ += seconds;
  write_faketime_file(dir_ + "/faketime", faketime_spec(clock_offset_s_, options_.clock_rate));
}

}  // namespace lockstep::real
