#include "real/loopback.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

namespace lockstep::real {
namespace {

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

sockaddr_in loopback_address(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

sockaddr* as_sockaddr(sockaddr_in& address) { return reinterpret_cast<sockaddr*>(&address); }

Fd tcp_socket() {
  Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) throw_errno("socket");
  return fd;
}

int bound_port(const Fd& fd) {
  sockaddr_in address{};
  socklen_t length = sizeof(address);
  if (getsockname(fd.get(), as_sockaddr(address), &length) != 0) throw_errno("getsockname");
  return ntohs(address.sin_port);
}

Fd bind_loopback_any_port() {
  Fd fd = tcp_socket();
  const int yes = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  sockaddr_in address = loopback_address(0);
  if (bind(fd.get(), as_sockaddr(address), sizeof(address)) != 0) throw_errno("bind 127.0.0.1:0");
  return fd;
}

}  // namespace

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

int free_loopback_port() { return bound_port(bind_loopback_any_port()); }

Fd listen_loopback(int& port) {
  Fd fd = bind_loopback_any_port();
  if (listen(fd.get(), SOMAXCONN) != 0) throw_errno("listen");
  port = bound_port(fd);
  return fd;
}

Fd connect_loopback_nonblocking(int port) {
  Fd fd = tcp_socket();
  sockaddr_in address = loopback_address(port);
  if (connect(fd.get(), as_sockaddr(address), sizeof(address)) != 0 && errno != EINPROGRESS) {
    return {};
  }
  return fd;
}

short poll_one(int fd, short events, int64_t timeout_ms) {
  pollfd entry{.fd = fd, .events = events, .revents = 0};
  const int ready = poll(&entry, 1, static_cast<int>(timeout_ms));
  return ready > 0 ? entry.revents : short{0};
}

}  // namespace lockstep::real
