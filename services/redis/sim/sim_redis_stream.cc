#include "services/redis/sim/sim_redis_stream.h"

#include <fmt/format.h>

#include "services/redis/sim/sim_redis_connection.h"

namespace lockstep::sim {

namespace {

constexpr size_t kCommandsPerPieceMax = 100'000;  // a bound on one piece's parse loop

// What a client library sends on connecting that lockstep's command table does not have.
std::optional<RedisReply> front_reply(const std::vector<std::string>& argv) {
  const std::string name = upper_ascii(argv[0]);
  if (name == "INFO") {
    return RedisReply::string_of(
        "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n\r\n# Persistence\r\n"
        "loading:0\r\n\r\n# Replication\r\nrole:master\r\n");
  }
  if (name == "CLIENT") return RedisReply::status_of("OK");
  if (name == "SELECT") {
    return argv.size() == 2 && argv[1] == "0"
               ? RedisReply::status_of("OK")
               : RedisReply::error_of("ERR DB index is out of range");
  }
  return std::nullopt;
}

// A reply as one bounded trace line (INFO's text has line breaks).
std::string one_line(std::string text) {
  constexpr size_t kShownMax = 80;
  if (text.size() > kShownMax) text = text.substr(0, kShownMax) + "..";
  for (char& c : text) c = c == '\n' || c == '\r' ? ' ' : c;
  return text;
}

}  // namespace

StreamFront::Served RedisStreamFront::serve(const std::string& bytes) {
  parser_.feed(bytes);
  Served served;
  for (size_t i = 0; i < kCommandsPerPieceMax; ++i) {
    std::optional<std::vector<std::string>> argv = parser_.next();
    if (!argv) break;
    std::optional<RedisReply> reply = front_reply(*argv);
    if (!reply) reply = target_.execute(*argv, client_);
    world_.trace_line_by([&] {
      return fmt::format("stream {} at {}: {} -> {}", stream_name_, target_.name(),
                         summarize_command(*argv), one_line(describe(*reply)));
    });
    served.replies += encode_reply(*reply);
  }
  if (!parser_.error().empty()) {
    served.replies += encode_reply(RedisReply::error_of("ERR " + parser_.error()));
    served.broken = parser_.error();
  }
  return served;
}

}  // namespace lockstep::sim
