// The simulated keyspace and command table against Redis 7.0.15. Every expected text and value
// below was checked with redis-cli against redis-server 7.0.15 (Debian 12), unless marked.
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

TEST_CASE("keyspace: SET, GET, DEL, EXISTS basics", "[sim][redis][keyspace]") {
  Server s;
  CHECK(s.run({"GET", "k"}) == nil());
  CHECK(s.run({"SET", "k", "v"}) == ok());
  CHECK(s.run({"get", "k"}) == str("v"));
  CHECK(s.run({"EXISTS", "k", "k", "nosuch"}) == num(2));  // counted twice, as Redis does
  CHECK(s.run({"DEL", "k", "k", "nosuch"}) == num(1));
  CHECK(s.run({"EXISTS", "k"}) == num(0));
  CHECK(s.run({"SET", "a", "1"}) == ok());
  CHECK(s.run({"SET", "b", "2"}) == ok());
  CHECK(s.run({"DEL", "a", "b", "c"}) == num(2));
  CHECK(s.run({"PING"}) == RedisReply::status_of("PONG"));
  CHECK(s.run({"Ping", "Hi"}) == str("Hi"));
}

TEST_CASE("keyspace: SET options NX XX GET KEEPTTL and expiries", "[sim][redis][keyspace]") {
  Server s;
  CHECK(s.run({"SET", "k", "v", "NX", "GET"}) == nil());      // set, no old value
  CHECK(s.run({"SET", "k", "v2", "NX", "GET"}) == str("v"));  // not set, old value
  CHECK(s.run({"GET", "k"}) == str("v"));
  CHECK(s.run({"SET", "k", "v3", "XX", "GET", "PX", "100000"}) == str("v"));
  CHECK(s.run({"PTTL", "k"}) == num(100000));
  CHECK(s.run({"SET", "k", "v4", "KEEPTTL"}) == ok());
  CHECK(s.run({"PTTL", "k"}) == num(100000));
  CHECK(s.run({"SET", "k", "v5"}) == ok());  // a plain SET clears the TTL
  CHECK(s.run({"PTTL", "k"}) == num(-1));
  CHECK(s.run({"SET", "n", "x", "XX"}) == nil());
  CHECK(s.run({"SET", "k", "x", "NX"}) == nil());
  CHECK(s.run({"SET", "e", "x", "EX", "5"}) == ok());
  CHECK(s.run({"PTTL", "e"}) == num(5000));
  CHECK(s.run({"TTL", "e"}) == num(5));
  CHECK(s.run({"SET", "e", "x", "PXAT", std::to_string(s.now_ms + 700)}) == ok());
  CHECK(s.run({"PTTL", "e"}) == num(700));
  CHECK(s.run({"SET", "e", "x", "EXAT", std::to_string(s.now_ms / 1000 + 3)}) == ok());
  CHECK(s.run({"PTTL", "e"}) == num(3000));
  // Repeated options are accepted; the last expiry wins.
  CHECK(s.run({"SET", "k", "v", "NX", "NX"}) == nil());
  CHECK(s.run({"SET", "r", "v", "PX", "100", "PX", "200"}) == ok());
  CHECK(s.run({"PTTL", "r"}) == num(200));
  CHECK(s.run({"SET", "r", "v", "GET", "GET"}) == str("v"));
  // PXAT in the past: accepted, and the key is gone on the next access.
  CHECK(s.run({"SET", "p", "v", "PXAT", "1"}) == ok());
  CHECK(s.run({"GET", "p"}) == nil());
  CHECK(s.run({"SETNX", "sn", "a"}) == num(1));
  CHECK(s.run({"SETNX", "sn", "b"}) == num(0));
  CHECK(s.run({"GET", "sn"}) == str("a"));
}

