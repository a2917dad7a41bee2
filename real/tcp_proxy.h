#pragma once
// TcpProxy: a small fault-injecting TCP proxy between clients and one loopback server.
//
// It listens on 127.0.0.1 at a kernel-chosen port and forwards each accepted connection to
// 127.0.0.1:upstream_port, on one thread of its own (a poll loop). Faults, per direction:
// - delay: bytes are forwarded delay_ms after they were read (order kept; lowering the delay
//   releases what waited longer than the new delay at once);
// - hold: an outage that TCP rides out. Connections stay open; bytes read in that direction wait
//   and are forwarded, in order, when the direction heals (at buffer_bytes the proxy stops
//   reading, and the sender's kernel buffers fill as behind a dead path). Nothing in the middle
//   of a live stream is lost, as TCP never loses it: a request whose caller gave up and closed its
//   connection still reaches the server after the heal, as the caller's kernel would send it.
//   Holding one direction is a one-way partition, both a two-way one.
// reset_all() closes every open connection with a RST; heal() clears delay and hold.
//
// Invariants:
// - Only loopback: it listens on and connects to 127.0.0.1, nothing else.
// - Every control call returns only once the proxy thread applies it: bytes read after the call
//   returns see the new faults. (Bounded: the thread answers within 5 s or the call fails a CHECK.)
// - Bounded memory: at most buffer_bytes queued per direction per connection (the proxy stops
//   reading that side until it drains) and at most connections_max at once (more are refused).
// - The destructor stops the thread, joins it and closes every fd.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace lockstep::real {

enum class Direction { to_upstream, to_client };

struct TcpProxyOptions {
  int upstream_port = 0;
  size_t buffer_bytes = size_t{1} << 20;
  size_t connections_max = 64;
};

class TcpProxy {
 public:
  explicit TcpProxy(TcpProxyOptions options);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const;
  std::string endpoint() const;  // "127.0.0.1:PORT"

  void set_delay_ms(Direction direction, int64_t delay_ms);
  void set_hold(Direction direction, bool hold);
  void partition();  // hold both directions
  void heal();       // no delay, no hold: what was held goes out
  void reset_all();  // RST every open connection; new ones are accepted as usual
  size_t connection_count() const;

 private:
  class Loop;
  std::unique_ptr<Loop> loop_;
};

}  // namespace lockstep::real
