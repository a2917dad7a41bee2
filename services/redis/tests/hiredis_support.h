#pragma once
// For tests that talk to a real redis-server through HiredisConnection.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "services/redis/adapter/hiredis_connection.h"

namespace lockstep {

// The reply to argv; the test stops here, saying why, when the command did not get one.
inline RedisReply must(HiredisConnection& connection, const std::vector<std::string>& argv) {
  RedisResult result = connection.command(argv);
  INFO(argv.front() << ": " << to_string(result.status) << " " << result.message);
  REQUIRE(result.ok());
  return result.reply;
}

}  // namespace lockstep