TEST_CASE("keyspace: error replies match redis-server 7.0.15", "[sim][redis][keyspace]") {
  Server s;
  const RedisReply not_int = error("ERR value is not an integer or out of range");
  const RedisReply syntax = error("ERR syntax error");
  const RedisReply bad_set_expire = error("ERR invalid expire time in 'set' command");
  CHECK(s.run({"set"}) == error("ERR wrong number of arguments for 'set' command"));
  CHECK(s.run({"SET", "k"}) == error("ERR wrong number of arguments for 'set' command"));
  CHECK(s.run({"SET", "k", "v", "NX", "XX"}) == syntax);
  CHECK(s.run({"SET", "k", "v", "EX"}) == syntax);
  CHECK(s.run({"SET", "k", "v", "KEEPTTL", "PX", "100"}) == syntax);
  CHECK(s.run({"SET", "k", "v", "PX", "100", "EX", "1"}) == syntax);
  CHECK(s.run({"SET", "k", "v", "FOO"}) == syntax);
  CHECK(s.run({"SET", "k", "v", "PX", "0"}) == bad_set_expire);
  CHECK(s.run({"SET", "k", "v", "PX", "-5"}) == bad_set_expire);
  CHECK(s.run({"SET", "k", "v", "EX", "0"}) == bad_set_expire);
  CHECK(s.run({"SET", "k", "v", "PXAT", "0"}) == bad_set_expire);
  CHECK(s.run({"SET", "k", "v", "PX", "abc"}) == not_int);
  CHECK(s.run({"SET", "k", "v", "PX", "9223372036854775807"}) == bad_set_expire);
  CHECK(s.run({"SET", "k", "v", "EX", "9223372036854775"}) == bad_set_expire);
  CHECK(s.run({"get"}) == error("ERR wrong number of arguments for 'get' command"));
  CHECK(s.run({"GET", "a", "b"}) == error("ERR wrong number of arguments for 'get' command"));
  CHECK(s.run({"del"}) == error("ERR wrong number of arguments for 'del' command"));
  CHECK(s.run({"exists"}) == error("ERR wrong number of arguments for 'exists' command"));
  CHECK(s.run({"pexpire", "k"}) == error("ERR wrong number of arguments for 'pexpire' command"));
  CHECK(s.run({"pexpire", "k", "abc"}) == not_int);
  CHECK(s.run({"pexpire", "k", "100", "FOO"}) == error("ERR Unsupported option FOO"));
  CHECK(s.run({"pexpire", "k", "100", "NX", "XX"}) ==
        error("ERR NX and XX, GT or LT options at the same time are not compatible"));
  CHECK(s.run({"pexpire", "k", "100", "nx", "gt"}) ==
        error("ERR NX and XX, GT or LT options at the same time are not compatible"));
  CHECK(s.run({"pexpire", "k", "100", "GT", "LT"}) ==
        error("ERR GT and LT options at the same time are not compatible"));
  CHECK(s.run({"pexpire", "k", "9223372036854775807"}) ==
        error("ERR invalid expire time in 'pexpire' command"));
  CHECK(s.run({"EXPIRE", "k", "9223372036854775807"}) ==
        error("ERR invalid expire time in 'expire' command"));
  CHECK(s.run({"pttl"}) == error("ERR wrong number of arguments for 'pttl' command"));
  CHECK(s.run({"pttl", "a", "b"}) == error("ERR wrong number of arguments for 'pttl' command"));
  CHECK(s.run({"incr"}) == error("ERR wrong number of arguments for 'incr' command"));
  CHECK(s.run({"SETNX", "a"}) == error("ERR wrong number of arguments for 'setnx' command"));
  CHECK(s.run({"ping", "a", "b"}) == error("ERR wrong number of arguments for 'ping' command"));
  CHECK(s.run({"foo"}) == error("ERR unknown command 'foo', with args beginning with: "));
  CHECK(s.run({"foo", "a", "b", "c"}) ==
        error("ERR unknown command 'foo', with args beginning with: 'a' 'b' 'c' "));
  CHECK(s.run({"FOO"}) == error("ERR unknown command 'FOO', with args beginning with: "));
  CHECK(s.run({"eval"}) == error("ERR wrong number of arguments for 'eval' command"));
  CHECK(s.run({"eval", "return 1"}) == error("ERR wrong number of arguments for 'eval' command"));
  CHECK(s.run({"eval", "return 1", "abc"}) == not_int);
  CHECK(s.run({"eval", "return 1", "-1"}) == error("ERR Number of keys can't be negative"));
  CHECK(s.run({"eval", "return 1", "2", "a"}) ==
        error("ERR Number of keys can't be greater than number of args"));
  CHECK(s.run({"evalsha", "abc", "0"}) == error("NOSCRIPT No matching script. Please use EVAL."));
  CHECK(s.run({"evalsha", "abc"}) == error("ERR wrong number of arguments for 'evalsha' command"));
  CHECK(s.run({"evalsha", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "x"}) == not_int);
  CHECK(s.run({"script"}) == error("ERR wrong number of arguments for 'script' command"));
  CHECK(s.run({"script", "load"}) ==
        error("ERR wrong number of arguments for 'script|load' command"));
  CHECK(s.run({"script", "foo"}) == error("ERR unknown subcommand 'foo'. Try SCRIPT HELP."));
  CHECK(s.run({"script", "exists"}) ==
        error("ERR wrong number of arguments for 'script|exists' command"));
  CHECK(s.run({"script", "flush", "bad"}) ==
        error("ERR SCRIPT FLUSH only support SYNC|ASYNC option"));
  CHECK(s.run({"script", "flush", "async"}) == ok());
  CHECK(s.sink.changes.empty());  // no error changed anything
}

