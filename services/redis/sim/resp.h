#pragma once
// RESP2, the Redis wire protocol, for the simulated node's front (services/redis/sim/sim_redis_stream.h):
// the commands a client writes (arrays of bulk strings, or inline lines) parsed from a byte
// stream that arrives in arbitrary pieces, and replies encoded as a redis-server writes them.
//
// Invariants: the parser never throws and never holds more than kRespBufferMaxBytes of input;
// a malformed stream or an oversized one is a protocol error (Redis answers "-ERR Protocol
// error: ..." and closes the connection), after which the parser yields nothing more.
// encode_reply() of any RedisReply is exactly what redis-server 7.0 sends for it.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/redis_connection.h"

namespace lockstep::sim {

inline constexpr size_t kRespBufferMaxBytes = size_t{64} * 1024 * 1024;
inline constexpr size_t kRespArgsMax = 1024 * 1024;  // Redis's own limit on multibulk length

class RespParser {
 public:
  // Appends bytes as they arrived.
  void feed(std::string_view bytes);
  // The next complete command, or nullopt when more bytes are needed or after an error.
  std::optional<std::vector<std::string>> next();
  // Set once the stream was malformed: Redis's error text ("Protocol error: ...").
  const std::string& error() const { return error_; }

 private:
  std::optional<std::vector<std::string>> fail(std::string what);
  // Reads "\r\n"-terminated line at pos; nullopt: incomplete.
  std::optional<std::string_view> line_at(size_t pos) const;

  std::string buffer_;
  size_t consumed_ = 0;  // bytes of buffer_ already parsed into commands
  std::string error_;
};

std::string encode_reply(const RedisReply& reply);
// A command as clients send it: an array of bulk strings.
std::string encode_command(const std::vector<std::string>& argv);

}  // namespace lockstep::sim
