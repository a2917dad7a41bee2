#include "real/silent_port.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <system_error>

#include "base/check.h"

namespace lockstep::real {
namespace {

// A loopback handshake completes in microseconds; this bound only keeps a broken kernel from
// hanging the constructor.
constexpr int64_t kFillerConnectMaxMs = 5000;

}  // namespace

SilentPort::SilentPort() {
  int port = 0;
  listener_ = listen_loopback(port);
  if (listen(listener_.get(), 0) != 0) {
    throw std::system_error(errno, std::generic_category(), "listen with backlog 0");
  }
  port_ = port;
  filler_ = connect_loopback_nonblocking(port_);
  LOCKSTEP_CHECK(filler_.valid(), "the filler connect to a listening loopback port was refused");
  const short revents = poll_one(filler_.get(), POLLOUT, kFillerConnectMaxMs);
  int error = 0;
  socklen_t length = sizeof(error);
  getsockopt(filler_.get(), SOL_SOCKET, SO_ERROR, &error, &length);
  LOCKSTEP_CHECK((revents & POLLOUT) != 0 && error == 0,
                 "the filler connection did not establish: the accept queue is not full");
}

}  // namespace lockstep::real
