#include "adapters/core/redis_connection.h"

namespace lockstep {

std::string describe(const RedisReply& reply) {
  switch (reply.type) {
    case RedisReply::Type::status: return reply.str;
    case RedisReply::Type::error: return "(error) " + reply.str;
    case RedisReply::Type::integer: return "(integer) " + std::to_string(reply.integer);
    case RedisReply::Type::nil: return "(nil)";
    case RedisReply::Type::string: return "\"" + reply.str + "\"";
    case RedisReply::Type::array: {
      std::string out = "[";
      for (size_t i = 0; i < reply.elements.size(); ++i)
        out += (i ? ", " : "") + describe(reply.elements[i]);
      return out + "]";
    }
  }
  return "?";
}

std::string_view to_string(IoStatus status) {
  switch (status) {
    case IoStatus::ok: return "ok";
    case IoStatus::timeout: return "timeout";
    case IoStatus::connection_error: return "connection_error";
  }
  return "?";
}

}  // namespace lockstep
