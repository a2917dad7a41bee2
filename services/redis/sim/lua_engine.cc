#include "services/redis/sim/lua_engine.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <exception>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "services/redis/client/sha1.h"
#include "services/redis/sim/commands.h"
#include "services/redis/sim/lua_internal.h"
#include "sim/assert.h"

namespace lockstep::sim {
namespace {

// The count hook runs every kHookEvery VM instructions: cheap, and fine-grained enough.
constexpr int kHookEvery = 1000;

// Redis 7.0.15's global allow list, less cjson, bit, cmsgpack and struct (not built in here).
constexpr std::string_view kAllowedGlobals[] = {
    "string",       "math",     "table",   "xpcall",    "tostring", "getfenv",
    "setmetatable", "next",     "assert",  "tonumber",  "rawequal", "collectgarbage",
    "getmetatable", "rawset",   "pcall",   "coroutine", "type",     "_G",
    "select",       "unpack",   "gcinfo",  "pairs",     "rawget",   "loadstring",
    "ipairs",       "_VERSION", "setfenv", "load",      "error",    "newproxy"};

int nonexistent_global(lua_State* lua) {
  return luaL_error(lua, "Script attempted to access nonexistent global variable '%s'",
                    lua_tostring(lua, 2));
}

int readonly_table(lua_State* lua) { return luaL_error(lua, "Attempt to modify a readonly table"); }

void open_libraries(lua_State* lua) {
  for (lua_CFunction open : {luaopen_base, luaopen_table, luaopen_string, luaopen_math}) {
    lua_pushcfunction(lua, open);
    lua_call(lua, 0, 0);
  }
}

void remove_unlisted_globals(lua_State* lua) {
  std::vector<std::string> doomed;
  lua_pushnil(lua);
  while (lua_next(lua, LUA_GLOBALSINDEX) != 0) {
    lua_pop(lua, 1);  // the value; the key stays for lua_next
    if (lua_type(lua, -1) != LUA_TSTRING) continue;
    const std::string_view name = lua_tostring(lua, -1);
    if (std::find(std::begin(kAllowedGlobals), std::end(kAllowedGlobals), name) ==
        std::end(kAllowedGlobals)) {
      doomed.emplace_back(name);
    }
  }
  for (const std::string& name : doomed) {
    lua_pushnil(lua);
    lua_setfield(lua, LUA_GLOBALSINDEX, name.c_str());
  }
}

// Scripts see a proxy as their globals: empty, reading through to the real table (whose own
// metatable makes a missing name an error) and refusing every assignment. `_G` is the proxy too.
// Returns the registry refs of (real, proxy).
std::pair<int, int> protect_globals(lua_State* lua) {
  lua_pushvalue(lua, LUA_GLOBALSINDEX);
  const int real = lua_gettop(lua);
  lua_newtable(lua);  // real's metatable
  lua_pushcfunction(lua, nonexistent_global);
  lua_setfield(lua, -2, "__index");
  lua_pushboolean(lua, 0);
  lua_setfield(lua, -2, "__metatable");
  lua_setmetatable(lua, real);

  lua_newtable(lua);  // the proxy
  const int proxy = lua_gettop(lua);
  lua_newtable(lua);  // proxy's metatable
  lua_pushvalue(lua, real);
  lua_setfield(lua, -2, "__index");
  lua_pushcfunction(lua, readonly_table);
  lua_setfield(lua, -2, "__newindex");
  lua_pushboolean(lua, 0);
  lua_setfield(lua, -2, "__metatable");
  lua_setmetatable(lua, proxy);

  lua_pushvalue(lua, proxy);
  lua_setfield(lua, real, "_G");
  lua_pushvalue(lua, proxy);
  lua_replace(lua, LUA_GLOBALSINDEX);  // code loaded from now on (scripts, loadstring) sees it
  const int proxy_ref = luaL_ref(lua, LUA_REGISTRYINDEX);
  const int real_ref = luaL_ref(lua, LUA_REGISTRYINDEX);
  return {real_ref, proxy_ref};
}

std::string one_line_trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n')) s.pop_back();
  std::replace_if(
      s.begin(), s.end(), [](char c) { return c == '\r' || c == '\n'; }, ' ');
  return s;
}

std::string field_string(lua_State* lua, int table, const char* name) {
  lua_pushstring(lua, name);
  lua_rawget(lua, table);
  const char* s = lua_isstring(lua, -1) ? lua_tostring(lua, -1) : nullptr;
  std::string out = s ? s : "";
  lua_pop(lua, 1);
  return out;
}

// A failed script's error reply, in Redis 7.0's words (luaCallFunction): the error table's
// message plus " script: <sha>, on <source>:<line>." when the handler found where it happened.
RedisReply script_failure(lua_State* lua, const std::string& sha) {
  const int top = lua_gettop(lua);
  if (!lua_istable(lua, top)) {
    const char* msg = lua_isstring(lua, top) ? lua_tostring(lua, top) : "execution failure";
    return RedisReply::error_of(one_line_trimmed("ERR Error running script " + sha + ", " +
                                                 std::string(msg).substr(0, 100)));
  }
  std::string text = field_string(lua, top, "err");
  if (text.empty()) text = "ERR unknown error";
  const std::string source = field_string(lua, top, "source");
  const std::string line = field_string(lua, top, "line");
  if (!source.empty() && !line.empty())
    text += " script: " + sha + ", on " + source + ":" + line + ".";
  return RedisReply::error_of(one_line_trimmed(std::move(text)));
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

// Redis 7.0 reads an optional "#!lua ..." first line (flags are not modelled); the line break
// stays so line numbers in errors match.
bool strip_shebang(std::string_view& code, RedisReply& error) {
  if (code.substr(0, 2) != "#!") return true;
  const size_t eol = std::min(code.find('\n'), code.size());
  const std::string_view line = code.substr(0, eol);
  if (line.substr(0, 5) != "#!lua" || (line.size() > 5 && line[5] != ' ')) {
    error = RedisReply::error_of("ERR Unexpected engine in script shebang");
    return false;
  }
  code.remove_prefix(eol);
  return true;
}

}  // namespace

// --- Internal: engine plumbing the C callbacks need ---

LuaEngine& LuaEngine::Internal::engine(lua_State* lua) {
  void* self = nullptr;
  lua_getallocf(lua, &self);
  return *static_cast<LuaEngine*>(self);
}

void* LuaEngine::Internal::allocate(void* self, void* block, size_t old_bytes, size_t new_bytes) {
  auto& e = *static_cast<LuaEngine*>(self);
  if (new_bytes == 0) {
    std::free(block);
    e.heap_bytes_ -= old_bytes;
    return nullptr;
  }
  if (new_bytes > old_bytes && e.memory_armed_ &&
      e.heap_bytes_ - old_bytes + new_bytes > e.options_.memory_limit_bytes) {
    return nullptr;  // Lua raises "not enough memory"
  }
  void* grown = std::realloc(block, new_bytes);
  if (grown != nullptr) e.heap_bytes_ = e.heap_bytes_ - old_bytes + new_bytes;
  return grown;
}

void LuaEngine::Internal::count_hook(lua_State* lua, lua_Debug*) {
  LuaEngine& e = engine(lua);
  e.instructions_ += kHookEvery;
  if (!e.over_limit_ && e.instructions_ <= e.options_.instruction_limit) return;
  if (!e.over_limit_) {
    // From now on every line and instruction fails, so a pcall loop cannot swallow the error.
    e.over_limit_ = true;
    lua_sethook(lua, count_hook, LUA_MASKCOUNT | LUA_MASKLINE, 1);
  }
  lua_pushstring(lua, "Script exceeded the simulator's instruction limit");
  lua_error(lua);
}

// --- LuaEngine ---

LuaEngine::LuaEngine(LuaEngineOptions options) : options_(options) {
  LOCKSTEP_SIM_CHECK(options_.instruction_limit > 0 && options_.scripts_max > 0,
                     "a Lua engine needs positive bounds");
  lua_ = lua_newstate(Internal::allocate, this);
  LOCKSTEP_SIM_CHECK(lua_ != nullptr, "cannot create a Lua state");
  open_libraries(lua_);
  remove_unlisted_globals(lua_);
  Internal::install_redis_lib(lua_);
  std::tie(globals_ref_, proxy_ref_) = protect_globals(lua_);
  lua_pushliteral(lua_, "KEYS");
  keys_name_ref_ = luaL_ref(lua_, LUA_REGISTRYINDEX);
  lua_pushliteral(lua_, "ARGV");
  argv_name_ref_ = luaL_ref(lua_, LUA_REGISTRYINDEX);
  lua_settop(lua_, 0);
  lua_gc(lua_, LUA_GCCOLLECT, 0);  // as reset_for_reuse leaves a pooled one
  pristine_ = fingerprint();
}

namespace {

constexpr uint64_t kFnvBasis = 14695981039346656037ULL;
constexpr uint64_t kFnvPrime = 1099511628211ULL;

// One word into the digest (FNV-1a's step, a word at a time rather than a byte: the fingerprint
// runs at every reset, over a few hundred entries, and only equality with pristine_ matters).
uint64_t mix(uint64_t hash, uint64_t word) { return (hash ^ word) * kFnvPrime; }

// The value at idx: its type and its identity (number, boolean, or address). A string's address is
// its identity too: Lua 5.1 interns every string, so while a table holds one, equal bytes are the
// same object (a key removed and added again may come back elsewhere: a change, the safe way).
uint64_t value_digest(lua_State* lua, int idx, uint64_t hash) {
  const int type = lua_type(lua, idx);
  hash = mix(hash, static_cast<uint64_t>(type));
  switch (type) {
    case LUA_TSTRING:  // the interned string's address: no copy, no hashing of its bytes
      return mix(hash, reinterpret_cast<uintptr_t>(lua_tostring(lua, idx)));
    case LUA_TNUMBER: return mix(hash, std::bit_cast<uint64_t>(lua_tonumber(lua, idx)));
    case LUA_TBOOLEAN: return mix(hash, static_cast<uint64_t>(lua_toboolean(lua, idx)));
    default: return mix(hash, reinterpret_cast<uintptr_t>(lua_topointer(lua, idx)));
  }
}

// Sum (order-independent: lua_next's order depends on the table's history) of one digest per
// entry of the table at idx, and of its metatable; tables under it, depth levels down.
uint64_t table_digest(lua_State* lua, int idx, int depth) {
  idx = idx < 0 ? lua_gettop(lua) + idx + 1 : idx;
  uint64_t sum = 0;
  lua_pushnil(lua);
  while (lua_next(lua, idx) != 0) {  // bounded: a table's entries, at most depth levels deep
    // Key and value are read through their type, never converted in place (lua_next needs keys).
    uint64_t entry = value_digest(lua, -1, value_digest(lua, -2, kFnvBasis));
    if (depth > 0 && lua_istable(lua, -1)) entry += table_digest(lua, -1, depth - 1) * kFnvPrime;
    sum += entry;
    lua_pop(lua, 1);
  }
  if (lua_getmetatable(lua, idx) != 0) {
    sum += value_digest(lua, -1, kFnvBasis) ^ 0x9e3779b97f4a7c15ULL;
    if (depth > 0) sum += table_digest(lua, -1, depth - 1) * 31;
    lua_pop(lua, 1);
  }
  return sum;
}

}  // namespace

uint64_t LuaEngine::fingerprint() const {
  const int top = lua_gettop(lua_);
  lua_rawgeti(lua_, LUA_REGISTRYINDEX, globals_ref_);
  uint64_t digest = table_digest(lua_, -1, 2);  // globals, libraries, what the libraries hold
  lua_rawgeti(lua_, LUA_REGISTRYINDEX, proxy_ref_);
  digest = digest * kFnvPrime + table_digest(lua_, -1, 1);
  lua_pushliteral(lua_, "");  // strings' metatable (its __index is the string library)
  if (lua_getmetatable(lua_, -1) != 0) digest = digest * kFnvPrime + table_digest(lua_, -1, 1);
  lua_settop(lua_, top);
  return digest;
}

bool LuaEngine::reset_for_reuse() {
  if (ctx_ != nullptr || failure_) return false;  // given back mid-script: never reused
  forget_scripts();
  lua_rawgeti(lua_, LUA_REGISTRYINDEX, globals_ref_);
  for (const int name_ref : {keys_name_ref_, argv_name_ref_}) {
    lua_rawgeti(lua_, LUA_REGISTRYINDEX, name_ref);
    lua_pushnil(lua_);
    lua_rawset(lua_, -3);
  }
  lua_settop(lua_, 0);
  lua_gc(lua_, LUA_GCCOLLECT, 0);
  instructions_ = 0;
  over_limit_ = false;
  memory_armed_ = false;
  rand48_ = 0;
  return fingerprint() == pristine_;
}

namespace {

std::vector<std::unique_ptr<LuaEngine>>& engine_pool() {
  thread_local std::vector<std::unique_ptr<LuaEngine>> pool;  // one sim runs on one thread
  return pool;
}

}  // namespace

void LuaEngineReturn::operator()(LuaEngine* engine) const {
  std::unique_ptr<LuaEngine> owned(engine);
  std::vector<std::unique_ptr<LuaEngine>>& pool = engine_pool();
  if (pool.size() < kLuaEnginePoolMax && owned->reset_for_reuse()) pool.push_back(std::move(owned));
}

size_t pooled_lua_engines() { return engine_pool().size(); }

LuaEngineHandle take_lua_engine(LuaEngineOptions options) {
  std::vector<std::unique_ptr<LuaEngine>>& pool = engine_pool();
  if (pool.empty()) return LuaEngineHandle(new LuaEngine(options));
  LOCKSTEP_SIM_CHECK(options.instruction_limit > 0 && options.scripts_max > 0,
                     "a Lua engine needs positive bounds");
  LuaEngineHandle engine(pool.back().release());
  pool.pop_back();
  engine->set_options(options);
  return engine;
}

LuaEngine::~LuaEngine() {
  if (lua_ != nullptr) lua_close(lua_);
}

bool LuaEngine::exists(const std::string& sha) const { return scripts_.count(lower(sha)) > 0; }

void LuaEngine::flush() {
  forget_scripts();
  lua_gc(lua_, LUA_GCCOLLECT, 0);
}

void LuaEngine::forget_scripts() {
  for (auto& [sha, script] : scripts_) {
    if (compiled_kept_.size() < kCompiledKeptMax && compiled_kept_.count(sha) == 0) {
      compiled_kept_.emplace(sha, script);
    } else {
      luaL_unref(lua_, LUA_REGISTRYINDEX, script.function_ref);
    }
  }
  scripts_.clear();
}

bool LuaEngine::take_back_compiled(const std::string& sha) {
  const auto kept = compiled_kept_.find(sha);
  if (kept == compiled_kept_.end()) return false;
  const Script script = kept->second;
  compiled_kept_.erase(kept);
  // As compiled, its environment is the proxy; a script's setfenv(1, t) made it another function.
  lua_rawgeti(lua_, LUA_REGISTRYINDEX, script.function_ref);
  lua_getfenv(lua_, -1);
  lua_rawgeti(lua_, LUA_REGISTRYINDEX, proxy_ref_);
  const bool unchanged = lua_rawequal(lua_, -1, -2) != 0;
  lua_pop(lua_, 3);
  if (!unchanged) {
    luaL_unref(lua_, LUA_REGISTRYINDEX, script.function_ref);
    return false;
  }
  scripts_.emplace(sha, script);
  return true;
}

bool LuaEngine::compile(const std::string& body, const std::string& sha, RedisReply& error) {
  if (scripts_.size() >= options_.scripts_max) {
    error = RedisReply::error_of("ERR the simulator's script cache is full (scripts_max)");
    return false;
  }
  if (take_back_compiled(sha)) return true;
  std::string_view code = body;
  if (!strip_shebang(code, error)) return false;
  if (luaL_loadbuffer(lua_, code.data(), code.size(), "@user_script") != 0) {
    const char* msg = lua_tostring(lua_, -1);
    error = RedisReply::error_of(one_line_trimmed(
        std::string("ERR Error compiling script (new function): ") + (msg ? msg : "")));
    lua_pop(lua_, 1);
    return false;
  }
  scripts_[sha] = Script{.function_ref = luaL_ref(lua_, LUA_REGISTRYINDEX)};
  return true;
}

const std::string& LuaEngine::sha_of(const std::string& body) {
  for (auto it = sha_memo_.begin(); it != sha_memo_.end(); ++it) {
    if (it->first == body) {
      std::rotate(it, it + 1, sha_memo_.end());
      return sha_memo_.back().second;
    }
  }
  if (sha_memo_.size() == kShaMemoMax) sha_memo_.erase(sha_memo_.begin());
  sha_memo_.emplace_back(body, sha1_hex(body));
  return sha_memo_.back().second;
}

RedisReply LuaEngine::load(const std::string& body) {
  const std::string sha = sha_of(body);
  RedisReply error;
  if (scripts_.count(sha) == 0 && !compile(body, sha, error)) return error;
  return RedisReply::string_of(sha);
}

RedisReply LuaEngine::eval(const std::string& body, std::span<const std::string> keys,
                           std::span<const std::string> args, CommandContext& ctx) {
  const std::string sha = sha_of(body);
  RedisReply error;
  if (scripts_.count(sha) == 0 && !compile(body, sha, error)) return error;
  return run(scripts_.at(sha), sha, keys, args, ctx);
}

RedisReply LuaEngine::evalsha(const std::string& sha, std::span<const std::string> keys,
                              std::span<const std::string> args, CommandContext& ctx) {
  // Clients send the sha as SCRIPT LOAD returned it, lowercase: a copy only when it is not.
  const bool lowercase =
      std::none_of(sha.begin(), sha.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
  const auto it = lowercase ? scripts_.find(sha) : scripts_.find(lower(sha));
  if (it == scripts_.end())
    return RedisReply::error_of("NOSCRIPT No matching script. Please use EVAL.");
  return run(it->second, it->first, keys, args, ctx);
}

void LuaEngine::set_globals_array(int name_ref, std::span<const std::string> items) {
  lua_rawgeti(lua_, LUA_REGISTRYINDEX, globals_ref_);
  lua_rawgeti(lua_, LUA_REGISTRYINDEX, name_ref);
  lua_createtable(lua_, static_cast<int>(items.size()), 0);
  for (size_t i = 0; i < items.size(); ++i) {
    lua_pushlstring(lua_, items[i].data(), items[i].size());
    lua_rawseti(lua_, -2, static_cast<int>(i + 1));
  }
  lua_rawset(lua_, -3);
  lua_pop(lua_, 1);
}

void LuaEngine::arm_bounds() {
  instructions_ = 0;
  over_limit_ = false;
  lua_sethook(lua_, Internal::count_hook, LUA_MASKCOUNT, kHookEvery);
  memory_armed_ = true;
}

void LuaEngine::disarm_bounds() {
  memory_armed_ = false;
  lua_sethook(lua_, nullptr, 0, 0);
}

RedisReply LuaEngine::run(const Script& script, const std::string& sha,
                          std::span<const std::string> keys, std::span<const std::string> args,
                          CommandContext& ctx) {
  LOCKSTEP_SIM_CHECK(ctx_ == nullptr, "scripts do not nest");
  CommandContext script_ctx{.keyspace = ctx.keyspace,
                            .now_ms = ctx.now_ms,
                            .sink = ctx.sink,
                            .lua = nullptr,
                            .from_script = true,
                            .read_only = ctx.read_only};
  ctx_ = &script_ctx;
  set_globals_array(keys_name_ref_, keys);
  set_globals_array(argv_name_ref_, args);
  Internal::seed_random(*this, 0);
  const int base = lua_gettop(lua_);
  lua_pushcfunction(lua_, Internal::error_handler);
  lua_rawgeti(lua_, LUA_REGISTRYINDEX, script.function_ref);
  arm_bounds();
  const int status = lua_pcall(lua_, 0, 1, base + 1);
  disarm_bounds();
  RedisReply reply =
      status == 0 ? Internal::to_reply(lua_, lua_gettop(lua_)) : script_failure(lua_, sha);
  lua_settop(lua_, base);
  ctx_ = nullptr;
  if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
  return reply;
}

}  // namespace lockstep::sim
