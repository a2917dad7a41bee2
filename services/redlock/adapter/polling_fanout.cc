#include "services/redlock/adapter/polling_fanout.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/check.h"
#include "services/redis/adapter/hiredis_connection.h"

namespace lockstep {

namespace {

using SteadyClock = std::chrono::steady_clock;

// One request's progress on its link during a round.
enum class Phase { idle, writing, reading, done };

}  // namespace

struct PollingFanout::Link {
  FanoutEndpoint endpoint;
  redisContext* context = nullptr;
  std::string out;  // the formatted request
  size_t written = 0;
  bool connecting = false;  // a non-blocking connect is in progress on context->fd
  Phase phase = Phase::idle;
  RedisResult result;

  ~Link() { close(); }
  void close() {
    if (context != nullptr) redisFree(context);
    context = nullptr;
  }
  void fail(IoStatus status, std::string message) {
    close();
    result = {.status = status, .message = std::move(message)};
    phase = Phase::done;
  }
  std::string name() const { return endpoint.host + ":" + std::to_string(endpoint.port); }
};

PollingFanout::PollingFanout(PollingFanoutOptions options) {
  LOCKSTEP_CHECK(!options.endpoints.empty(), "a fan-out needs at least one endpoint");
  for (FanoutEndpoint& e : options.endpoints) {
    links_.push_back(std::make_unique<Link>());
    links_.back()->endpoint = std::move(e);
  }
}

PollingFanout::~PollingFanout() = default;

std::string PollingFanout::endpoint(size_t index) const { return links_.at(index)->name(); }

namespace {

// Starts opening the link if it has no connection: a non-blocking connect (hiredis sets
// TCP_NODELAY), finished by on_connectable under the round's deadline, so a node whose port never
// answers costs the round nothing beyond that deadline. False (and the link failed) if the connect
// failed at once.
bool ensure_connecting(PollingFanout::Link& link) {
  if (link.context != nullptr) return true;
  link.context = redisConnectNonBlock(link.endpoint.host.c_str(), link.endpoint.port);
  if (link.context == nullptr || link.context->err != 0) {
    const std::string why = link.context != nullptr ? link.context->errstr : "out of memory";
    link.fail(IoStatus::connection_error, "connect to " + link.name() + ": " + why);
    return false;
  }
  bound_reply_arrays(link.context->reader);
  link.connecting = true;
  return true;
}

void start_request(PollingFanout::Link& link, const std::vector<std::string>& argv) {
  link.result = {};
  link.written = 0;
  if (argv.empty()) {
    link.result = not_sent_result();
    link.phase = Phase::done;
    return;
  }
  if (!ensure_connecting(link)) return;
  std::vector<const char*> args;
  std::vector<size_t> lengths;
  for (const std::string& a : argv) {
    args.push_back(a.data());
    lengths.push_back(a.size());
  }
  char* command = nullptr;
  const int length =
      redisFormatCommandArgv(&command, static_cast<int>(args.size()), args.data(), lengths.data());
  LOCKSTEP_CHECK(length > 0 && command != nullptr, "hiredis could not format a command");
  link.out.assign(command, static_cast<size_t>(length));
  redisFreeCommand(command);
  link.phase = Phase::writing;
}

// The socket of a connecting link became writable: the connect finished, well or not.
void on_connectable(PollingFanout::Link& link) {
  int error = 0;
  socklen_t length = sizeof(error);
  if (getsockopt(link.context->fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
  if (error != 0) {
    link.fail(IoStatus::connection_error,
              "connect to " + link.name() + ": " + std::strerror(error));
    return;
  }
  link.connecting = false;
}

void on_writable(PollingFanout::Link& link) {
  if (link.connecting) {
    on_connectable(link);
    if (link.connecting || link.phase == Phase::done) return;
  }
  const ssize_t n = ::send(link.context->fd, link.out.data() + link.written,
                           link.out.size() - link.written, MSG_NOSIGNAL);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
    link.fail(IoStatus::connection_error, "write to " + link.name() + ": " + std::strerror(errno));
    return;
  }
  link.written += static_cast<size_t>(n);
  if (link.written == link.out.size()) link.phase = Phase::reading;
}

void on_readable(PollingFanout::Link& link) {
  std::array<char, size_t{16} * 1024> buffer;  // not zeroed: recv fills what it reports
  const ssize_t n = ::recv(link.context->fd, buffer.data(), buffer.size(), 0);
  if (n == 0)
    return link.fail(IoStatus::connection_lost,
                     "connection to " + link.name() + " closed by the server");
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
    return link.fail(IoStatus::connection_lost,
                     "read from " + link.name() + ": " + std::strerror(errno));
  }
  if (redisReaderFeed(link.context->reader, buffer.data(), static_cast<size_t>(n)) != REDIS_OK) {
    return link.fail(IoStatus::connection_lost, "protocol error from " + link.name());
  }
  void* reply = nullptr;
  if (redisReaderGetReply(link.context->reader, &reply) != REDIS_OK) {
    return link.fail(IoStatus::connection_lost, "protocol error from " + link.name());
  }
  if (reply == nullptr) return;  // a partial reply: wait for more
  link.result = {.reply = convert_hiredis_reply(*static_cast<redisReply*>(reply))};
  freeReplyObject(reply);
  link.phase = Phase::done;
}

}  // namespace

std::vector<RedisResult> PollingFanout::command_all(
    const std::vector<std::vector<std::string>>& argvs, int64_t timeout_us) {
  LOCKSTEP_CHECK(argvs.size() == links_.size(), "one argv per connection");
  LOCKSTEP_CHECK(timeout_us > 0, "the fan-out timeout must be positive");
  const auto deadline = SteadyClock::now() + std::chrono::microseconds(timeout_us);
  for (size_t i = 0; i < links_.size(); ++i) {
    start_request(*links_[i], argvs[i]);
    // A fresh request on an open connection fits the socket buffer: write it now rather than
    // after a poll round. A connecting link waits for poll to say the connect finished.
    if (links_[i]->phase == Phase::writing && !links_[i]->connecting) on_writable(*links_[i]);
  }
  std::vector<pollfd> fds;
  std::vector<Link*> polled;
  while (true) {
    fds.clear();
    polled.clear();
    for (auto& link : links_) {
      if (link->phase != Phase::writing && link->phase != Phase::reading) continue;
      const short events = link->phase == Phase::writing ? POLLOUT : POLLIN;
      fds.push_back({.fd = link->context->fd, .events = events, .revents = 0});
      polled.push_back(link.get());
    }
    if (fds.empty()) break;
    const auto left =
        std::chrono::duration_cast<std::chrono::microseconds>(deadline - SteadyClock::now())
            .count();
    if (left <= 0) break;
    const timespec wait{.tv_sec = static_cast<time_t>(left / 1'000'000),
                        .tv_nsec = static_cast<long>((left % 1'000'000) * 1000)};
    const int ready = ::ppoll(fds.data(), fds.size(), &wait, nullptr);
    if (ready < 0 && errno != EINTR) LOCKSTEP_CHECK(false, "poll failed");
    for (size_t i = 0; ready > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      if (polled[i]->phase == Phase::writing)
        on_writable(*polled[i]);
      else
        on_readable(*polled[i]);
    }
  }
  // At the deadline, replies that already arrived are read rather than thrown away with their
  // connection: a node that answered in time counts even if poll woke too late to see it.
  for (auto& link : links_) {
    if (link->phase == Phase::reading) on_readable(*link);
  }
  std::vector<RedisResult> results;
  results.reserve(links_.size());
  for (auto& link : links_) {
    // io_status.h's rule: only a request written whole may have been applied.
    if (link->phase == Phase::reading) {
      link->fail(IoStatus::timeout,
                 "no reply from " + link->name() + " within " + std::to_string(timeout_us) + "us");
    } else if (link->phase != Phase::done) {
      link->fail(IoStatus::connection_error, "could not send to " + link->name() + " within " +
                                                 std::to_string(timeout_us) + "us");
    }
    link->phase = Phase::idle;
    results.push_back(std::move(link->result));
  }
  return results;
}

}  // namespace lockstep
