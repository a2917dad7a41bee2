#pragma once
// Connection resets for the simulated clients of every lock service (the `reset` fault), so that
// each client seam (a Redis connection, a Mongo driver's) meets them the same way.
//
// A request's transport state is a SimCall, shared by the fiber that waits for it and by the
// network messages that carry it. ConnectionResets is one connection's side:
// - reset(for_us): the call in flight, if its caller still waits, ends at once as reset
//   (connection_lost: it was sent whole, and it may have run: a request still on the wire is lost
//   with the connection, one already run loses its reply). With none in flight, the next call
//   is refused before it is sent (connection_error). For for_us more, every call sent is doomed:
//   lost on the way (the server sends an RST back instead of running it) or run with its reply
//   lost, a draw of the world's PRNG; its caller hears of it when the RST or the reply would have
//   reached it. Then the connection works again, as a client that reconnects.
// - Half-open connections: a connection to a server is opened by its first call and belongs to
//   the server's incarnation then. A server that restarted since has forgotten it while the
//   client has not: the next call goes out whole, reaches the new incarnation, which answers an
//   RST instead of running it, and its caller hears connection_lost when the RST comes back; the
//   call after that opens a new connection. (A message in flight across the restart is the
//   network's to drop.) A reset, or a caller that gave up on a call, reopens them all.
// - on_send / drops_request / drops_reply: the seam asks at each step of a call.
// Invariants: a call ends once (answered, reset, refused, or abandoned by its caller); on_reply
// runs at most once per call, never after its caller stopped waiting; nothing here reads the wall
// clock or draws a number unless a reset window is open.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "lockstep/io_status.h"
#include "sim/world.h"

namespace lockstep::sim {

struct SimCall {
  uint64_t id = 0;
  bool executed = false;   // the server ran it (a duplicate delivery is ignored)
  bool answered = false;   // a reply arrived while it was still wanted
  bool abandoned = false;  // the client stopped waiting
  bool reset = false;      // the connection was reset before the reply came: connection_lost
  bool refused = false;    // never sent: the connection was found reset (connection_error)
  uint64_t server_incarnation = 0;  // of the server its connection was opened to
  // Sent while its connection kept being reset: lost before the server, or its reply lost.
  enum class Doom { none, lost_on_the_way, reply_lost } doom = Doom::none;
  std::function<void()> on_reply;  // wakes the caller: a reply stored, or the reset heard

  bool ended_by_reset() const { return reset || refused; }
  // How a call the reset ended went at the transport level (io_status.h): sent whole, or not.
  IoStatus reset_status() const {
    return refused ? IoStatus::connection_error : IoStatus::connection_lost;
  }
};

// The caller of `call` learns its connection was reset (once; not after it stopped waiting).
void hear_reset(SimCall& call);

// The fate of a request sent while its connection keeps being reset: a draw of the world's PRNG,
// lost on the way or run with its reply lost, even odds. Shared by every seam that dooms what it
// sends in a reset window (ConnectionResets, a co-simulated driver's byte stream).
SimCall::Doom draw_doom(World& world);

class ConnectionResets {
 public:
  explicit ConnectionResets(World& world) : world_(world) {}

  // The fault, now. Returns the id of the call it reset, or 0 when none was waiting.
  uint64_t reset(TimeUs for_us);
  // Before `call` goes out to `server`: true when it must not (a reset found on the write; the
  // caller is woken by an event now). Otherwise it is the call in flight, on the connection to
  // `server` (opened now if there is none), doomed inside a reset window.
  // Templates over the seam's own call type, so that every request does not pay for a converted
  // shared_ptr: these run for every simulated request, resets or not.
  template <typename Call>
  bool refuse_or_track(const std::shared_ptr<Call>& call, NodeId server) {
    if (pending_) return refuse(call);
    in_flight_ = call;
    call->server_incarnation = opened_to(server);
    if (world_.now_us() < resetting_until_us_) doom(*call);
    return false;
  }
  // At the server, as the request arrives: true when it is lost with its connection (a doomed
  // one, or one on a connection the server forgot, sends its RST back from server to client).
  template <typename Call>
  bool drops_request(const std::shared_ptr<Call>& call, NodeId server, NodeId client) {
    if (call->doom == SimCall::Doom::lost_on_the_way) {
      send_rst(call, server, client);
      return true;
    }
    if (world_.incarnation(server) != call->server_incarnation)
      return half_open(call, server, client);
    return call->reset;
  }
  // The caller gave up on a call (a timeout): clients close such a connection and open another.
  void reopen_all() { opened_.clear(); }
  // Inside a reset window: what the seam opens now (a stream) is reset too.
  bool resetting() const { return world_.now_us() < resetting_until_us_; }
  // At the client, as the reply arrives: true when the reply is lost with its connection.
  static bool drops_reply(SimCall& call);

 private:
  bool refuse(std::shared_ptr<SimCall> call);
  void doom(SimCall& call);
  void send_rst(std::shared_ptr<SimCall> call, NodeId server, NodeId client) const;
  // The incarnation of `server` the connection to it belongs to (opened now if there is none).
  uint64_t opened_to(NodeId server);
  bool half_open(std::shared_ptr<SimCall> call, NodeId server, NodeId client);

  World& world_;
  // Open connections, by server: the server's incarnation when each was opened (a few servers).
  std::map<NodeId, uint64_t> opened_;
  std::weak_ptr<SimCall> in_flight_;
  bool pending_ = false;           // reset while idle: the next call finds it out
  TimeUs resetting_until_us_ = 0;  // calls sent before then are reset too
};

}  // namespace lockstep::sim
