#include "services/ext/driver/sim_driver.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/check.h"
#include "base/printable.h"
#include "real/process_registry.h"
#include "services/ext/driver/driver_spawn.h"

namespace lockstep::ext {

namespace {

using json = nlohmann::json;

std::atomic<uint64_t> exchanges_begun{0};

int64_t real_monotonic_ms() {  // only for the hang guard's deadline
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int connection_id(const json& value) {
  if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > 1'000'000) {
    throw std::invalid_argument("a connection id is an integer in [1, 1000000]");
  }
  return value.get<int>();
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t b0 = static_cast<unsigned char>(bytes[i]);
    const uint32_t b1 = i + 1 < bytes.size() ? static_cast<unsigned char>(bytes[i + 1]) : 0;
    const uint32_t b2 = i + 2 < bytes.size() ? static_cast<unsigned char>(bytes[i + 2]) : 0;
    const uint32_t n = (b0 << 16) | (b1 << 8) | b2;
    out += kBase64[(n >> 18) & 63];
    out += kBase64[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kBase64[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kBase64[n & 63] : '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const int pad = (text[i + 3] == '=' ? 1 : 0) + (text[i + 2] == '=' ? 1 : 0);
    if (pad > 0 && i + 4 != text.size()) return std::nullopt;
    uint32_t n = 0;
    for (size_t j = 0; j < 4; ++j) {
      const int v = j >= 4 - static_cast<size_t>(pad) ? 0 : value(text[i + j]);
      if (v < 0) return std::nullopt;
      n = (n << 6) | static_cast<uint32_t>(v);
    }
    out += static_cast<char>((n >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((n >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(n & 0xff);
  }
  return out;
}

SimDriverProcess::SimDriverProcess(SimDriverOptions options) : options_(std::move(options)) {
  const SpawnedDriver spawned = spawn_driver(options_.program, options_.args, true);
  pid_ = spawned.pid;
  to_driver_fd_ = spawned.to_driver_fd;
  from_driver_fd_ = spawned.from_driver_fd;
  stderr_fd_ = spawned.stderr_fd;
}

SimDriverProcess::~SimDriverProcess() {
  kill();
  for (int* fd : {&to_driver_fd_, &from_driver_fd_, &stderr_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void SimDriverProcess::kill() {
  if (reaped_ || pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  real::unregister_child(pid_);
  if (failed_.empty()) failed_ = fmt::format("driver {} (pid {}) was killed", options_.name, pid_);
}

bool SimDriverProcess::reset() {
  if (!failed_.empty()) return false;
  try {
    const SimExchange result = exchange(R"({"op":"reset"})", SimNow{});
    if (result.lines.empty() && !result.next_timer_ns) return true;
    fail(kRuleExchange, "answered reset with more than an idle line");
  } catch (const SimDriverError&) {
    // killed by fail()
  }
  return false;
}

void SimDriverProcess::abandon() {
  if (!reaped_ && pid_ > 0) real::unregister_child(pid_);
  reaped_ = true;  // not ours to reap
  for (int* fd : {&to_driver_fd_, &from_driver_fd_, &stderr_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  if (failed_.empty())
    failed_ = fmt::format("driver {} (pid {}) was left to its parent", options_.name, pid_);
}

void SimDriverProcess::drain_stderr() {
  char chunk[4096];
  for (int i = 0; i < 64; ++i) {  // bounded: what is there now, in at most 256 KiB
    const ssize_t n = read(stderr_fd_, chunk, sizeof chunk);
    if (n <= 0) return;
    stderr_tail_.append(chunk, static_cast<size_t>(n));
    if (stderr_tail_.size() > options_.stderr_tail_bytes) {
      stderr_tail_.erase(0, stderr_tail_.size() - options_.stderr_tail_bytes);
    }
  }
}

void SimDriverProcess::fail(const ProtocolRule& rule, const std::string& what) {
  drain_stderr();
  failed_ = fmt::format("driver {} (pid {}) {}; {}", options_.name, pid_, broke(rule, what),
                        stderr_tail_.empty() ? "its stderr was empty"
                                             : "its stderr ends: " + printable(stderr_tail_));
  kill();
  throw SimDriverError(failed_);
}

uint64_t SimDriverProcess::exchanges_total() { return exchanges_begun.load(); }

SimExchange SimDriverProcess::exchange(const std::string& fields_json, SimNow now) {
  if (!failed_.empty()) throw SimDriverError(failed_);
  exchanges_begun.fetch_add(1, std::memory_order_relaxed);
  json line = json::parse(fields_json);
  line["now"] = {{"wall_ms", now.wall_ms}, {"mono_ns", std::to_string(now.mono_ns)}};
  const std::string text = line.dump() + "\n";
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = send(to_driver_fd_, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(kRuleStayUp, "closed its stdin");
    done += static_cast<size_t>(n);
  }
  SimExchange result;
  const int64_t deadline_ms = real_monotonic_ms() + options_.exchange_deadline_ms;
  char chunk[65536];
  for (;;) {
    // Every complete line already read, in order.
    size_t start = 0;
    for (size_t nl = out_buffer_.find('\n'); nl != std::string::npos;
         nl = out_buffer_.find('\n', start)) {
      const std::string raw = out_buffer_.substr(start, nl - start);
      start = nl + 1;
      if (result.lines.size() >= kExchangeLinesMax) {
        fail(kRuleExchange,
             fmt::format("wrote more than {} lines in one exchange", kExchangeLinesMax));
      }
      json object;
      try {
        object = json::parse(raw);
      } catch (const json::exception&) {
        fail(kRuleLines, fmt::format("wrote a line that is not JSON: {}", printable(raw, 200)));
      }
      if (!object.is_object())
        fail(kRuleLines, fmt::format("wrote a line that is no object: {}", printable(raw, 200)));
      try {
        if (object.contains("idle")) {
          const json& next = object.at("next_timer_ns");
          if (!next.is_null()) {
            // A monotonic reading: a decimal string of digits only ("-1", "12abc" refused).
            const std::string digits = next.is_string() ? next.get<std::string>() : "";
            int64_t ns = -1;
            const auto [end, ec] =
                std::from_chars(digits.data(), digits.data() + digits.size(), ns);
            if (digits.empty() || digits[0] == '-' || ec != std::errc() ||
                end != digits.data() + digits.size()) {
              throw std::invalid_argument("next_timer_ns is not a decimal string of nanoseconds");
            }
            result.next_timer_ns = ns;
          }
          out_buffer_.erase(0, start);
          if (out_buffer_.find('\n') != std::string::npos) {
            fail(kRuleExchange, "wrote a line after its idle line");
          }
          return result;
        }
        if (object.contains("connect")) {
          result.lines.emplace_back(SimConnect{.conn = connection_id(object.at("connect")),
                                               .server = object.at("server").get<int>()});
          continue;
        }
        if (object.contains("send")) {
          std::optional<std::string> bytes = base64_decode(object.at("data").get<std::string>());
          if (!bytes) throw std::invalid_argument("data is not base64");
          result.lines.emplace_back(
              SimSend{.conn = connection_id(object.at("send")), .bytes = std::move(*bytes)});
          continue;
        }
        if (object.contains("close")) {
          result.lines.emplace_back(SimClose{.conn = connection_id(object.at("close"))});
          continue;
        }
      } catch (const std::exception& e) {
        fail(kRuleFields,
             fmt::format("wrote a malformed line ({}): {}", e.what(), printable(raw, 200)));
      }
      Line decoded = decode_line(raw);
      if (auto* error = std::get_if<DecodeError>(&decoded)) {
        fail(rule_of_decode_error(error->message),
             fmt::format("wrote a malformed line ({}): {}", error->message, printable(raw, 200)));
      }
      if (auto* ready = std::get_if<Ready>(&decoded)) {
        if (ready->protocol != 2) {  // say so now: a version 1 driver never writes `idle`
          fail(
              kRuleReady,
              fmt::format("speaks protocol {}; --world sim needs a co-simulated driver, protocol 2 "
                          "(services/ext/PROTOCOL.md, \"Version 2\"), or run it with --world real",
                          ready->protocol));
        }
        result.lines.emplace_back(std::move(*ready));
      }
      if (auto* response = std::get_if<Response>(&decoded)) {
        result.lines.emplace_back(std::move(*response));
      }
      if (auto* event = std::get_if<Event>(&decoded)) result.lines.emplace_back(std::move(*event));
    }
    out_buffer_.erase(0, start);
    if (out_buffer_.size() > kLineMaxBytes) {
      fail(kRuleLines, fmt::format("wrote a line longer than {} bytes", kLineMaxBytes));
    }
    const int64_t left_ms = deadline_ms - real_monotonic_ms();
    if (left_ms <= 0) {
      fail(kRuleInTime, fmt::format("did not finish an exchange within {} ms of real time",
                                    options_.exchange_deadline_ms));
    }
    pollfd fds[2] = {{.fd = from_driver_fd_, .events = POLLIN, .revents = 0},
                     {.fd = stderr_fd_, .events = POLLIN, .revents = 0}};
    const int ready = poll(fds, 2, static_cast<int>(std::min<int64_t>(left_ms, 1000)));
    if (ready < 0 && errno != EINTR) fail(kRuleStayUp, "could not be polled");
    if ((fds[1].revents & POLLIN) != 0) drain_stderr();
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t n = read(from_driver_fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int status = 0;
        for (int i = 0; i < 100 && !reaped_; ++i) {  // bounded: it closed stdout, it is exiting
          if (waitpid(pid_, &status, WNOHANG) == pid_) {
            reaped_ = true;
            real::unregister_child(pid_);
            break;
          }
          poll(nullptr, 0, 2);
        }
        fail(kRuleStayUp, reaped_ && WIFEXITED(status)
                              ? fmt::format("exited with code {}", WEXITSTATUS(status))
                              : std::string("closed its stdout"));
      }
      out_buffer_.append(chunk, static_cast<size_t>(n));
    }
  }
}

}  // namespace lockstep::ext
