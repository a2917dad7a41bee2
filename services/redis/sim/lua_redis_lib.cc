// The `redis` table scripts see, and Redis's conversions between replies and Lua values
// (Redis 7.0 script_lua.c, RESP2).
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <string>
#include <vector>

#include "services/redis/client/sha1.h"
#include "services/redis/sim/commands.h"
#include "services/redis/sim/lua_internal.h"

namespace lockstep::sim {
namespace {

constexpr int kReplyDepthMax = 100;  // Redis fails deeper tables with "reached lua stack limit"
constexpr int32_t kRand48Max = std::numeric_limits<int32_t>::max();

std::string without_newlines(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n')) s.pop_back();
  for (char& c : s) c = c == '\r' || c == '\n' ? ' ' : c;
  return s;
}

// (long long)lua_Number as x86 computes it: out of range (or NaN) gives INT64_MIN, which is what
// redis-server 7.0.15 returns for `return 1e30`.
int64_t truncate_number(double d) {
  constexpr double kTwo63 = 9223372036854775808.0;
  if (std::isnan(d) || d >= kTwo63 || d < -kTwo63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(d);
}

// Numbers become command arguments with "%.17g" (redis-server 7.0.15: 0.1 ->
// "0.10000000000000001").
std::string number_argument(double d) {
  char buf[64];
  const int n = std::snprintf(buf, sizeof buf, "%.17g", d);
  return std::string(buf, static_cast<size_t>(n));
}

// Everything redis.call does that needs C++ objects. Leaves the reply (or an error table) on the
// stack; returns whether it is an error. Never raises a Lua error itself.
bool call_into_node(lua_State* lua) {
  using Internal = LuaEngine::Internal;
  const int argc = lua_gettop(lua);
  if (argc == 0) {
    Internal::push_error_table(lua, "Please specify at least one argument for this redis lib call");
    return true;
  }
  std::vector<std::string> argv;
  argv.reserve(static_cast<size_t>(argc));
  for (int i = 1; i <= argc; ++i) {
    if (lua_type(lua, i) == LUA_TNUMBER) {
      argv.push_back(number_argument(lua_tonumber(lua, i)));
    } else if (lua_type(lua, i) == LUA_TSTRING) {
      size_t len = 0;
      const char* s = lua_tolstring(lua, i, &len);
      argv.emplace_back(s, len);
    } else {
      Internal::push_error_table(lua,
                                 "Lua redis lib command arguments must be strings or integers");
      return true;
    }
  }
  return Internal::run_for_script(lua, argv);
}

int redis_call(lua_State* lua) {
  if (call_into_node(lua)) return lua_error(lua);
  return 1;
}

int redis_pcall(lua_State* lua) {
  call_into_node(lua);
  return 1;
}

void push_sha1(lua_State* lua) {
  size_t len = 0;
  const char* s = lua_tolstring(lua, 1, &len);
  const std::string hex = sha1_hex(std::string_view(s, len));
  lua_pushlstring(lua, hex.data(), hex.size());
}

int redis_sha1hex(lua_State* lua) {
  if (lua_gettop(lua) != 1 || !lua_isstring(lua, 1)) {
    return luaL_error(lua, "wrong number of arguments");
  }
  push_sha1(lua);
  return 1;
}

void push_error_reply(lua_State* lua) {
  const std::string text = lua_tostring(lua, 1);
  LuaEngine::Internal::push_error_table(lua, text.empty() || text[0] != '-' ? "-" + text : text);
}

int redis_error_reply(lua_State* lua) {
  if (lua_gettop(lua) != 1 || lua_type(lua, 1) != LUA_TSTRING) {
    LuaEngine::Internal::push_error_table(lua, "wrong number or type of arguments");
    return 1;
  }
  push_error_reply(lua);
  return 1;
}

int redis_status_reply(lua_State* lua) {
  if (lua_gettop(lua) != 1 || lua_type(lua, 1) != LUA_TSTRING) {
    LuaEngine::Internal::push_error_table(lua, "wrong number or type of arguments");
    return 1;
  }
  lua_newtable(lua);
  lua_pushvalue(lua, 1);
  lua_setfield(lua, -2, "ok");
  return 1;
}

int redis_log(lua_State* lua) {
  if (lua_gettop(lua) < 2) return luaL_error(lua, "redis.log() requires two arguments or more.");
  return 0;  // the simulator keeps no server log
}

int redis_setresp(lua_State* lua) {
  if (lua_gettop(lua) != 1) return luaL_error(lua, "redis.setresp() requires one argument.");
  const int resp = static_cast<int>(luaL_checkinteger(lua, 1));
  if (resp == 3) return luaL_error(lua, "RESP3 is not supported by the simulated Redis");
  if (resp != 2) return luaL_error(lua, "RESP version must be 2 or 3.");
  return 0;
}

int redis_noop(lua_State*) { return 0; }

int redis_true(lua_State* lua) {
  lua_pushboolean(lua, 1);
  return 1;
}

int redis_false(lua_State* lua) {
  lua_pushboolean(lua, 0);
  return 1;
}

// Redis's math.random over its lrand48.
int math_random(lua_State* lua) {
  LuaEngine& e = LuaEngine::Internal::engine(lua);
  const double r =
      static_cast<double>(LuaEngine::Internal::next_random(e) % kRand48Max) / kRand48Max;
  switch (lua_gettop(lua)) {
    case 0: lua_pushnumber(lua, r); return 1;
    case 1: {
      const int u = luaL_checkint(lua, 1);
      luaL_argcheck(lua, 1 <= u, 1, "interval is empty");
      lua_pushnumber(lua, std::floor(r * u) + 1);
      return 1;
    }
    case 2: {
      const int l = luaL_checkint(lua, 1);
      const int u = luaL_checkint(lua, 2);
      luaL_argcheck(lua, l <= u, 2, "interval is empty");
      lua_pushnumber(lua, std::floor(r * (u - l + 1)) + l);
      return 1;
    }
    default: return luaL_error(lua, "wrong number of arguments");
  }
}

int math_randomseed(lua_State* lua) {
  LuaEngine::Internal::seed_random(LuaEngine::Internal::engine(lua), luaL_checkint(lua, 1));
  return 0;
}

void set_function(lua_State* lua, const char* name, lua_CFunction fn) {
  lua_pushcfunction(lua, fn);
  lua_setfield(lua, -2, name);
}

void set_number(lua_State* lua, const char* name, double value) {
  lua_pushnumber(lua, value);
  lua_setfield(lua, -2, name);
}

// tostring() for the error handler, without addresses (they would make traces differ by run).
void push_error_text(lua_State* lua, int idx) {
  lua_pushstring(lua, "ERR ");
  switch (lua_type(lua, idx)) {
    case LUA_TSTRING:
    case LUA_TNUMBER: lua_pushvalue(lua, idx); break;
    case LUA_TBOOLEAN: lua_pushstring(lua, lua_toboolean(lua, idx) ? "true" : "false"); break;
    default: lua_pushstring(lua, luaL_typename(lua, idx));
  }
  lua_concat(lua, 2);
}

}  // namespace

bool LuaEngine::Internal::run_for_script(lua_State* lua, const std::vector<std::string>& argv) {
  LuaEngine& e = engine(lua);
  RedisReply reply;
  try {
    reply = run_command(argv, *e.ctx_);
  } catch (...) {
    // Not across Lua's C frames: kept, and rethrown once the script has unwound.
    e.failure_ = std::current_exception();
    push_error_table(lua, "ERR the simulator failed inside redis.call");
    return true;
  }
  push_reply(lua, reply);
  return reply.is_error();
}

void LuaEngine::Internal::install_redis_lib(lua_State* lua) {
  lua_newtable(lua);
  set_function(lua, "call", redis_call);
  set_function(lua, "pcall", redis_pcall);
  set_function(lua, "sha1hex", redis_sha1hex);
  set_function(lua, "error_reply", redis_error_reply);
  set_function(lua, "status_reply", redis_status_reply);
  set_function(lua, "log", redis_log);
  set_function(lua, "setresp", redis_setresp);
  set_function(lua, "set_repl", redis_noop);  // effects are always replicated, as in Redis 7
  set_function(lua, "replicate_commands", redis_true);
  set_function(lua, "breakpoint", redis_false);
  set_function(lua, "debug", redis_noop);
  set_number(lua, "LOG_DEBUG", 0);
  set_number(lua, "LOG_VERBOSE", 1);
  set_number(lua, "LOG_NOTICE", 2);
  set_number(lua, "LOG_WARNING", 3);
  set_number(lua, "REPL_NONE", 0);
  set_number(lua, "REPL_AOF", 1);
  set_number(lua, "REPL_SLAVE", 2);
  set_number(lua, "REPL_REPLICA", 2);
  set_number(lua, "REPL_ALL", 3);
  set_number(lua, "REDIS_VERSION_NUM", 0x07000f);
  lua_pushstring(lua, "7.0.15");
  lua_setfield(lua, -2, "REDIS_VERSION");
  lua_setfield(lua, LUA_GLOBALSINDEX, "redis");

  lua_getfield(lua, LUA_GLOBALSINDEX, "math");
  set_function(lua, "random", math_random);
  set_function(lua, "randomseed", math_randomseed);
  lua_pop(lua, 1);
}

void LuaEngine::Internal::push_error_table(lua_State* lua, std::string_view text) {
  std::string code = "ERR";
  std::string msg(text);
  if (!text.empty() && text[0] == '-') {
    const size_t space = text.find(' ');
    if (space == std::string_view::npos) {
      msg = text.substr(1);
    } else {
      code = text.substr(1, space - 1);
      msg = text.substr(space + 1);
    }
  }
  while (!msg.empty() && (msg.back() == '\r' || msg.back() == '\n')) msg.pop_back();
  const std::string final_msg = code + " " + msg;
  lua_newtable(lua);
  lua_pushlstring(lua, final_msg.data(), final_msg.size());
  lua_setfield(lua, -2, "err");
}

void LuaEngine::Internal::push_reply(lua_State* lua, const RedisReply& reply) {
  switch (reply.type) {
    case RedisReply::Type::integer:
      lua_pushnumber(lua, static_cast<lua_Number>(reply.integer));
      return;
    case RedisReply::Type::string: lua_pushlstring(lua, reply.str.data(), reply.str.size()); return;
    case RedisReply::Type::nil: lua_pushboolean(lua, 0); return;
    case RedisReply::Type::status:
      lua_newtable(lua);
      lua_pushlstring(lua, reply.str.data(), reply.str.size());
      lua_setfield(lua, -2, "ok");
      return;
    case RedisReply::Type::error: push_error_table(lua, "-" + reply.str); return;
    case RedisReply::Type::array:
      luaL_checkstack(lua, 4, "reply too deep");
      lua_createtable(lua, static_cast<int>(reply.elements.size()), 0);
      for (size_t i = 0; i < reply.elements.size(); ++i) {
        push_reply(lua, reply.elements[i]);
        lua_rawseti(lua, -2, static_cast<int>(i + 1));
      }
      return;
  }
}

namespace {

// The string at t[name] (raw), or false if absent or not a string (lua_type, as Redis checks).
bool string_field(lua_State* lua, int t, const char* name, std::string& out) {
  lua_pushstring(lua, name);
  lua_rawget(lua, t);
  const bool found = lua_type(lua, -1) == LUA_TSTRING;
  if (found) {
    size_t len = 0;
    const char* s = lua_tolstring(lua, -1, &len);
    out.assign(s, len);
  }
  lua_pop(lua, 1);
  return found;
}

}  // namespace

RedisReply LuaEngine::Internal::to_reply(lua_State* lua, int idx, int depth) {
  switch (lua_type(lua, idx)) {
    case LUA_TSTRING: {
      size_t len = 0;
      const char* s = lua_tolstring(lua, idx, &len);
      return RedisReply::string_of(std::string(s, len));
    }
    case LUA_TBOOLEAN:
      return lua_toboolean(lua, idx) ? RedisReply::integer_of(1) : RedisReply::nil();
    case LUA_TNUMBER: return RedisReply::integer_of(truncate_number(lua_tonumber(lua, idx)));
    case LUA_TTABLE: break;
    default: return RedisReply::nil();  // nil, functions, userdata, threads
  }
  if (depth >= kReplyDepthMax || !lua_checkstack(lua, 4)) {
    return RedisReply::error_of("ERR reached lua stack limit");
  }
  std::string text;
  if (string_field(lua, idx, "err", text)) return RedisReply::error_of(without_newlines(text));
  if (string_field(lua, idx, "ok", text)) return RedisReply::status_of(without_newlines(text));
  // An array: elements 1, 2, ... up to the first nil.
  std::vector<RedisReply> items;
  for (int j = 1;; ++j) {
    lua_rawgeti(lua, idx, j);
    if (lua_isnil(lua, -1)) {
      lua_pop(lua, 1);
      break;
    }
    items.push_back(to_reply(lua, lua_gettop(lua), depth + 1));
    lua_pop(lua, 1);
  }
  return RedisReply::array_of(std::move(items));
}

int LuaEngine::Internal::error_handler(lua_State* lua) {
  lua_Debug ar;
  bool where = lua_getstack(lua, 1, &ar) != 0 && lua_getinfo(lua, "Sl", &ar) != 0;
  // Raised by a C function (error, redis.call, a metamethod): the place is its Lua caller.
  if (where && ar.what != nullptr && std::string_view(ar.what) == "C") {
    where = lua_getstack(lua, 2, &ar) != 0 && lua_getinfo(lua, "Sl", &ar) != 0;
  }
  if (!lua_istable(lua, 1)) {
    lua_newtable(lua);
    push_error_text(lua, 1);
    lua_setfield(lua, -2, "err");
    lua_replace(lua, 1);
  }
  if (where) {
    lua_pushstring(lua, ar.source);
    lua_setfield(lua, 1, "source");
    lua_pushnumber(lua, ar.currentline);
    lua_setfield(lua, 1, "line");
  }
  lua_settop(lua, 1);
  return 1;
}

// lrand48: x' = (0x5DEECE66D * x + 0xB) mod 2^48, output the top 31 bits; srand48(s) starts
// from (s << 16) | 0x330E.
void LuaEngine::Internal::seed_random(LuaEngine& e, int32_t seed) {
  e.rand48_ = (static_cast<uint64_t>(static_cast<uint32_t>(seed)) << 16) | 0x330E;
}

int32_t LuaEngine::Internal::next_random(LuaEngine& e) {
  e.rand48_ = (0x5DEECE66DULL * e.rand48_ + 0xB) & ((1ULL << 48) - 1);
  return static_cast<int32_t>(e.rand48_ >> 17);
}

}  // namespace lockstep::sim