TEST_CASE("keyspace: INCR accepts only Redis integers and keeps the TTL",
          "[sim][redis][keyspace]") {
  Server s;
  const RedisReply not_int = error("ERR value is not an integer or out of range");
  CHECK(s.run({"INCR", "n"}) == num(1));
  CHECK(s.run({"PTTL", "n"}) == num(-1));
  for (const char* bad : {"abc", "01", "+1", " 1", "-0", "1.0", ""}) {
    INFO(bad);
    CHECK(s.run({"SET", "n", bad}) == ok());
    CHECK(s.run({"INCR", "n"}) == not_int);
  }
  CHECK(s.run({"SET", "n", "-5"}) == ok());
  CHECK(s.run({"INCR", "n"}) == num(-4));
  CHECK(s.run({"SET", "n", "9223372036854775807"}) == ok());
  CHECK(s.run({"INCR", "n"}) == error("ERR increment or decrement would overflow"));
  CHECK(s.run({"SET", "c", "5", "PX", "100000"}) == ok());
  CHECK(s.run({"INCR", "c"}) == num(6));
  CHECK(s.run({"PTTL", "c"}) == num(100000));
  CHECK(s.run({"INCR", "d", "e"}) == error("ERR wrong number of arguments for 'incr' command"));
}

TEST_CASE("keyspace: parse_int64 is Redis's string2ll", "[sim][redis][keyspace]") {
  int64_t v = 0;
  CHECK((parse_int64("0", v) && v == 0));
  CHECK((parse_int64("-9223372036854775808", v) && v == INT64_MIN));
  CHECK((parse_int64("9223372036854775807", v) && v == INT64_MAX));
  CHECK_FALSE(parse_int64("9223372036854775808", v));
  CHECK_FALSE(parse_int64("-9223372036854775809", v));
  CHECK_FALSE(parse_int64("-", v));
  CHECK_FALSE(parse_int64("00", v));
  CHECK_FALSE(parse_int64("1a", v));
  CHECK_FALSE(parse_int64("99999999999999999999", v));
}

TEST_CASE("keyspace: PEXPIRE with NX XX GT LT, and a TTL at or below zero deletes",
          "[sim][redis][keyspace]") {
  Server s;
  CHECK(s.run({"PEXPIRE", "a", "100"}) == num(0));  // missing key
  CHECK(s.run({"SET", "a", "1"}) == ok());
  CHECK(s.run({"PEXPIRE", "a", "100", "GT"}) == num(0));  // no TTL counts as infinite
  CHECK(s.run({"PEXPIRE", "a", "100", "LT"}) == num(1));
  CHECK(s.run({"PTTL", "a"}) == num(100));
  CHECK(s.run({"PEXPIRE", "a", "200", "GT"}) == num(1));
  CHECK(s.run({"PEXPIRE", "a", "50", "LT"}) == num(1));
  CHECK(s.run({"PEXPIRE", "a", "500", "NX"}) == num(0));
  CHECK(s.run({"PEXPIRE", "a", "500", "XX"}) == num(1));
  CHECK(s.run({"PTTL", "a"}) == num(500));
  CHECK(s.run({"PEXPIRE", "a", "-1"}) == num(1));
  CHECK(s.run({"EXISTS", "a"}) == num(0));
  CHECK(s.run({"SET", "a", "1"}) == ok());
  CHECK(s.run({"PEXPIRE", "a", "0"}) == num(1));
  CHECK(s.run({"EXISTS", "a"}) == num(0));
  CHECK(s.run({"SET", "a", "1"}) == ok());
  CHECK(s.run({"PEXPIRE", "a", "-9223372036854775808"}) == num(1));
  CHECK(s.run({"EXISTS", "a"}) == num(0));
  CHECK(s.run({"SET", "a", "1"}) == ok());
  CHECK(s.run({"EXPIRE", "a", "10"}) == num(1));
  CHECK(s.run({"TTL", "a"}) == num(10));
  CHECK(s.run({"TTL", "nosuch"}) == num(-2));
  CHECK(s.run({"PTTL", "nosuch"}) == num(-2));
}

