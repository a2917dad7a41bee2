#include "services/ext/driver/driver_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <system_error>

#include <fmt/format.h>

#include "base/check.h"
#include "base/printable.h"
#include "real/process_registry.h"
#include "services/ext/driver/driver_spawn.h"

namespace lockstep::ext {

namespace {

constexpr int64_t kShutdownWaitMs = 1000;
constexpr int kPollIntervalMs = 50;

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

std::string_view to_string(DriverFailure failure) {
  switch (failure) {
    case DriverFailure::none: return "none";
    case DriverFailure::died: return "died";
    case DriverFailure::hung: return "hung";
    case DriverFailure::malformed: return "malformed";
  }
  return "died";
}

DriverProcess::DriverProcess(DriverOptions options) : options_(std::move(options)) {
  const int64_t spawned_ns = monotonic_ns();
  const SpawnedDriver spawned = spawn_driver(options_.program, options_.args, false);
  pid_ = spawned.pid;
  to_driver_fd_ = spawned.to_driver_fd;
  from_driver_fd_ = spawned.from_driver_fd;
  stderr_fd_ = spawned.stderr_fd;
  reader_ = std::thread([this] { read_loop(); });

  std::string problem;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    const bool came =
        changed_.wait_for(lock, std::chrono::milliseconds(options_.start_deadline_ms),
                          [this] { return have_ready_ || failure_ != DriverFailure::none; });
    if (failure_ != DriverFailure::none) {
      problem = failure_detail_;  // without the name, said below
    } else if (!came) {
      problem =
          broke(kRuleReady, fmt::format("no ready line within {} ms", options_.start_deadline_ms));
    } else if (ready_.protocol != kProtocolVersion) {
      problem = broke(kRuleReady,
                      fmt::format("speaks protocol {}, not {}", ready_.protocol, kProtocolVersion));
    } else if (ready_.now_ns < spawned_ns || ready_.now_ns > ready_received_ns_) {
      problem = broke(kRuleReady, fmt::format("its clock read {} ns, outside [{}, {}]: it does "
                                              "not read CLOCK_MONOTONIC",
                                              ready_.now_ns, spawned_ns, ready_received_ns_));
    }
    if (!problem.empty()) problem = fmt::format("{}{}", problem, tail_locked());
  }
  if (!problem.empty()) {
    teardown();
    throw DriverStartError(
        fmt::format("driver {} (pid {}) did not start: {}", options_.name, pid_, problem));
  }
}

DriverProcess::~DriverProcess() { teardown(); }

void DriverProcess::teardown() {
  if (!reader_.joinable()) return;
  bool polite = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
    polite = have_ready_ && failure_ == DriverFailure::none;
  }
  resume();
  if (polite) {
    const std::string line = encode({.id = 0, .op = Op::shutdown}) + "\n";
    {
      std::lock_guard<std::mutex> write_lock(write_mutex_);
      (void)send(to_driver_fd_, line.data(), line.size(), MSG_NOSIGNAL);
    }
    const int64_t deadline_ns = monotonic_ns() + kShutdownWaitMs * 1'000'000;
    while (monotonic_ns() < deadline_ns) {
      {
        std::lock_guard<std::mutex> wait_lock(wait_mutex_);
        if (reap_now()) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling a bounded deadline
    }
  }
  kill();
  reader_.join();
  close_fd(to_driver_fd_);
  close_fd(from_driver_fd_);
  close_fd(stderr_fd_);
}

bool DriverProcess::reap_now() {
  if (reaped_) return true;
  int status = 0;
  const pid_t result = waitpid(pid_, &status, WNOHANG);
  if ((result == pid_ && (WIFEXITED(status) || WIFSIGNALED(status))) ||
      (result < 0 && errno == ECHILD)) {
    reaped_ = true;
    exit_status_ = status;
    real::unregister_child(pid_);
  }
  return reaped_;
}

std::string DriverProcess::exit_description() {
  std::lock_guard<std::mutex> wait_lock(wait_mutex_);
  if (!reaped_) return "still running";
  if (WIFEXITED(exit_status_)) return fmt::format("exited with code {}", WEXITSTATUS(exit_status_));
  if (WIFSIGNALED(exit_status_)) return fmt::format("killed by signal {}", WTERMSIG(exit_status_));
  return "gone";
}

void DriverProcess::stop() {
  std::lock_guard<std::mutex> wait_lock(wait_mutex_);
  if (reaped_ || stopped_) return;
  ::kill(pid_, SIGSTOP);
  const int64_t deadline_ns = monotonic_ns() + 5'000'000'000;
  while (monotonic_ns() < deadline_ns) {
    int status = 0;
    const pid_t result = waitpid(pid_, &status, WUNTRACED | WNOHANG);
    if (result == pid_ && WIFSTOPPED(status)) {
      stopped_ = true;
      return;
    }
    if (result == pid_ && (WIFEXITED(status) || WIFSIGNALED(status))) {
      reaped_ = true;
      exit_status_ = status;
      real::unregister_child(pid_);
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // polling a bounded deadline
  }
  LOCKSTEP_CHECK(false, "the kernel reports a driver stopped within 5 s");
}

void DriverProcess::resume() {
  std::lock_guard<std::mutex> wait_lock(wait_mutex_);
  if (reaped_ || !stopped_) return;
  ::kill(pid_, SIGCONT);
  const int64_t deadline_ns = monotonic_ns() + 5'000'000'000;
  while (monotonic_ns() < deadline_ns) {
    int status = 0;
    const pid_t result = waitpid(pid_, &status, WCONTINUED | WNOHANG);
    if (result == pid_ && WIFCONTINUED(status)) break;
    if (result == pid_ && (WIFEXITED(status) || WIFSIGNALED(status))) {
      reaped_ = true;
      exit_status_ = status;
      real::unregister_child(pid_);
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // polling a bounded deadline
  }
  stopped_ = false;
}

void DriverProcess::kill() {
  {
    std::lock_guard<std::mutex> wait_lock(wait_mutex_);
    if (!reaped_) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      reaped_ = true;
      exit_status_ = status;
      real::unregister_child(pid_);
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  fail_locked(DriverFailure::died, nullptr, "killed by the harness");
}

DriverFailure DriverProcess::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

std::string DriverProcess::stderr_tail() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stderr_tail_;
}

std::string DriverProcess::tail_locked() const {
  if (stderr_tail_.empty()) return "; its stderr was empty";
  return fmt::format("; its stderr ends: {}", printable(stderr_tail_));
}

void DriverProcess::fail_locked(DriverFailure failure, const ProtocolRule* rule,
                                std::string message) {
  if (failure_ != DriverFailure::none) return;  // the first failure is the one that counts
  failure_ = failure;
  const std::string what = fmt::format("{}: {}", to_string(failure), message);
  failure_detail_ = rule ? broke(*rule, what) : what;
  failure_message_ = fmt::format("driver {} (pid {}) {}", options_.name, pid_, failure_detail_);
  changed_.notify_all();
}

CallResult DriverProcess::call(Request request) {
  CallResult result;
  std::unique_lock<std::mutex> lock(mutex_);
  if (failure_ != DriverFailure::none) {
    return {.failure = failure_, .message = failure_message_ + tail_locked()};
  }
  const int64_t id = next_id_++;
  request.id = id;
  pending_.emplace(id, std::nullopt);
  const std::string line = encode(request) + "\n";
  lock.unlock();
  result.sent_ns = monotonic_ns();
  bool written = true;
  {
    std::lock_guard<std::mutex> write_lock(write_mutex_);
    size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = send(to_driver_fd_, line.data() + done, line.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        written = false;
        break;
      }
      done += static_cast<size_t>(n);
    }
  }
  lock.lock();
  if (!written) fail_locked(DriverFailure::died, &kRuleStayUp, "its stdin is closed");
  const bool answered = changed_.wait_for(
      lock, std::chrono::milliseconds(options_.request_deadline_ms),
      [this, id] { return pending_.at(id).has_value() || failure_ != DriverFailure::none; });
  result.received_ns = monotonic_ns();
  std::optional<Response> response = std::move(pending_.at(id));
  pending_.erase(id);
  if (response) {
    result.response = std::move(*response);
    return result;
  }
  if (!answered) {
    fail_locked(DriverFailure::hung, &kRuleInTime,
                fmt::format("no answer to {} within {} ms", to_string(request.op),
                            options_.request_deadline_ms));
  }
  result.failure = failure_;
  result.message = failure_message_ + tail_locked();
  return result;
}

void DriverProcess::handle_line(const std::string& line) {
  Line decoded = decode_line(line);
  if (auto* event = std::get_if<Event>(&decoded)) {
    if (options_.on_event) options_.on_event(*event);
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto* error = std::get_if<DecodeError>(&decoded)) {
    return fail_locked(DriverFailure::malformed, &rule_of_decode_error(error->message),
                       fmt::format("{} in line {}", error->message, printable(line, 200)));
  }
  if (auto* ready = std::get_if<Ready>(&decoded)) {
    if (have_ready_)
      return fail_locked(DriverFailure::malformed, &kRuleReady, "a second ready line");
    ready_ = std::move(*ready);
    ready_received_ns_ = monotonic_ns();
    have_ready_ = true;
    changed_.notify_all();
    return;
  }
  Response& response = std::get<Response>(decoded);
  if (!have_ready_)
    return fail_locked(DriverFailure::malformed, &kRuleReady, "a response before the ready line");
  auto it = pending_.find(response.id);
  if (it == pending_.end() || it->second.has_value()) {
    return fail_locked(DriverFailure::malformed, &kRuleOneAnswer,
                       fmt::format("a response to request {}, which is not waiting "
                                   "for one: {}",
                                   response.id, printable(line, 200)));
  }
  it->second = std::move(response);
  changed_.notify_all();
}

void DriverProcess::read_loop() {
  std::string out_buffer;
  bool out_open = true;
  bool err_open = true;
  char chunk[8192];
  // Reads after the driver was reaped: its pipes may stay open in a process it left behind (a
  // background child holding its stdout), which must not keep lockstep waiting for their end.
  constexpr int kReadsAfterExitMax = 64;
  int reads_after_exit = 0;
  while (out_open || err_open) {
    pollfd fds[2] = {{.fd = out_open ? from_driver_fd_ : -1, .events = POLLIN, .revents = 0},
                     {.fd = err_open ? stderr_fd_ : -1, .events = POLLIN, .revents = 0}};
    const int ready = poll(fds, 2, kPollIntervalMs);
    if (ready < 0 && errno != EINTR) break;
    bool dead = false;
    {
      std::lock_guard<std::mutex> wait_lock(wait_mutex_);
      dead = reap_now();
    }
    if (dead && (ready <= 0 || ++reads_after_exit > kReadsAfterExitMax)) {
      // Its output ends with it: what is still open belongs to whatever it left running.
      if (out_open) {
        const std::string how = exit_description();
        std::lock_guard<std::mutex> lock(mutex_);
        fail_locked(DriverFailure::died, closing_ ? nullptr : &kRuleStayUp,
                    closing_ ? "shut down"
                             : fmt::format("exited ({}) while a process it left kept its stdout "
                                           "open",
                                           how));
      }
      break;
    }
    if (ready <= 0) continue;
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t n = read(stderr_fd_, chunk, sizeof chunk);
      if (n <= 0) {
        err_open = n < 0 && errno == EINTR;
      } else {
        std::lock_guard<std::mutex> lock(mutex_);
        stderr_tail_.append(chunk, static_cast<size_t>(n));
        if (stderr_tail_.size() > options_.stderr_tail_bytes) {
          stderr_tail_.erase(0, stderr_tail_.size() - options_.stderr_tail_bytes);
        }
      }
    }
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t n = read(from_driver_fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        out_open = false;
        // Its stdout closed: it is exiting. Give it a moment to be reaped for the message.
        for (int i = 0; i < 20; ++i) {
          {
            std::lock_guard<std::mutex> wait_lock(wait_mutex_);
            if (reap_now()) break;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(10));  // bounded: 200 ms
        }
        const std::string how = exit_description();
        std::lock_guard<std::mutex> lock(mutex_);
        if (closing_) {
          fail_locked(DriverFailure::died, nullptr, "shut down");
        } else {
          fail_locked(DriverFailure::died, &kRuleStayUp,
                      fmt::format("closed its stdout ({})", how));
        }
        continue;
      }
      out_buffer.append(chunk, static_cast<size_t>(n));
      size_t start = 0;
      for (size_t nl = out_buffer.find('\n'); nl != std::string::npos;
           nl = out_buffer.find('\n', start)) {
        handle_line(out_buffer.substr(start, nl - start));
        start = nl + 1;
      }
      out_buffer.erase(0, start);
      if (out_buffer.size() > kLineMaxBytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        fail_locked(DriverFailure::malformed, &kRuleLines,
                    fmt::format("a line longer than {} bytes", kLineMaxBytes));
        out_buffer.clear();
      }
    }
  }
}

}  // namespace lockstep::ext
