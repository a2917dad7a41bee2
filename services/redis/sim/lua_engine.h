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
//
// Reuse across runs (take_lua_engine): a node's engine goes back to its thread's pool when the
// node goes, and the next node takes it instead of building a state, which was an eighth of a
// simulated Redlock seed. Back in the pool it is reset: its script cache flushed (a new node
// answers NOSCRIPT as a fresh one does), KEYS and ARGV removed, the heap collected; and it is kept
// only if it is pristine: its globals, the libraries under them (one level down), the script
// proxy and the metatables of all of these hold exactly what they held when the state was built
// (keys, and values by identity). A script that changed any of them (string.x = 1,
// rawset(_G, ...), a library function replaced) costs its engine: it is closed, never reused, so
// no run sees another's changes. What a reused state may show differently is only what Lua says
// of its own heap (collectgarbage("count"), gcinfo) and how near a script is to
// memory_limit_bytes, by the few KB a collected state keeps; no lock script reads those.
//
// Compiled code outlives the cache Redis shows: a script forgotten (SCRIPT FLUSH, a crash, the
// pool's reset) keeps its compiled function, at most kCompiledKeptMax of them, and the next EVAL or
// SCRIPT LOAD of the same body takes it back instead of compiling again (compiling was a twentieth
// of a simulated redis seed). EVALSHA still answers NOSCRIPT until then. A function whose
// environment a script changed (setfenv(1, t)) is not taken back: compiled afresh, it is as new.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/redis_connection.h"

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
  // The bounds of the next scripts (a pooled engine takes its new node's).
  void set_options(LuaEngineOptions options) { options_ = options; }

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

  // For the pool (take_lua_engine): flushes scripts, removes KEYS and ARGV, collects the heap;
  // returns whether the state is as built (then it may serve another node).
  bool reset_for_reuse();

  // --- for the Lua C functions (lua_redis_lib.cc); not for callers ---
  struct Internal;

 private:
  struct Script {
    int function_ref = 0;  // in the Lua registry
  };
  static constexpr size_t kCompiledKeptMax = 32;
  static constexpr size_t kShaMemoMax = 8;
  // sha1_hex(body), remembered for the last kShaMemoMax bodies: EVAL hashes the same few scripts
  // over and over (a pure function of the body, so what it remembers changes no result).
  const std::string& sha_of(const std::string& body);
  // Compiles (or takes back from compiled_kept_) and caches body under sha; on failure returns
  // false with the error reply in `error`.
  bool compile(const std::string& body, const std::string& sha, RedisReply& error);
  // Takes sha's kept compiled function into scripts_ if it is there and unchanged.
  bool take_back_compiled(const std::string& sha);
  // Empties scripts_, keeping the compiled functions (up to kCompiledKeptMax); no collection.
  void forget_scripts();
  RedisReply run(const Script& script, const std::string& sha, std::span<const std::string> keys,
                 std::span<const std::string> args, CommandContext& ctx);
  // Sets the global named by the string at name_ref (KEYS or ARGV) to an array of items.
  void set_globals_array(int name_ref, std::span<const std::string> items);
  void arm_bounds();
  void disarm_bounds();
  // An order-independent digest of the globals, the tables under them, the script proxy and
  // their metatables: keys, and values by identity (addresses, interned strings' included; numbers).
  uint64_t fingerprint() const;

  LuaEngineOptions options_;
  lua_State* lua_ = nullptr;
  int globals_ref_ = 0;  // the real globals table (the scripts see a read-only proxy)
  int proxy_ref_ = 0;
  // The strings "KEYS" and "ARGV", held in the registry: pushing one by reference is a fraction of
  // interning it again (hashing, a string table lookup) at every script run.
  int keys_name_ref_ = 0;
  int argv_name_ref_ = 0;
  std::map<std::string, Script> scripts_;        // what Redis shows: EVALSHA finds these
  std::map<std::string, Script> compiled_kept_;  // forgotten, compiled, at most kCompiledKeptMax
  std::vector<std::pair<std::string, std::string>> sha_memo_;  // (body, sha), most recent last

  // State of the running script, for the C functions.
  CommandContext* ctx_ = nullptr;
  std::exception_ptr
      failure_;  // a C++ exception raised under redis.call, rethrown after the script
  uint64_t instructions_ = 0;
  bool over_limit_ = false;
  size_t heap_bytes_ = 0;
  bool memory_armed_ = false;
  uint64_t rand48_ = 0;
  uint64_t pristine_ = 0;  // fingerprint() of the state as built
};

// A node's engine: a pooled one when this thread has one (reset and pristine), else a new one;
// the handle gives it back to the pool (or closes it) when it goes.
struct LuaEngineReturn {
  void operator()(LuaEngine* engine) const;
};
using LuaEngineHandle = std::unique_ptr<LuaEngine, LuaEngineReturn>;
LuaEngineHandle take_lua_engine(LuaEngineOptions options);
// Engines this thread keeps for reuse, at most this many; how many it keeps now.
inline constexpr size_t kLuaEnginePoolMax = 64;
size_t pooled_lua_engines();

}  // namespace lockstep::sim
