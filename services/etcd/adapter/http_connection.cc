#include "services/etcd/adapter/http_connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

namespace lockstep {

namespace {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

constexpr size_t kHeadBytesMax = size_t{64} << 10;
constexpr size_t kReadBytes = 16384;

Deadline deadline_after_ms(int64_t ms) { return Clock::now() + std::chrono::milliseconds(ms); }

// Milliseconds left, rounded up, at least 0.
int remaining_ms(Deadline deadline) {
  const auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(left).count());
}

EtcdResult failure(IoStatus status, std::string message) {
  return {.status = status, .message = std::move(message)};
}

void ignore_sigpipe_once() {
  static const bool done = [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      signal(SIGPIPE, SIG_IGN);
    }
    return true;
  }();
  (void)done;
}

bool iequals_prefix(std::string_view line, std::string_view name) {
  if (line.size() < name.size()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char a = static_cast<char>(std::tolower(static_cast<unsigned char>(line[i])));
    if (a != name[i]) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

// One TCP connection to one member, and the reply (or stream) being read from it.
class HttpWire {
 public:
  HttpWire(int fd, int port, size_t bytes_max) : fd_(fd), port_(port), bytes_max_(bytes_max) {}
  ~HttpWire() {
    if (fd_ >= 0) ::close(fd_);
  }
  HttpWire(const HttpWire&) = delete;
  HttpWire& operator=(const HttpWire&) = delete;

  // Connects to 127.0.0.1:port within the deadline; nullptr and *why on failure.
  static std::unique_ptr<HttpWire> connect(int port, Deadline deadline, size_t bytes_max,
                                           EtcdResult* why) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      *why = failure(IoStatus::connection_error, fmt::format("socket: {}", std::strerror(errno)));
      return nullptr;
    }
    auto wire = std::make_unique<HttpWire>(fd, port, bytes_max);
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      if (errno != EINPROGRESS) {
        *why = wire->io_failure("connect", errno);
        return nullptr;
      }
      pollfd entry{.fd = fd, .events = POLLOUT, .revents = 0};
      if (::poll(&entry, 1, remaining_ms(deadline)) <= 0) {
        *why = failure(IoStatus::timeout, fmt::format("connect to {} timed out", wire->where()));
        return nullptr;
      }
      int error = 0;
      socklen_t length = sizeof(error);
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      if (error != 0) {
        *why = wire->io_failure("connect", error);
        return nullptr;
      }
    }
    return wire;
  }

  std::string where() const { return fmt::format("127.0.0.1:{}", port_); }

  // The peer closed this idle socket (or reset it), or bytes nobody asked for are waiting.
  bool stale() const {
    pollfd entry{.fd = fd_, .events = POLLIN, .revents = 0};
    return ::poll(&entry, 1, 0) != 0;
  }

  EtcdResult send(std::string_view path, const std::string& body, Deadline deadline) {
    const std::string request = fmt::format(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: "
        "{}\r\n\r\n{}",
        path, where(), body.size(), body);
    size_t sent = 0;
    while (sent < request.size()) {
      const ssize_t n = ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        return io_failure("send", errno);
      pollfd entry{.fd = fd_, .events = POLLOUT, .revents = 0};
      if (::poll(&entry, 1, remaining_ms(deadline)) <= 0)
        return failure(IoStatus::timeout, fmt::format("sending to {} timed out", where()));
    }
    return {};
  }

  // A whole reply (a unary call).
  EtcdResult read_reply(Deadline deadline) {
    if (EtcdResult head = read_head(deadline); !head.ok()) return head;
    while (!body_done_) {
      if (EtcdResult more = fill(deadline); !more.ok()) return more;
      if (EtcdResult decoded = decode(); !decoded.ok()) return decoded;
    }
    EtcdResult reply = parse(body_);
    body_.clear();
    reusable_ = reusable_ && reply.ok();
    return reply;
  }

  // The next newline-terminated JSON message of a streamed reply.
  EtcdResult read_message(Deadline deadline) {
    if (EtcdResult head = read_head(deadline); !head.ok()) return head;
    while (true) {
      const size_t newline = body_.find('\n');
      if (newline != std::string::npos) {
        EtcdResult message = parse(std::string_view(body_).substr(0, newline));
        body_.erase(0, newline + 1);
        return message;
      }
      if (body_done_) {
        if (!body_.empty()) {
          EtcdResult message = parse(body_);
          body_.clear();
          return message;
        }
        return failure(IoStatus::connection_error,
                       fmt::format("the stream from {} ended", where()));
      }
      if (EtcdResult more = fill(deadline); !more.ok()) return more;
      if (EtcdResult decoded = decode(); !decoded.ok()) return decoded;
    }
  }

  // Ready for another request on this socket: the last reply was read whole and kept it open.
  bool reusable() const { return reusable_ && head_done_ && body_done_ && in_.empty(); }
  void reset_reply() {
    head_done_ = false;
    body_done_ = false;
    chunked_ = false;
    in_trailers_ = false;
    content_length_ = -1;
    read_ = 0;
    chunk_left_ = -1;
    status_ = 0;
    body_.clear();
  }

 private:
  EtcdResult io_failure(const char* what, int error) const {
    return failure(IoStatus::connection_error,
                   fmt::format("{} {}: {}", what, where(), std::strerror(error)));
  }

  // Reads what is there (waiting until the deadline for something).
  EtcdResult fill(Deadline deadline) {
    if (in_.size() > bytes_max_ + kHeadBytesMax)
      return failure(IoStatus::connection_error,
                     fmt::format("reply from {} over {} bytes", where(), bytes_max_));
    while (true) {
      char buffer[kReadBytes];
      const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n > 0) {
        in_.append(buffer, static_cast<size_t>(n));
        return {};
      }
      if (n == 0) {
        eof_ = true;
        reusable_ = false;
        // A reply delimited by the connection's end is complete now.
        if (head_done_ && !chunked_ && content_length_ < 0) {
          body_done_ = true;
          return {};
        }
        return failure(IoStatus::connection_error,
                       fmt::format("{} closed the connection", where()));
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return io_failure("recv", errno);
      pollfd entry{.fd = fd_, .events = POLLIN, .revents = 0};
      const int ready = ::poll(&entry, 1, remaining_ms(deadline));
      if (ready == 0)
        return failure(IoStatus::timeout, fmt::format("no reply from {} in time", where()));
      if (ready < 0 && errno != EINTR) return io_failure("poll", errno);
    }
  }

  EtcdResult read_head(Deadline deadline) {
    while (!head_done_) {
      const size_t end = in_.find("\r\n\r\n");
      if (end != std::string::npos) {
        if (EtcdResult parsed = parse_head(std::string_view(in_).substr(0, end)); !parsed.ok())
          return parsed;
        in_.erase(0, end + 4);
        head_done_ = true;
        if (content_length_ == 0) body_done_ = true;
        return decode();
      }
      if (in_.size() > kHeadBytesMax)
        return failure(IoStatus::connection_error,
                       fmt::format("headers from {} too long", where()));
      if (EtcdResult more = fill(deadline); !more.ok()) return more;
    }
    return {};
  }

  EtcdResult parse_head(std::string_view head) {
    const auto bad = [this](std::string_view why) {
      return failure(IoStatus::connection_error, fmt::format("{} from {}", why, where()));
    };
    if (!head.starts_with("HTTP/1.")) return bad("not an HTTP/1 reply");
    const size_t space = head.find(' ');
    if (space == std::string_view::npos || head.size() < space + 4) return bad("no status");
    status_ = std::atoi(std::string(head.substr(space + 1, 3)).c_str());
    if (status_ < 100) return bad("a bad status");
    size_t at = head.find("\r\n");
    while (at != std::string_view::npos) {
      const size_t next = head.find("\r\n", at + 2);
      const std::string_view line = head.substr(
          at + 2, next == std::string_view::npos ? std::string_view::npos : next - at - 2);
      if (iequals_prefix(line, "content-length:")) {
        content_length_ = std::atoll(std::string(trim(line.substr(15))).c_str());
        if (content_length_ < 0 || static_cast<size_t>(content_length_) > bytes_max_)
          return bad("a bad Content-Length");
      } else if (iequals_prefix(line, "transfer-encoding:")) {
        chunked_ = trim(line.substr(18)).find("chunked") != std::string_view::npos;
      } else if (iequals_prefix(line, "connection:")) {
        if (trim(line.substr(11)).find("close") != std::string_view::npos) reusable_ = false;
      }
      at = next;
    }
    return {};
  }

  // Moves body bytes from in_ to body_, undoing the chunked framing.
  EtcdResult decode() {
    if (!head_done_ || body_done_) return {};
    if (!chunked_) {
      if (content_length_ < 0) {  // until the connection ends
        body_ += in_;
        in_.clear();
      } else {
        const size_t take = std::min(in_.size(), static_cast<size_t>(content_length_) - read_);
        body_.append(in_, 0, take);
        in_.erase(0, take);
        read_ += take;
        if (read_ == static_cast<size_t>(content_length_)) body_done_ = true;
      }
      return limit();
    }
    while (!body_done_) {
      if (chunk_left_ < 0) {  // a size line, or after the last chunk the trailers
        const size_t end = in_.find("\r\n");
        if (end == std::string::npos) return limit();
        const std::string line = in_.substr(0, end);
        in_.erase(0, end + 2);
        if (in_trailers_) {
          if (line.empty()) body_done_ = true;
          continue;
        }
        char* rest = nullptr;
        const long long size = std::strtoll(line.c_str(), &rest, 16);
        if (rest == line.c_str() || size < 0)
          return failure(IoStatus::connection_error, fmt::format("bad chunk from {}", where()));
        if (size == 0) {
          in_trailers_ = true;
          continue;
        }
        chunk_left_ = size;
        continue;
      }
      if (chunk_left_ > 0) {
        const size_t take = std::min(in_.size(), static_cast<size_t>(chunk_left_));
        if (take == 0) return limit();
        body_.append(in_, 0, take);
        in_.erase(0, take);
        chunk_left_ -= static_cast<int64_t>(take);
        continue;
      }
      if (in_.size() < 2) return limit();  // the CRLF after a chunk's data
      in_.erase(0, 2);
      chunk_left_ = -1;
    }
    in_trailers_ = false;
    return limit();
  }

  EtcdResult limit() const {
    if (body_.size() <= bytes_max_) return {};
    return failure(IoStatus::connection_error,
                   fmt::format("reply from {} over {} bytes", where(), bytes_max_));
  }

  EtcdResult parse(std::string_view text) const {
    EtcdJson body = EtcdJson::parse(text, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) {
      return failure(IoStatus::connection_error,
                     fmt::format("a reply from {} that is not JSON: {:.80}", where(), text));
    }
    return {.status = IoStatus::ok, .http_status = status_, .body = std::move(body)};
  }

  int fd_;
  int port_;
  size_t bytes_max_;
  std::string in_;    // bytes received, not yet decoded
  std::string body_;  // body bytes decoded, not yet consumed
  bool head_done_ = false;
  bool body_done_ = false;
  bool chunked_ = false;
  bool in_trailers_ = false;
  bool eof_ = false;
  bool reusable_ = true;
  int status_ = 0;
  int64_t content_length_ = -1;
  size_t read_ = 0;
  int64_t chunk_left_ = -1;
};

