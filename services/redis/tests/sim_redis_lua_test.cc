// The embedded Lua 5.1 of the simulated Redis. Expected replies and error texts were checked with
// redis-cli against redis-server 7.0.15 (Debian 12) unless a comment says otherwise.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "services/redis/client/sha1.h"
#include "services/redis/sim/commands.h"
#include "services/redis/sim/keyspace.h"
#include "services/redis/sim/lua_engine.h"
#include "services/redis/tests/sim_redis_support.h"

using namespace lockstep::sim;
using lockstep::RedisReply;
using lockstep::sha1_hex;

using namespace lockstep::sim::testing;

namespace {

// Redis 7.0's suffix for an error raised inside a script.
RedisReply script_error(const std::string& body, const std::string& text, int line = 1) {
  return error(text + " script: " + sha1_hex(body) + ", on @user_script:" + std::to_string(line) +
               ".");
}

const std::string kCompareAndPexpire =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) "
    "else return 0 end";
const std::string kGrant =
    "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then "
    "return redis.call('incr', KEYS[2]) else return false end";

}  // namespace

TEST_CASE("lua: the adapter's compare-and-delete script", "[sim][redis][lua]") {
  Server s;
  CHECK(s.eval(kCompareAndDelete, {"lock"}, {"me"}) == num(0));  // no key
  s.run({"SET", "lock", "other", "PX", "1000"});
  CHECK(s.eval(kCompareAndDelete, {"lock"}, {"me"}) == num(0));
  CHECK(s.run({"GET", "lock"}) == str("other"));
  s.run({"SET", "lock", "me", "PX", "1000"});
  s.sink.changes.clear();
  CHECK(s.eval(kCompareAndDelete, {"lock"}, {"me"}) == num(1));
  CHECK(s.run({"EXISTS", "lock"}) == num(0));
  REQUIRE(s.sink.changes.size() == 1);
  CHECK(s.sink.changes[0].kind == KeyChange::Kind::del);
  CHECK(s.sink.changes[0].value == "me");
}

TEST_CASE("lua: the adapter's compare-and-pexpire script", "[sim][redis][lua]") {
  Server s;
  CHECK(s.eval(kCompareAndPexpire, {"lock"}, {"me", "5000"}) == num(0));
  s.run({"SET", "lock", "me", "PX", "1000"});
  CHECK(s.eval(kCompareAndPexpire, {"lock"}, {"other", "5000"}) == num(0));
  CHECK(s.run({"PTTL", "lock"}) == num(1000));
  CHECK(s.eval(kCompareAndPexpire, {"lock"}, {"me", "5000"}) == num(1));
  CHECK(s.run({"PTTL", "lock"}) == num(5000));
  // An expired lock cannot be brought back.
  s.now_ms += 5001;
  CHECK(s.eval(kCompareAndPexpire, {"lock"}, {"me", "5000"}) == num(0));
  CHECK(s.run({"EXISTS", "lock"}) == num(0));
}

TEST_CASE("lua: the grant script returns a fencing token, or nil when held", "[sim][redis][lua]") {
  Server s;
  CHECK(s.eval(kGrant, {"lock", "lock:token"}, {"a", "1000"}) == num(1));
  CHECK(s.eval(kGrant, {"lock", "lock:token"}, {"b", "1000"}) == nil());
  CHECK(s.run({"GET", "lock"}) == str("a"));
  s.now_ms += 1001;
  CHECK(s.eval(kGrant, {"lock", "lock:token"}, {"b", "1000"}) == num(2));
  CHECK(s.run({"GET", "lock:token"}) == str("2"));
}

