#pragma once
// Loopback TCP building blocks for the real world: an owned file descriptor, free-port discovery,
// listening and connecting on 127.0.0.1. Nothing here ever talks to a non-loopback address.
#include <cstdint>
#include <utility>

namespace lockstep::real {

// Owns one file descriptor; closes it once. Move-only.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

// A port on 127.0.0.1 that was free a moment ago (bound to port 0, read back, released). Another
// process may take it before the caller binds it: callers retry on "address in use".
int free_loopback_port();

// A non-blocking socket listening on 127.0.0.1 at a kernel-chosen port; `port` receives it.
Fd listen_loopback(int& port);

// A non-blocking socket connecting to 127.0.0.1:port (the connect may still be in progress).
// Invalid when the connect failed at once (refused).
Fd connect_loopback_nonblocking(int port);

// Waits up to timeout_ms for `events` on fd (poll(2)); returns the revents, 0 on timeout.
short poll_one(int fd, short events, int64_t timeout_ms);

}  // namespace lockstep::real