namespace {

class HttpEtcdStream final : public EtcdStream {
 public:
  HttpEtcdStream(std::unique_ptr<HttpWire> wire, EtcdResult failed)
      : wire_(std::move(wire)), failed_(std::move(failed)) {}

  EtcdResult next(int64_t timeout_us) override {
    if (!wire_) return failed_;
    const Deadline deadline =
        Clock::now() + std::chrono::microseconds(std::max<int64_t>(0, timeout_us));
    EtcdResult message = wire_->read_message(deadline);
    if (!message.ok() && message.status != IoStatus::timeout) {
      // The call went out whole: a stream that fails now may have run (a Lock granted).
      message.status = IoStatus::connection_lost;
      failed_ = message;
      wire_.reset();
    }
    return message;
  }

 private:
  std::unique_ptr<HttpWire> wire_;
  EtcdResult failed_;
};

}  // namespace

HttpEtcdConnection::HttpEtcdConnection(HttpEtcdOptions options) : options_(std::move(options)) {
  ignore_sigpipe_once();
  if (options_.ports.empty()) options_.ports.push_back(2379);
}

HttpEtcdConnection::~HttpEtcdConnection() = default;

std::string HttpEtcdConnection::endpoint() const {
  return fmt::format("127.0.0.1:{}", options_.ports[current_]);
}

