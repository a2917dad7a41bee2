#pragma once
// How a request to a server went at the transport level, for every client seam (a Redis or Mongo
// connection). A server's own refusal is a reply, not an IoStatus. The rule every adapter reads a
// failure by: what matters is whether the request was written whole before the failure.
//   ok                answered.
//   timeout           written whole, no reply within the command timeout: it may have been applied.
//   connection_lost   written whole, then the connection failed (reset, EOF) before the reply: it
//                     may have been applied.
//   connection_error  not written whole (refused, a connect that timed out, a failure while
//                     writing): the server never had the whole request, so it was not applied.
#include <string_view>

namespace lockstep {

enum class IoStatus { ok, timeout, connection_error, connection_lost };
std::string_view to_string(IoStatus status);

// timeout or connection_lost: the request reached the connection whole, so a write may have taken
// effect; an adapter reports such a write as an unknown outcome, never as "not applied".
constexpr bool may_have_applied(IoStatus status) {
  return status == IoStatus::timeout || status == IoStatus::connection_lost;
}

}  // namespace lockstep
