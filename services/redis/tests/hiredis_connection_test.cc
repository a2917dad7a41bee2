// HiredisConnection against a real redis-server: every RESP2 reply type converts, arguments are
// binary safe, and transport failures (timeout, refused, a dead server) come back as IoStatus
// values, with the connection recovering on its own once the server is back.
#include <chrono>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "real/loopback.h"
#include "services/redis/adapter/hiredis_connection.h"
#include "services/redis/real/redis_server.h"
#include "services/redis/tests/hiredis_support.h"
#include "tests/real_support.h"

namespace lockstep {
namespace {

using real::RedisServerProcess;
using Type = RedisReply::Type;

int64_t elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               since)
      .count();
}

TEST_CASE("hiredis converts every reply type", "[hiredis][real]") {
  testing::require_redis_server();
  RedisServerProcess server;
  HiredisConnection connection({.port = server.port()});
  CHECK(connection.endpoint() == server.endpoint());

  CHECK(must(connection, {"SET", "k", "v"}) == RedisReply::status_of("OK"));
  CHECK(must(connection, {"GET", "k"}) == RedisReply::string_of("v"));
  CHECK(must(connection, {"GET", "missing"}) == RedisReply::nil());
  CHECK(must(connection, {"INCR", "n"}) == RedisReply::integer_of(1));
  CHECK(must(connection, {"INCR", "n"}) == RedisReply::integer_of(2));
  CHECK(must(connection, {"DEL", "k", "n", "missing"}) == RedisReply::integer_of(2));
  CHECK(must(connection, {"SET", "", ""}) == RedisReply::status_of("OK"));
  CHECK(must(connection, {"GET", ""}) == RedisReply::string_of(""));

  SECTION("a Lua table is an array, nested, with false as nil") {
    const RedisReply reply = must(connection, {"EVAL", "return {1, 'a', {2, 'b'}, false, 3}", "0"});
    CHECK(reply == RedisReply::array_of({RedisReply::integer_of(1), RedisReply::string_of("a"),
                                         RedisReply::array_of({RedisReply::integer_of(2),
                                                               RedisReply::string_of("b")}),
                                         RedisReply::nil(), RedisReply::integer_of(3)}));
    CHECK(must(connection, {"EVAL", "return {}", "0"}) == RedisReply::array_of({}));
  }
  SECTION("status, error and nil from scripts") {
    CHECK(must(connection, {"EVAL", "return redis.status_reply('FINE')", "0"}) ==
          RedisReply::status_of("FINE"));
    const RedisReply error =
        must(connection, {"EVAL", "return redis.error_reply('BOOM bad')", "0"});
    CHECK(error.type == Type::error);
    CHECK(error.str == "BOOM bad");
    CHECK(must(connection, {"EVAL", "return nil", "0"}) == RedisReply::nil());
    CHECK(must(connection, {"EVAL", "return KEYS[1] .. ARGV[1]", "1", "key", "arg"}) ==
          RedisReply::string_of("keyarg"));
  }
  SECTION("server errors are replies, not I/O failures") {
    const RedisReply unknown = must(connection, {"NOSUCHCOMMAND"});
    CHECK(unknown.is_error());
    CHECK_THAT(unknown.str, Catch::StartsWith("ERR"));
    const RedisReply noscript = must(connection, {"EVALSHA", std::string(40, 'a'), "0"});
    CHECK_THAT(noscript.str, Catch::StartsWith("NOSCRIPT"));
    CHECK(must(connection, {"PING"}) == RedisReply::status_of("PONG"));  // still usable
  }
  SECTION("arguments and values are binary safe") {
    const std::string key("k\0ey\r\n", 6);
    const std::string value("\0\x01\xff\r\n$3\r\n", 10);
    CHECK(must(connection, {"SET", key, value}) == RedisReply::status_of("OK"));
    CHECK(must(connection, {"GET", key}) == RedisReply::string_of(value));
    CHECK(must(connection, {"STRLEN", key}) == RedisReply::integer_of(10));
  }
}

