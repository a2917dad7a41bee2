#pragma once
// Shared by the simulated-Redis tests: how Catch prints a RedisReply, short reply builders, and a
// bare server (keyspace, Lua engine and command table, no World) run at an explicit node-local
// time.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/redis_connection.h"
#include "services/redis/sim/commands.h"
#include "services/redis/sim/keyspace.h"
#include "services/redis/sim/lua_engine.h"

namespace Catch {
template <>
struct StringMaker<lockstep::RedisReply> {
  static std::string convert(const lockstep::RedisReply& r) { return lockstep::describe(r); }
};
}  // namespace Catch

namespace lockstep::sim::testing {

// The compare-and-delete release script, as lock clients send it.
inline const std::string kCompareAndDelete =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 "
    "end";

inline RedisReply ok() { return RedisReply::status_of("OK"); }
inline RedisReply str(std::string s) { return RedisReply::string_of(std::move(s)); }
inline RedisReply num(int64_t n) { return RedisReply::integer_of(n); }
inline RedisReply nil() { return RedisReply::nil(); }
inline RedisReply error(std::string s) { return RedisReply::error_of(std::move(s)); }
inline RedisReply array(std::vector<RedisReply> items) {
  return RedisReply::array_of(std::move(items));
}

struct RecordingSink final : ChangeSink {
  std::vector<KeyChange> changes;
  void on_change(const KeyChange& c) override { changes.push_back(c); }
};

struct Server {
  Keyspace keyspace;
  LuaEngine lua;
  RecordingSink sink;
  int64_t now_ms = 1'000'000;  // tests move it relatively

  explicit Server(LuaEngineOptions options = {}) : lua(options) {}

  RedisReply run(std::vector<std::string> argv) {
    CommandContext ctx{.keyspace = keyspace, .now_ms = now_ms, .sink = sink, .lua = &lua};
    return run_command(argv, ctx);
  }
  RedisReply eval(const std::string& body, std::vector<std::string> keys = {},
                  std::vector<std::string> args = {}) {
    std::vector<std::string> argv{"EVAL", body, std::to_string(keys.size())};
    argv.insert(argv.end(), keys.begin(), keys.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
  }
};

}  // namespace lockstep::sim::testing
