#include "real/tcp_proxy.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "base/check.h"
#include "real/loopback.h"

namespace lockstep::real {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr size_t kReadChunkBytes = size_t{16} * 1024;
constexpr int kPollTimeoutMaxMs = 1000;
constexpr auto kControlTimeout = std::chrono::seconds(5);

size_t index_of(Direction direction) { return direction == Direction::to_upstream ? 0 : 1; }

struct Faults {
  std::array<int64_t, 2> delay_ms{};
  std::array<bool, 2> hold{};
};

struct Chunk {
  SteadyClock::time_point read_at;
  std::string bytes;
  size_t sent = 0;
};

// One direction of one connection: bytes read from the source, waiting to be written.
struct Pipe {
  std::deque<Chunk> queue;
  size_t queued_bytes = 0;
  bool source_eof = false;
};

struct Connection {
  Fd client;
  Fd upstream;
  std::array<Pipe, 2> pipes;  // [0] client -> upstream, [1] upstream -> client
  bool closed = false;

  int source(size_t direction) const { return direction == 0 ? client.get() : upstream.get(); }
  int destination(size_t direction) const { return direction == 0 ? upstream.get() : client.get(); }
};

void close_with_reset(Connection& connection) {
  const linger abort_on_close{.l_onoff = 1, .l_linger = 0};
  for (const Fd* fd : {&connection.client, &connection.upstream}) {
    if (fd->valid())
      setsockopt(fd->get(), SOL_SOCKET, SO_LINGER, &abort_on_close, sizeof(abort_on_close));
  }
  connection.closed = true;
}

}  // namespace

class TcpProxy::Loop {
 public:
  explicit Loop(TcpProxyOptions options);
  ~Loop();
  int port() const { return port_; }
  size_t connection_count() const { return connection_count_.load(); }
  void control(const std::function<void(Faults&)>& change, bool reset_connections);

 private:
  void run();
  void wake();
  bool apply_control();
  void accept_new();
  std::vector<pollfd> poll_set() const;
  int poll_timeout_ms() const;
  void service(Connection& connection, const pollfd& client_poll, const pollfd& upstream_poll);
  void read_into(Connection& connection, size_t direction);
  void flush(Connection& connection, size_t direction);
  void remove_closed();

  TcpProxyOptions options_;
  int port_ = 0;
  Fd listener_;
  Fd wake_read_;
  Fd wake_write_;

  std::mutex mutex_;
  std::condition_variable applied_;
  Faults requested_faults_;       // guarded by mutex_
  bool reset_requested_ = false;  // guarded by mutex_
  bool stopping_ = false;         // guarded by mutex_
  uint64_t requested_epoch_ = 0;  // guarded by mutex_
  uint64_t applied_epoch_ = 0;    // guarded by mutex_

  // Owned by the proxy thread.
  Faults faults_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::atomic<size_t> connection_count_{0};
  std::thread thread_;
};