TEST_CASE("a paused server makes commands time out and the connection recovers after resume",
          "[hiredis][real]") {
  testing::require_redis_server();
  RedisServerProcess server;
  HiredisConnection connection(
      {.port = server.port(), .connect_timeout_ms = 200, .command_timeout_ms = 150});
  must(connection, {"SET", "k", "1"});

  server.pause();
  const auto start = std::chrono::steady_clock::now();
  const RedisResult timed_out = connection.command({"INCR", "k"});
  const int64_t waited_ms = elapsed_ms(start);
  CHECK(timed_out.status == IoStatus::timeout);
  CHECK_THAT(timed_out.message, Catch::Contains("timed out after 150 ms"));
  CHECK(waited_ms >= 140);  // a lower bound only: a busy machine can stretch a wait, not cut it
  CHECK_FALSE(connection.connected());  // the late reply must not reach the next command

  // A new connection's handshake completes in the kernel while the server is stopped, so a command
  // on it times out too (never a refusal).
  CHECK(connection.command({"PING"}).status == IoStatus::timeout);

  server.resume();
  // The INCR may or may not have run by now; either way GET's own reply comes back, a string.
  const RedisReply value = must(connection, {"GET", "k"});
  CHECK(value.type == Type::string);
  CHECK(must(connection, {"PING"}) == RedisReply::status_of("PONG"));
}

TEST_CASE("a dead server is a connection failure, never a timeout, and the connection recovers",
          "[hiredis][real]") {
  testing::require_redis_server();
  RedisServerProcess server;
  HiredisConnection connection(
      {.port = server.port(), .connect_timeout_ms = 200, .command_timeout_ms = 500});
  must(connection, {"PING"});

  server.crash();
  // The idle check (kIdleCheckAfter) sees the closed socket before writing: connection_error. A
  // kill can land within that first millisecond after the last reply, before the check applies:
  // the command is then written whole to a dead peer, which is connection_lost (it may have been
  // applied, as far as any client can tell). Either way a connection failure, never a timeout.
  const RedisResult on_open_connection = connection.command({"PING"});
  CHECK((on_open_connection.status == IoStatus::connection_error ||
         on_open_connection.status == IoStatus::connection_lost));
  CHECK_FALSE(on_open_connection.message.empty());
  const RedisResult refused = connection.command({"PING"});  // one reconnect attempt: refused
  CHECK(refused.status == IoStatus::connection_error);
  CHECK_THAT(refused.message, Catch::Contains("refused"));
  // A refusal, not a timeout: the status and message say which, with no wall-time threshold.

  server.restart();
  CHECK(must(connection, {"PING"}) == RedisReply::status_of("PONG"));
}

TEST_CASE("a server restarted on the same port answers the first command on an idle connection",
          "[hiredis][real]") {
  testing::require_redis_server();
  RedisServerProcess server;
  HiredisConnection connection({.port = server.port()});
  must(connection, {"SET", "k", "v"});
  server.restart();  // the old socket is closed by the dead server; the client has not noticed
  CHECK(must(connection, {"PING"}) == RedisReply::status_of("PONG"));
  // And again after a restart between two commands that both reconnect.
  server.restart();
  CHECK(must(connection, {"EXISTS", "k"}).type == RedisReply::Type::integer);
}

// A lock's commands fit the connection's argument buffer on the stack; a longer one takes the
// heap path, whole.
TEST_CASE("a command with more arguments than the inline buffer is sent whole", "[hiredis][real]") {
  testing::require_redis_server();
  RedisServerProcess server;
  HiredisConnection connection({.port = server.port()});
  std::vector<std::string> argv = {"RPUSH", "list"};
  for (int i = 0; i < 12; ++i) argv.push_back(std::string(1, '\0') + std::to_string(i));
  CHECK(must(connection, argv) == RedisReply::integer_of(12));
  CHECK(must(connection, {"LINDEX", "list", "11"}) ==
        RedisReply::string_of(std::string(1, '\0') + "11"));
}

TEST_CASE("nothing listening is a connection_error that names the endpoint", "[hiredis][real]") {
  const int port = real::free_loopback_port();
  HiredisConnection connection({.port = port, .connect_timeout_ms = 200});
  const RedisResult result = connection.command({"PING"});
  CHECK(result.status == IoStatus::connection_error);
  CHECK_THAT(result.message, Catch::Contains("127.0.0.1:" + std::to_string(port)));
  CHECK_FALSE(connection.connected());
}

}  // namespace
}  // namespace lockstep
