#include "services/redis/real/redis_ping.h"

#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <string_view>

#include "real/loopback.h"

namespace lockstep::real {
namespace {

using SteadyClock = std::chrono::steady_clock;

int64_t ms_left(SteadyClock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
  return left.count() > 0 ? left.count() : 0;
}

bool connected(const Fd& fd, SteadyClock::time_point deadline) {
  if ((poll_one(fd.get(), POLLOUT, ms_left(deadline)) & POLLOUT) == 0) return false;
  int error = 0;
  socklen_t length = sizeof(error);
  return getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0;
}

}  // namespace

bool redis_answers_ping(int port, int64_t timeout_ms) {
  const auto deadline = SteadyClock::now() + std::chrono::milliseconds(timeout_ms);
  const Fd fd = connect_loopback_nonblocking(port);
  if (!fd.valid() || !connected(fd, deadline)) return false;
  constexpr std::string_view kPing = "*1\r\n$4\r\nPING\r\n";
  if (send(fd.get(), kPing.data(), kPing.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(kPing.size())) {
    return false;
  }
  constexpr std::string_view kPong = "+PONG\r\n";
  std::string received;
  while (received.size() < kPong.size() && ms_left(deadline) > 0) {
    if ((poll_one(fd.get(), POLLIN, ms_left(deadline)) & (POLLIN | POLLHUP | POLLERR)) == 0)
      return false;
    char buffer[64];
    const ssize_t count = recv(fd.get(), buffer, sizeof(buffer), 0);
    if (count <= 0) return false;
    received.append(buffer, static_cast<size_t>(count));
  }
  return received.starts_with(kPong);
}

}  // namespace lockstep::real
