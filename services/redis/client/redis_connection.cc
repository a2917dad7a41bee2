#include "lockstep/redis_connection.h"

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

}  // namespace lockstep
