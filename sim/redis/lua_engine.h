#pragma once
// The embedded Lua 5.1 that runs EVAL scripts on one simulated Redis node, as Redis 7.0 does.
//
// One lua_State per node, created once and reused (a new state costs ~38 us); scripts are
// compiled once and cached by the SHA-1 of their body (EVAL caches too, as Redis does), until
// SCRIPT FLUSH or the node's crash. The sandbox follows Redis 7.0.15: the base, table, string and
// math libraries only (no os, io, package, debug, print, dofile, loadfile), reading an undefined
// global is an error, assigning a global is an error, KEYS and ARGV are set per call, and
// math.random is deterministic (reseeded with 0 before every script, as Redis did before 7.0).
//
// redis.call / redis.pcall run commands on the node's keyspace through run_command, at the
// script's start time; conversions both ways are Redis's (script_lua.c, RESP2). Error replies of
// failed scripts use Redis 7.0's format, e.g. "ERR value is not an integer or out of range
// script: <sha>, on @user_script:1." (texts checked against redis-server 7.0.15).
//
// Bounds: a script that runs more than instruction_limit Lua VM instructions, or grows the Lua
// heap past memory_limit_bytes, fails with an error reply (Redis would let it run and answer
// BUSY); the cache holds at most scripts_max scripts. Nothing here reads a clock or a random
// source: a script's outcome depends only on its inputs and the keyspace.
//
// Not thread-safe; not re-entrant (a script cannot run EVAL: run_command refuses it).
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <span>
#include <string>

#include "adapters/core/redis_connection.h"

struct lua_State;

namespace lockstep::sim {

struct CommandContext;

struct LuaEngineOptions {
  uint64_t instruction_limit = 10'000'000;
  size_t memory_limit_bytes = 64 * 1024 * 1024;
  size_t scripts_max = 10'000;
};

class LuaEngine {
 public:
  explicit LuaEngine(LuaEngineOptions options = {});
  ~LuaEngine();
  LuaEngine(const LuaEngine&) = delete;
  LuaEngine& operator=(const LuaEngine&) = delete;

  // EVAL: compiles body unless cached, then runs it.
  RedisReply eval(const std::string& body, std::span<const std::string> keys,
                  std::span<const std::string> args, CommandContext& ctx);
  // EVALSHA: runs a cached script (sha case-insensitive), or NOSCRIPT.
  RedisReply evalsha(const std::string& sha, std::span<const std::string> keys,
                     std::span<const std::string> args, CommandContext& ctx);
  // SCRIPT LOAD: the sha as a bulk string, or the compile error.
  RedisReply load(const std::string& body);
  bool exists(const std::string& sha) const;
  void flush();
  size_t cached_scripts() const { return scripts_.size(); }

  // --- for the Lua C functions (lua_redis_lib.cc); not for callers ---
  struct Internal;

 private:
  struct Script {
    int function_ref = 0;  // in the Lua registry
  };
  // Compiles and caches body under sha; on failure returns false with the error reply in `error`.
  bool compile(const std::string& body, const std::string& sha, RedisReply& error);
  RedisReply run(const Script& script, const std::string& sha, std::span<const std::string> keys,
                 std::span<const std::string> args, CommandContext& ctx);
  void set_globals_array(const char* name, std::span<const std::string> items);
  void arm_bounds();
  void disarm_bounds();

  LuaEngineOptions options_;
  lua_State* lua_ = nullptr;
  int globals_ref_ = 0;  // the real globals table (the scripts see a read-only proxy)
  int proxy_ref_ = 0;
  std::map<std::string, Script> scripts_;

  // State of the running script, for the C functions.
  CommandContext* ctx_ = nullptr;
  std::exception_ptr
      failure_;  // a C++ exception raised under redis.call, rethrown after the script
  uint64_t instructions_ = 0;
  bool over_limit_ = false;
  size_t heap_bytes_ = 0;
  bool memory_armed_ = false;
  uint64_t rand48_ = 0;
};

}  // namespace lockstep::sim
