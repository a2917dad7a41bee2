#pragma once
// The Redis command table of the simulated node: argv in, RESP2 reply out, with Redis 7.0.15's
// exact replies and error texts (checked against redis-server 7.0.15 with redis-cli; the texts
// are in services/redis/tests/sim_redis_keyspace_test.cc).
//
// Commands: SET (NX XX GET EX PX EXAT PXAT KEEPTTL), SETNX, GET, DEL, EXISTS, INCR, PEXPIRE and
// EXPIRE (NX XX GT LT), PTTL, TTL, PING, and EVAL, EVALSHA, SCRIPT LOAD|EXISTS|FLUSH through the
// Lua engine. Names are case-insensitive. Every bad input is an error reply, never an exception.
//
// A command runs at one instant, ctx.now_ms (node-local ms): Redis 7.0 also judges expiry by one
// time for a whole command, and by the script's start time for everything a script does.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/redis_connection.h"
#include "services/redis/sim/keyspace.h"

namespace lockstep::sim {

class LuaEngine;

struct CommandContext {
  Keyspace& keyspace;
  int64_t now_ms = 0;
  ChangeSink& sink;
  // Runs EVAL and friends; null inside a script, where they are refused as Redis does.
  LuaEngine* lua = nullptr;
  // redis.call from a script: Redis words some errors differently there.
  bool from_script = false;
  // A replica: writes are refused with READONLY.
  bool read_only = false;
};

RedisReply run_command(const std::vector<std::string>& argv, CommandContext& ctx);

// True for commands that change the keyspace (SET, DEL, ...); false for reads, scripts, unknown.
bool is_write_command(std::string_view name);

// Redis's string2ll: an optional '-', no '+', no spaces, no leading zeros, within int64.
bool parse_int64(std::string_view text, int64_t& out);

}  // namespace lockstep::sim
