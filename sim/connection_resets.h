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
// - on_send / drops_request / drops_reply: the seam asks at each step of a call.
// Invariants: a call ends once (answered, reset, refused, or abandoned by its caller); on_reply
// runs at most once per call, never after its caller stopped waiting; nothing here reads the wall
// clock or draws a number unless a reset window is open.
#include <cstdint>
#include <functional>
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

class ConnectionResets {
 public:
  explicit ConnectionResets(World& world) : world_(world) {}

  // The fault, now. Returns the id of the call it reset, or 0 when none was waiting.
  uint64_t reset(TimeUs for_us);
  // Before `call` goes out: true when it must not (a reset found on the write; the caller is
  // woken by an event now). Otherwise it is the call in flight, doomed inside a reset window.
  // Templates over the seam's own call type, so that every request does not pay for a converted
  // shared_ptr: these run for every simulated request, resets or not.
  template <typename Call>
  bool refuse_or_track(const std::shared_ptr<Call>& call) {
    if (pending_) return refuse(call);
    in_flight_ = call;
    if (world_.now_us() < resetting_until_us_) doom(*call);
    return false;
  }
  // At the server, as the request arrives: true when it is lost with its connection (a doomed
  // one sends its RST back from server to client).
  template <typename Call>
  bool drops_request(const std::shared_ptr<Call>& call, NodeId server, NodeId client) const {
    if (call->doom == SimCall::Doom::lost_on_the_way) {
      send_rst(call, server, client);
      return true;
    }
    return call->reset;
  }
  // At the client, as the reply arrives: true when the reply is lost with its connection.
  static bool drops_reply(SimCall& call);

 private:
  bool refuse(std::shared_ptr<SimCall> call);
  void doom(SimCall& call);
  void send_rst(std::shared_ptr<SimCall> call, NodeId server, NodeId client) const;

  World& world_;
  std::weak_ptr<SimCall> in_flight_;
  bool pending_ = false;           // reset while idle: the next call finds it out
  TimeUs resetting_until_us_ = 0;  // calls sent before then are reset too
};

}  // namespace lockstep::sim