TEST_CASE("lua: EVALSHA answers NOSCRIPT until EVAL or SCRIPT LOAD caches the body",
          "[sim][redis][lua]") {
  Server s;
  const std::string sha = sha1_hex(kCompareAndDelete);
  const RedisReply noscript = error("NOSCRIPT No matching script. Please use EVAL.");
  CHECK(s.run({"EVALSHA", sha, "1", "lock", "me"}) == noscript);
  CHECK(s.eval(kCompareAndDelete, {"lock"}, {"me"}) == num(0));
  CHECK(s.run({"EVALSHA", sha, "1", "lock", "me"}) == num(0));
  CHECK(s.run({"SCRIPT", "EXISTS", sha, "nosuch"}) == array({num(1), num(0)}));
  CHECK(s.run({"SCRIPT", "FLUSH"}) == ok());
  CHECK(s.run({"EVALSHA", sha, "1", "lock", "me"}) == noscript);
  CHECK(s.run({"SCRIPT", "LOAD", "return 1"}) == str("e0e1f9fabfc9d4800c877a703b823ac0578ff8db"));
  // Redis lowercases the sha for EVALSHA and SCRIPT EXISTS.
  CHECK(s.run({"EVALSHA", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", "0"}) == num(1));
  CHECK(s.run({"SCRIPT", "EXISTS", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB"}) == array({num(1)}));
  CHECK(s.lua.cached_scripts() == 1);
  CHECK(s.run({"SCRIPT", "LOAD", "return foo("}) ==
        error("ERR Error compiling script (new function): user_script:1: unexpected symbol near "
              "'<eof>'"));
}

TEST_CASE("lua: every body gets its own sha, through more bodies than the engine remembers",
          "[sim][redis][lua]") {
  Server s;
  // The engine remembers the shas of the last few bodies: 20 bodies, sent in an order that comes
  // back to old ones after they were forgotten, and to recent ones while remembered.
  std::vector<std::string> bodies;
  for (int i = 0; i < 20; ++i) bodies.push_back("return " + std::to_string(i));
  for (const int i : {0, 1, 2, 0, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1, 12, 0, 19, 18, 0, 19, 5}) {
    const std::string& body = bodies[static_cast<size_t>(i)];
    CHECK(s.run({"SCRIPT", "LOAD", body}) == str(sha1_hex(body)));
    CHECK(s.eval(body) == num(i));
    CHECK(s.run({"EVALSHA", sha1_hex(body), "0"}) == num(i));
  }
}

TEST_CASE(
    "lua: a script forgotten and sent again runs as new, also one that changed its own "
    "environment",
    "[sim][redis][lua]") {
  Server s;
  // Marks its own environment: on a second run of the same function it answers 1.
  const std::string marks =
      "if rawget(getfenv(1), 'mark') then return 1 end "
      "setfenv(1, setmetatable({mark = true}, {__index = getfenv(0)})) return 0";
  const std::string sha = sha1_hex(marks);
  CHECK(s.eval(marks) == num(0));
  CHECK(s.run({"EVALSHA", sha, "0"}) == num(1));  // the cached function, changed: as Redis does
  for (int round = 0; round < 2; ++round) {
    CHECK(s.run({"SCRIPT", "FLUSH"}) == ok());
    CHECK(s.run({"EVALSHA", sha, "0"}) == error("NOSCRIPT No matching script. Please use EVAL."));
    CHECK(s.eval(marks) == num(0));  // compiled afresh: its changed self was not taken back
  }
  // An unchanged script forgotten and sent again: the same replies, counted once in the cache.
  CHECK(s.eval(kCompareAndDelete, {"lock"}, {"me"}) == num(0));
  CHECK(s.run({"SCRIPT", "FLUSH"}) == ok());
  CHECK(s.lua.cached_scripts() == 0);
  s.run({"SET", "lock", "me", "PX", "1000"});
  CHECK(s.eval(kCompareAndDelete, {"lock"}, {"me"}) == num(1));
  CHECK(s.lua.cached_scripts() == 1);
  CHECK(s.run({"EXISTS", "lock"}) == num(0));
}

TEST_CASE("lua: Redis replies become Lua values as Redis converts them", "[sim][redis][lua]") {
  Server s;
  s.run({"SET", "k", "v"});
  CHECK(s.eval("return type(redis.call('get','missing'))") == str("boolean"));
  CHECK(s.eval("return redis.call('get','missing') == false and 1 or 0") == num(1));
  CHECK(s.eval("return type(redis.call('set','a','b'))") == str("table"));
  CHECK(s.eval("return redis.call('set','a','b')['ok']") == str("OK"));
  CHECK(s.eval("return redis.call('PING')['ok']") == str("PONG"));
  CHECK(s.eval("return type(redis.call('incr','n'))") == str("number"));
  CHECK(s.eval("return redis.call('get','k')") == str("v"));
  CHECK(s.eval("return redis.pcall('incr','k')['err']") ==
        str("ERR value is not an integer or out of range"));
  CHECK(s.eval("return redis.call('exists', 'k', 'k')") == num(2));
}

TEST_CASE("lua: Lua values become Redis replies as Redis converts them", "[sim][redis][lua]") {
  Server s;
  CHECK(s.eval("return 3.99") == num(3));
  CHECK(s.eval("return -3.99") == num(-3));
  CHECK(s.eval("return 1e30") == num(INT64_MIN));  // what (long long) gives on x86, as redis-server
  CHECK(s.eval("return {1.5, 2.7}") == array({num(1), num(2)}));
  CHECK(s.eval("return 'x'") == str("x"));
  CHECK(s.eval("return true") == num(1));
  CHECK(s.eval("return false") == nil());
  CHECK(s.eval("return nil") == nil());
  CHECK(s.eval("return") == nil());
  CHECK(s.eval("return {1,2,nil,4}") == array({num(1), num(2)}));  // stops at the first nil
  CHECK(s.eval("return {1,'a',false,true,{ok='x'}}") ==
        array({num(1), str("a"), nil(), num(1), RedisReply::status_of("x")}));
  CHECK(s.eval("return {{1,2},{}}") == array({array({num(1), num(2)}), array({})}));
  CHECK(s.eval("return {ok='FINE'}") == RedisReply::status_of("FINE"));
  CHECK(s.eval("return redis.status_reply('FINE')") == RedisReply::status_of("FINE"));
  CHECK(s.eval("return {err='My Error'}") == error("My Error"));
  CHECK(s.eval("return redis.error_reply('My Error')") == error("My Error"));
  CHECK(s.eval("return redis.error_reply('oops')") == error("ERR oops"));
  CHECK(s.eval("return {err=5}") == array({}));  // only a string err/ok field counts
  CHECK(s.eval("return {ok=5}") == array({}));
  CHECK(s.eval("return KEYS[1] .. ARGV[1]", {"k"}, {"a"}) == str("ka"));
  CHECK(s.eval("return #ARGV", {"k"}, {"a", "b"}) == num(2));
  CHECK(s.eval("return KEYS", {"a", "b"}) == array({str("a"), str("b")}));
}

TEST_CASE("lua: numbers passed to redis.call are formatted with %.17g", "[sim][redis][lua]") {
  Server s;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1.5", "1.5"}, {"0.1", "0.10000000000000001"}, {"1e20", "1e+20"}, {"5", "5"}};
  for (const auto& [lua_number, stored] : cases) {
    CHECK(s.eval("return redis.call('set', 'num', " + lua_number + ")") == ok());
    CHECK(s.run({"GET", "num"}) == str(stored));
  }
}

TEST_CASE("lua: redis.call raises errors, redis.pcall returns them", "[sim][redis][lua]") {
  Server s;
  s.run({"SET", "x", "abc"});
  const std::string call_incr = "return redis.call('incr','x')";
  CHECK(s.eval(call_incr) ==
        script_error(call_incr, "ERR value is not an integer or out of range"));
  CHECK(s.eval("return redis.pcall('incr','x')") ==
        error("ERR value is not an integer or out of range"));
  const std::vector<std::pair<std::string, std::string>> raised = {
      {"return redis.call('nosuch')", "ERR Unknown Redis command called from script"},
      {"return redis.call()", "ERR Please specify at least one argument for this redis lib call"},
      {"return redis.call('get')", "ERR Wrong number of args calling Redis command from script"},
      {"return redis.call('get', {})",
       "ERR Lua redis lib command arguments must be strings or integers"},
      {"return redis.call('set', 'k', true)",
       "ERR Lua redis lib command arguments must be strings or integers"},
      {"return redis.call('eval', 'return 1', 0)",
       "ERR This Redis command is not allowed from script"},
      {"return redis.call('set',KEYS[1],ARGV[1],'PX','abc')",
       "ERR value is not an integer or out of range"},
      {"return redis.call('set',KEYS[1],ARGV[1],'PX',0)",
       "ERR invalid expire time in 'set' command"},
  };
  for (const auto& [body, text] : raised) {
    INFO(body);
    CHECK(s.eval(body, {"zz"}, {"v"}) == script_error(body, text));
  }
  CHECK(s.eval("return redis.pcall('nosuch')") ==
        error("ERR Unknown Redis command called from script"));
  CHECK(s.eval("return redis.pcall('get')") ==
        error("ERR Wrong number of args calling Redis command from script"));
  CHECK(s.eval("return redis.pcall('set',KEYS[1],ARGV[1],'PX',0)", {"zz"}, {"v"}) ==
        error("ERR invalid expire time in 'set' command"));
  // A script may catch a raised error with pcall and go on.
  CHECK(s.eval("local ok, e = pcall(redis.call, 'incr', 'x'); return {tostring(ok), e['err']}") ==
        array({str("false"), str("ERR value is not an integer or out of range")}));
}

TEST_CASE("lua: runtime errors and the sandbox, in Redis 7.0's words", "[sim][redis][lua]") {
  Server s;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"return foo",
       "ERR user_script:1: Script attempted to access nonexistent global variable 'foo'"},
      {"foo = 1", "ERR user_script:1: Attempt to modify a readonly table"},
      {"return error('boom')", "ERR user_script:1: boom"},
      {"return error({err='CUSTOM boom'})", "CUSTOM boom"},
      {"return 'x' .. nil", "ERR user_script:1: attempt to concatenate a nil value"},
      {"return type(os)",
       "ERR user_script:1: Script attempted to access nonexistent global variable 'os'"},
      {"return type(io)",
       "ERR user_script:1: Script attempted to access nonexistent global variable 'io'"},
      {"return type(dofile)",
       "ERR user_script:1: Script attempted to access nonexistent global variable 'dofile'"},
      {"return type(print)",
       "ERR user_script:1: Script attempted to access nonexistent global variable 'print'"},
  };
  for (const auto& [body, text] : cases) {
    INFO(body);
    CHECK(s.eval(body) == script_error(body, text));
  }
  const std::string two_lines = "local x = 1\nreturn x .. nil";
  CHECK(s.eval(two_lines) ==
        script_error(two_lines, "ERR user_script:2: attempt to concatenate a nil value", 2));
  CHECK(s.eval("return type(loadstring)") == str("function"));
  CHECK(s.eval("return redis.sha1hex('')") == str("da39a3ee5e6b4b0d3255bfef95601890afd80709"));
  // Not checked against the server: the debug library is gone, as Redis removes it after start.
  CHECK(s.eval("return type(rawget(_G, 'debug'))") == str("nil"));
  // A global assigned through loadstring is refused too, and nothing leaks into later scripts.
  CHECK(s.eval("loadstring('leak = 1')()").is_error());
  CHECK(s.eval("return rawget(_G, 'leak') == nil and 1 or 0") == num(1));
}

TEST_CASE("lua: math.random is deterministic (reseeded with 0 for every script)",
          "[sim][redis][lua]") {
  // Redis before 7.0 reseeded every script with 0 and these are its classic first values;
  // redis-server 7.0.15 no longer reseeds (its sequence continues across scripts), a deliberate
  // difference: the simulator must not depend on history it does not model.
  Server s;
  CHECK(s.eval("return tostring(math.random())") == str("0.17082803611217"));
  CHECK(s.eval("return tostring(math.random())") == str("0.17082803611217"));
  CHECK(s.eval("return {math.random(100), math.random(100)}") == array({num(18), num(75)}));
  CHECK(s.eval("return math.random(1000000)") == num(170829));
}

TEST_CASE("lua: the instruction bound stops runaway scripts", "[sim][redis][lua]") {
  Server s(LuaEngineOptions{.instruction_limit = 100'000});
  const std::string spin = "while true do end";
  const RedisReply r = s.eval(spin);
  REQUIRE(r.is_error());
  CHECK(r.str.find("Script exceeded the simulator's instruction limit") != std::string::npos);
  // pcall cannot swallow it: once over the limit, every instruction fails.
  const RedisReply caught = s.eval("while true do pcall(function() while true do end end) end");
  REQUIRE(caught.is_error());
  CHECK(caught.str.find("instruction limit") != std::string::npos);
  // The engine is fine afterwards, and a normal script is far below the bound.
  CHECK(s.eval("local n = 0 for i = 1, 1000 do n = n + i end return n") == num(500500));
}

TEST_CASE("lua: the memory bound stops scripts that grow without end", "[sim][redis][lua]") {
  Server s(LuaEngineOptions{.instruction_limit = 1'000'000'000, .memory_limit_bytes = 4 << 20});
  const RedisReply r =
      s.eval("local t = {} for i = 1, 1e9 do t[i] = string.rep('x', 100) .. i end");
  REQUIRE(r.is_error());
  CHECK(r.str.find("not enough memory") != std::string::npos);
  CHECK(s.eval("return 7") == num(7));
}

TEST_CASE("lua: shebang first line is accepted", "[sim][redis][lua]") {
  Server s;
  CHECK(s.eval("#!lua\nreturn 3") == num(3));
  CHECK(s.eval("#!lua flags=no-writes\nreturn 4") == num(4));
  CHECK(s.eval("#!python\nreturn 3") == error("ERR Unexpected engine in script shebang"));
}
