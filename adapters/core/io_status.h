#pragma once
// How a request to a server went at the transport level, for every client seam (a Redis or Mongo
// connection): it was answered, it timed out (it may have been applied), or the connection failed.
// A server's own refusal is a reply, not an IoStatus.
#include <string_view>

namespace lockstep {

enum class IoStatus { ok, timeout, connection_error };
std::string_view to_string(IoStatus status);

}  // namespace lockstep