TEST_CASE("keyspace: a key with expire_at == now still exists (Redis 7.0: now > when)",
          "[sim][redis][keyspace]") {
  // redis-server 7.0.15: 3,000 pipelined `SET k v PX 1` + `PTTL k` gave 70 replies of 0 and
  // none of -2, so a key with no time left is still there.
  Server s;
  CHECK(s.run({"SET", "k", "v", "PX", "10"}) == ok());
  s.now_ms += 10;
  CHECK(s.run({"PTTL", "k"}) == num(0));
  CHECK(s.run({"GET", "k"}) == str("v"));
  s.now_ms += 1;
  CHECK(s.run({"PTTL", "k"}) == num(-2));
  CHECK(s.run({"GET", "k"}) == nil());
  CHECK(s.keyspace.peek("k") == nullptr);  // deleted on access
}

TEST_CASE("keyspace: changes are reported exactly", "[sim][redis][keyspace]") {
  Server s;
  using K = KeyChange::Kind;
  s.run({"SET", "k", "v", "PX", "100"});
  s.run({"SET", "k", "w", "NX", "PX", "100"});  // fails: nothing
  s.run({"PEXPIRE", "k", "300"});
  s.run({"DEL", "k"});
  s.run({"DEL", "k"});  // nothing left: nothing
  s.run({"SET", "t", "1", "PX", "5"});
  s.now_ms += 6;
  s.run({"SET", "t", "2", "NX"});  // the expired key goes first, then the write
  s.run({"INCR", "t"});
  s.run({"PEXPIRE", "t", "0"});
  REQUIRE(s.sink.changes.size() == 8);
  const auto& c = s.sink.changes;
  CHECK((c[0].kind == K::set && c[0].key == "k" && c[0].value == "v" && c[0].ttl_ms == 100));
  CHECK((c[0].expire_at_ms == 1'000'100));
  CHECK((c[1].kind == K::pexpire && c[1].value == "v" && c[1].ttl_ms == 300));
  CHECK((c[2].kind == K::del && c[2].value == "v"));
  CHECK((c[3].kind == K::set && c[3].key == "t" && c[3].ttl_ms == 5));
  CHECK((c[4].kind == K::expired && c[4].key == "t" && c[4].value == "1"));
  CHECK((c[5].kind == K::set && c[5].value == "2" && c[5].ttl_ms == -1));
  CHECK((c[6].kind == K::set && c[6].value == "3"));
  CHECK((c[7].kind == K::del && c[7].value == "3"));  // PEXPIRE 0 deletes (Redis notifies "del")
}

TEST_CASE("keyspace: replicas hide expired keys without deleting them", "[sim][redis][keyspace]") {
  Server s;
  s.keyspace.set_expire_on_access(false);
  s.keyspace.apply(
      {.kind = KeyChange::Kind::set, .key = "k", .value = "v", .expire_at_ms = s.now_ms});
  CHECK(s.run({"GET", "k"}) == str("v"));
  s.now_ms += 1;
  CHECK(s.run({"GET", "k"}) == nil());
  CHECK(s.run({"EXISTS", "k"}) == num(0));
  CHECK(s.keyspace.peek("k") != nullptr);
  CHECK(s.sink.changes.empty());
  s.keyspace.apply({.kind = KeyChange::Kind::pexpire, .key = "k", .expire_at_ms = s.now_ms + 50});
  CHECK(s.run({"PTTL", "k"}) == num(50));
}

TEST_CASE("keyspace: SHA1 (adapters/core) known vectors and Redis script ids",
          "[sim][redis][sha1]") {
  CHECK(sha1_hex("") == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  CHECK(sha1_hex("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d");
  CHECK(sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  CHECK(sha1_hex(std::string(1'000'000, 'a')) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
  CHECK(sha1_hex("The quick brown fox jumps over the lazy dog") ==
        "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12");
  // 55, 56 and 64 bytes: the padding edge cases.
  CHECK(sha1_hex(std::string(55, 'a')) == "c1c8bbdc22796e28c0e15163d20899b65621d65a");
  CHECK(sha1_hex(std::string(56, 'a')) == "c2db330f6083854c99d4b5bfb6e8f29f201be699");
  CHECK(sha1_hex(std::string(64, 'a')) == "0098ba824b5c16427bd7a1122a5a442a25ec644d");
  // Redis's name for the script "return 1" (SCRIPT LOAD on redis-server 7.0.15).
  CHECK(sha1_hex("return 1") == "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
}
