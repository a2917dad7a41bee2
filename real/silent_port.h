#pragma once
// SilentPort: a loopback port whose connects never complete, the real-world fault of a node that
// never answers its connect (SYNs dropped by a firewall, a server whose accept backlog is full).
//
// It listens with backlog 0 and is never accepted; one filler connection, waited for until the
// kernel has established it, fills the accept queue. Linux then drops every further SYN, so a
// client's connect stays in progress (SYN retransmits) until the client gives up. No root, no
// packet filter. Loopback only; the sockets close with the object.
#include "real/loopback.h"

namespace lockstep::real {

class SilentPort {
 public:
  SilentPort();
  int port() const { return port_; }

 private:
  int port_ = 0;
  Fd listener_;
  Fd filler_;
};

}  // namespace lockstep::real