TcpProxy::Loop::Loop(TcpProxyOptions options) : options_(options) {
  LOCKSTEP_CHECK(options_.upstream_port > 0 && options_.upstream_port < 65536, "an upstream port");
  LOCKSTEP_CHECK(options_.buffer_bytes > 0 && options_.connections_max > 0,
                 "bounded, usable limits");
  listener_ = listen_loopback(port_);
  std::array<int, 2> fds{};
  if (pipe2(fds.data(), O_NONBLOCK | O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe2");
  wake_read_ = Fd(fds[0]);
  wake_write_ = Fd(fds[1]);
  thread_ = std::thread([this] { run(); });
}

TcpProxy::Loop::~Loop() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake();
  thread_.join();
}

void TcpProxy::Loop::wake() {
  const char byte = 1;
  [[maybe_unused]] const ssize_t ignored =
      write(wake_write_.get(), &byte, 1);  // a full pipe wakes too
}

void TcpProxy::Loop::control(const std::function<void(Faults&)>& change, bool reset_connections) {
  std::unique_lock lock(mutex_);
  change(requested_faults_);
  reset_requested_ = reset_requested_ || reset_connections;
  const uint64_t epoch = ++requested_epoch_;
  lock.unlock();
  wake();
  lock.lock();
  const bool applied =
      applied_.wait_for(lock, kControlTimeout, [&] { return applied_epoch_ >= epoch; });
  LOCKSTEP_CHECK(applied, "the proxy thread applies a control call within 5 s");
}

// Takes the requested faults (and a reset) into the thread; false once the proxy is stopping.
bool TcpProxy::Loop::apply_control() {
  std::unique_lock lock(mutex_);
  faults_ = requested_faults_;
  const bool reset = std::exchange(reset_requested_, false);
  const uint64_t epoch = requested_epoch_;
  const bool stopping = stopping_;
  lock.unlock();
  if (reset) {
    for (auto& connection : connections_) close_with_reset(*connection);
    remove_closed();
  }
  lock.lock();
  applied_epoch_ = epoch;
  lock.unlock();
  applied_.notify_all();
  return !stopping;
}

void TcpProxy::Loop::run() {
  while (apply_control()) {
    std::vector<pollfd> polled = poll_set();
    poll(polled.data(), polled.size(), poll_timeout_ms());
    char drain[64];
    while (read(wake_read_.get(), drain, sizeof(drain)) > 0) {
    }
    const size_t known =
        connections_.size();  // accept_new() appends; those wait for the next round
    if ((polled[1].revents & POLLIN) != 0) accept_new();
    for (size_t i = 0; i < known; ++i)
      service(*connections_[i], polled[2 + 2 * i], polled[3 + 2 * i]);
    remove_closed();
  }
  connections_.clear();
  connection_count_ = 0;
}

std::vector<pollfd> TcpProxy::Loop::poll_set() const {
  std::vector<pollfd> polled{{.fd = wake_read_.get(), .events = POLLIN, .revents = 0},
                             {.fd = listener_.get(), .events = POLLIN, .revents = 0}};
  const auto now = SteadyClock::now();
  for (const auto& connection : connections_) {
    std::array<short, 2> events{};  // [0] client fd, [1] upstream fd
    for (size_t direction = 0; direction < 2; ++direction) {
      const Pipe& pipe = connection->pipes[direction];
      const size_t source = direction, destination = 1 - direction;
      if (!pipe.source_eof && pipe.queued_bytes < options_.buffer_bytes) events[source] |= POLLIN;
      const auto delay = std::chrono::milliseconds(faults_.delay_ms[direction]);
      if (!pipe.queue.empty() && !faults_.hold[direction] &&
          pipe.queue.front().read_at + delay <= now)
        events[destination] |= POLLOUT;
    }
    polled.push_back({.fd = connection->client.get(), .events = events[0], .revents = 0});
    polled.push_back({.fd = connection->upstream.get(), .events = events[1], .revents = 0});
  }
  return polled;
}

// Until the earliest delayed chunk falls due (chunks already due wait for POLLOUT instead).
int TcpProxy::Loop::poll_timeout_ms() const {
  const auto now = SteadyClock::now();
  int64_t timeout_ms = kPollTimeoutMaxMs;
  for (const auto& connection : connections_) {
    for (size_t direction = 0; direction < 2; ++direction) {
      const Pipe& pipe = connection->pipes[direction];
      if (pipe.queue.empty() || faults_.hold[direction]) continue;
      const auto due =
          pipe.queue.front().read_at + std::chrono::milliseconds(faults_.delay_ms[direction]);
      if (due <= now) continue;
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(due - now).count();
      timeout_ms = std::min<int64_t>(timeout_ms, wait);
    }
  }
  return static_cast<int>(timeout_ms);
}

void TcpProxy::Loop::accept_new() {
  while (true) {
    Fd client(accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!client.valid()) return;                                    // EAGAIN: no more waiting
    if (connections_.size() >= options_.connections_max) continue;  // refused: closed at once
    Fd upstream = connect_loopback_nonblocking(options_.upstream_port);
    if (!upstream.valid()) continue;  // upstream refused: so is the client
    auto connection = std::make_unique<Connection>();
    connection->client = std::move(client);
    connection->upstream = std::move(upstream);
    connections_.push_back(std::move(connection));
    connection_count_ = connections_.size();
  }
}

void TcpProxy::Loop::service(Connection& connection, const pollfd& client_poll,
                             const pollfd& upstream_poll) {
  const std::array<short, 2> revents{client_poll.revents, upstream_poll.revents};
  for (size_t direction = 0; direction < 2 && !connection.closed; ++direction) {
    if ((revents[direction] & (POLLIN | POLLHUP | POLLERR)) != 0) read_into(connection, direction);
  }
  for (size_t direction = 0; direction < 2 && !connection.closed; ++direction) {
    flush(connection, direction);
    const Pipe& pipe = connection.pipes[direction];
    if (pipe.source_eof && pipe.queue.empty()) connection.closed = true;  // one side left: done
  }
}

void TcpProxy::Loop::read_into(Connection& connection, size_t direction) {
  Pipe& pipe = connection.pipes[direction];
  if (pipe.source_eof || pipe.queued_bytes >= options_.buffer_bytes) return;
  std::string bytes(std::min(kReadChunkBytes, options_.buffer_bytes - pipe.queued_bytes), '\0');
  const ssize_t count = recv(connection.source(direction), bytes.data(), bytes.size(), 0);
  if (count == 0) pipe.source_eof = true;
  if (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
    connection.closed = true;
  if (count <= 0) return;
  bytes.resize(static_cast<size_t>(count));
  pipe.queued_bytes += bytes.size();
  pipe.queue.push_back({.read_at = SteadyClock::now(), .bytes = std::move(bytes)});
}

void TcpProxy::Loop::flush(Connection& connection, size_t direction) {
  Pipe& pipe = connection.pipes[direction];
  if (faults_.hold[direction]) return;  // kept for the heal
  const auto due_before =
      SteadyClock::now() - std::chrono::milliseconds(faults_.delay_ms[direction]);
  while (!pipe.queue.empty() && pipe.queue.front().read_at <= due_before) {
    Chunk& chunk = pipe.queue.front();
    const ssize_t count = send(connection.destination(direction), chunk.bytes.data() + chunk.sent,
                               chunk.bytes.size() - chunk.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (count < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ENOTCONN)
        connection.closed = true;
      return;
    }
    chunk.sent += static_cast<size_t>(count);
    if (chunk.sent < chunk.bytes.size()) return;  // the socket is full: wait for POLLOUT
    pipe.queued_bytes -= chunk.bytes.size();
    pipe.queue.pop_front();
  }
}

void TcpProxy::Loop::remove_closed() {
  std::erase_if(connections_, [](const auto& connection) { return connection->closed; });
  connection_count_ = connections_.size();
}

TcpProxy::TcpProxy(TcpProxyOptions options) : loop_(std::make_unique<Loop>(options)) {}
TcpProxy::~TcpProxy() = default;

int TcpProxy::port() const { return loop_->port(); }
std::string TcpProxy::endpoint() const { return "127.0.0.1:" + std::to_string(port()); }
size_t TcpProxy::connection_count() const { return loop_->connection_count(); }

void TcpProxy::set_delay_ms(Direction direction, int64_t delay_ms) {
  LOCKSTEP_CHECK(delay_ms >= 0 && delay_ms <= 3'600'000, "a delay between 0 and one hour");
  loop_->control([&](Faults& faults) { faults.delay_ms[index_of(direction)] = delay_ms; }, false);
}

void TcpProxy::set_hold(Direction direction, bool hold) {
  loop_->control([&](Faults& faults) { faults.hold[index_of(direction)] = hold; }, false);
}

void TcpProxy::partition() {
  loop_->control([](Faults& faults) { faults.hold = {true, true}; }, false);
}

void TcpProxy::heal() {
  loop_->control([](Faults& faults) { faults = Faults{}; }, false);
}

void TcpProxy::reset_all() {
  loop_->control([](Faults&) {}, true);
}

}  // namespace lockstep::real
