#pragma once
// Shared by lua_engine.cc and lua_redis_lib.cc only: the Lua C API and the helpers between the
// engine and the `redis` library it installs. Not a public header.
//
// Lua reports errors with longjmp, which skips C++ destructors. So a C function that Lua calls
// raises a Lua error (lua_error, luaL_error) only when no C++ object with a destructor is alive
// in its frame; work with std::string and friends happens in helpers that return first.
extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include <string>
#include <string_view>
#include <vector>

#include "services/redis/sim/lua_engine.h"

namespace lockstep::sim {

struct LuaEngine::Internal {
  static LuaEngine& engine(lua_State* lua);
  // The allocator (ud = the engine): counts the heap; refuses growth past the limit while armed.
  static void* allocate(void* self, void* block, size_t old_bytes, size_t new_bytes);
  // The count hook: fails the script once it has run more than instruction_limit instructions.
  static void count_hook(lua_State* lua, lua_Debug* ar);
  // Runs argv on the node for redis.call/pcall; pushes the reply (or an error table) and returns
  // whether it is an error. Catches C++ exceptions (kept in failure_, rethrown after the script).
  static bool run_for_script(lua_State* lua, const std::vector<std::string>& argv);
  // Installs the global table `redis` and replaces math.random/randomseed.
  static void install_redis_lib(lua_State* lua);
  // Redis reply -> Lua value (pushed), and Lua value at idx -> Redis reply (Redis's rules).
  static void push_reply(lua_State* lua, const RedisReply& reply);
  static RedisReply to_reply(lua_State* lua, int idx, int depth = 0);
  // Pushes {err = "<CODE> <msg>"} as luaPushErrorBuff does: "-CODE msg" keeps the code,
  // anything else gets "ERR".
  static void push_error_table(lua_State* lua, std::string_view text);
  // The message handler for lua_pcall: turns any error into {err=..., source=..., line=...}.
  static int error_handler(lua_State* lua);
  // Redis's lrand48 (48-bit LCG); seed 0 gives Redis's classic deterministic sequence.
  static void seed_random(LuaEngine& engine, int32_t seed);
  static int32_t next_random(LuaEngine& engine);
};

}  // namespace lockstep::sim
