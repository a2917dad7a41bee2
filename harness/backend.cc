#include "harness/backend.h"

#include <stdexcept>

#include "harness/keyed_calls.h"

namespace lockstep {

KeyedCalls& keyed_calls(Backend& backend) {
  KeyedCalls* keyed = backend.keyed();
  if (keyed == nullptr)
    throw std::logic_error("this scenario needs a keyed lock adapter (keyed-rw, fifo)");
  return *keyed;
}

int64_t Backend::failover() {
  throw WorldUnsupported("this adapter has no replica to fail over to");
}
void Backend::set_server_drift(int64_t) {
  throw WorldUnsupported("this adapter's server clock cannot drift here");
}
void Backend::partition(int, bool) {
  throw WorldUnsupported("this adapter has no network to partition");
}
void Backend::heal() { throw WorldUnsupported("this adapter has no network to heal"); }
void Backend::set_fixed_latency(int64_t) {
  throw WorldUnsupported("this world's latency cannot be fixed");
}
void Backend::slow_server(int, int64_t) {
  throw WorldUnsupported("this adapter's servers cannot be slowed one by one here");
}
void Backend::crash_server(int) {
  throw WorldUnsupported("this adapter's servers cannot be crashed one by one here");
}
void Backend::restart_server(int) {
  throw WorldUnsupported("this adapter's servers cannot be restarted one by one here");
}
void Backend::pause_server(int, int64_t) {
  throw WorldUnsupported("this adapter's servers cannot be paused here");
}
void Backend::jump_server_clock(int, int64_t) {
  throw WorldUnsupported("this adapter's server clocks cannot jump here");
}
void Backend::partition_server(int, int, bool) {
  throw WorldUnsupported("this adapter has no per-server network to partition");
}
void Backend::end_session(int) {
  throw WorldUnsupported("this adapter's servers hold no session to end");
}
void Backend::reset_connections(int, int64_t) {
  throw WorldUnsupported("this adapter's connections cannot be reset here");
}

void require_instant_reset(int64_t for_us) {
  if (for_us > 0)
    throw WorldUnsupported("a real proxy resets connections at an instant: a window is sim-only");
}

}  // namespace lockstep
