// What a transport failure means for a write (include/lockstep/io_status.h): a command that failed
// before it was written whole was not applied (connection_error, the adapter's backend_error); one
// that was written and then lost its connection may have been (connection_lost, the adapter's
// outcome_unknown). The peer here is a loopback socket that misbehaves on cue, not a Redis server.
#include <poll.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <unistd.h>

#include <array>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "real/loopback.h"
#include "services/redis/adapter/hiredis_connection.h"
#include "services/redis/adapter/redis_adapter.h"

namespace lockstep {
namespace {

enum class Hangup { reset, close };

// Accepts one connection, reads until `request_bytes` arrived (the whole command), then hangs up
// without answering: a server that died after it read the request, or a reset on the way back.
class HangUpAfterRequest {
 public:
  HangUpAfterRequest(size_t request_bytes, Hangup how) {
    listener_ = real::listen_loopback(port_);
    thread_ = std::thread([this, request_bytes, how] { serve(request_bytes, how); });
  }
  ~HangUpAfterRequest() { thread_.join(); }
  int port() const { return port_; }
  size_t bytes_read() const { return bytes_read_; }  // after the client's command returned

 private:
  void serve(size_t request_bytes, Hangup how) {
    if (real::poll_one(listener_.get(), POLLIN, 10'000) == 0) return;
    real::Fd peer(::accept(listener_.get(), nullptr, nullptr));
    if (!peer.valid()) return;
    std::array<char, 4096> buffer{};
    // Bounded: every round reads at least one byte or ends the loop.
    while (bytes_read_ < request_bytes) {
      if (real::poll_one(peer.get(), POLLIN, 10'000) == 0) return;
      const ssize_t n = ::recv(peer.get(), buffer.data(), buffer.size(), 0);
      if (n <= 0) return;
      bytes_read_ += static_cast<size_t>(n);
    }
    if (how == Hangup::reset) {
      const linger abort_on_close{.l_onoff = 1, .l_linger = 0};  // close sends RST
      ::setsockopt(peer.get(), SOL_SOCKET, SO_LINGER, &abort_on_close, sizeof(abort_on_close));
    }
  }

  int port_ = 0;
  real::Fd listener_;
  size_t bytes_read_ = 0;
  std::thread thread_;
};

// A listening socket whose accept queue is full: the kernel drops further SYNs, so a connect to
// it hangs until the client's connect timeout. Nothing is ever sent.
class FullAcceptQueue {
 public:
  FullAcceptQueue() {
    listener_ = real::Fd(::socket(AF_INET, SOCK_STREAM, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
    REQUIRE(::listen(listener_.get(), 0) == 0);
    socklen_t length = sizeof(address);
    REQUIRE(::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&address), &length) == 0);
    port_ = ntohs(address.sin_port);
    // Backlog 0 queues one connection: two never accepted fill it for certain.
    for (auto& filler : fillers_) {
      filler = real::connect_loopback_nonblocking(port_);
      REQUIRE(filler.valid());
    }
  }
  int port() const { return port_; }

 private:
  real::Fd listener_;
  std::array<real::Fd, 2> fillers_;
  int port_ = 0;
};

constexpr const char* kSet = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n";

TEST_CASE("a reset after the command was written is connection_lost, never connection_error",
          "[hiredis][outcome]") {
  const Hangup how = GENERATE(Hangup::reset, Hangup::close);
  CAPTURE(how == Hangup::reset ? "reset" : "close");
  HangUpAfterRequest peer(std::string(kSet).size(), how);
  HiredisConnection connection({.port = peer.port(), .command_timeout_ms = 5'000});
  const RedisResult result = connection.command({"SET", "k", "v"});
  INFO(result.message);
  CHECK(result.status == IoStatus::connection_lost);
  CHECK(may_have_applied(result.status));
  CHECK_THAT(result.message, Catch::Contains("reading the reply"));
  CHECK_FALSE(connection.connected());
}

TEST_CASE("a connect that timed out is connection_error: nothing was sent", "[hiredis][outcome]") {
  FullAcceptQueue full;
  HiredisConnection connection({.port = full.port(), .connect_timeout_ms = 100});
  const RedisResult result = connection.command({"SET", "k", "v"});
  INFO(result.message);
  CHECK(result.status == IoStatus::connection_error);
  CHECK_FALSE(may_have_applied(result.status));
  CHECK_THAT(result.message, Catch::Contains("connect to"));
}

TEST_CASE("the Redis adapter reports a write lost after sending as outcome_unknown",
          "[redis][outcome]") {
  const LockSpec spec{.key = "k", .value = "v", .ttl_ms = 1000};
  SECTION("reset after the acquire was written: it may hold the key") {
    // The acquire is one EVALSHA or EVAL: wait for its first bytes and a little more than the
    // shortest form, so the whole command is read before the reset.
    HangUpAfterRequest peer(40, Hangup::reset);
    HiredisConnection connection({.port = peer.port(), .command_timeout_ms = 5'000});
    RedisAdapter adapter({.connection = &connection});
    const AdapterResult result = adapter.create_lock(spec);
    INFO(result.message);
    CHECK(result.status == AdapterStatus::outcome_unknown);
  }
  SECTION("a connect that timed out: the acquire was never sent") {
    FullAcceptQueue full;
    HiredisConnection connection({.port = full.port(), .connect_timeout_ms = 100});
    RedisAdapter adapter({.connection = &connection});
    const AdapterResult result = adapter.create_lock(spec);
    INFO(result.message);
    CHECK(result.status == AdapterStatus::backend_error);
  }
}

}  // namespace
}  // namespace lockstep