void HttpEtcdConnection::fail_over() {
  wire_.reset();
  current_ = (current_ + 1) % options_.ports.size();
}

EtcdResult HttpEtcdConnection::call(std::string_view path, const EtcdJson& body) {
  const Deadline deadline = deadline_after_ms(options_.request_timeout_ms);
  if (wire_ && (!wire_->reusable() || wire_->stale())) wire_.reset();  // closed while idle
  if (!wire_) {
    EtcdResult why;
    wire_ = HttpWire::connect(options_.ports[current_],
                              std::min(deadline, deadline_after_ms(options_.connect_timeout_ms)),
                              options_.reply_bytes_max, &why);
    if (!wire_) {
      fail_over();
      return why;
    }
  }
  wire_->reset_reply();
  if (EtcdResult sent = wire_->send(path, body.dump(), deadline); !sent.ok()) {
    fail_over();
    return sent;
  }
  EtcdResult reply = wire_->read_reply(deadline);
  if (!reply.ok()) {
    fail_over();
    // Written whole, then the connection failed (a reset, an EOF, a reply cut short): it may
    // have run, as io_status.h says of connection_lost.
    if (reply.status == IoStatus::connection_error) reply.status = IoStatus::connection_lost;
  }
  return reply;
}

std::unique_ptr<EtcdStream> HttpEtcdConnection::open(std::string_view path, const EtcdJson& body) {
  const Deadline deadline = deadline_after_ms(options_.connect_timeout_ms);
  EtcdResult why;
  std::unique_ptr<HttpWire> wire =
      HttpWire::connect(options_.ports[current_], deadline, options_.reply_bytes_max, &why);
  if (wire) {
    why = wire->send(path, body.dump(), deadline_after_ms(options_.request_timeout_ms));
    if (!why.ok()) wire.reset();
  }
  if (!wire) {
    fail_over();
    if (why.status == IoStatus::timeout) why.status = IoStatus::connection_error;  // never opened
  }
  return std::make_unique<HttpEtcdStream>(std::move(wire), std::move(why));
}

}  // namespace lockstep
