// The simulated node's RESP front (services/redis/sim/resp.h): commands parsed from bytes that arrive in
// any pieces, inline commands, protocol errors, and replies encoded as redis-server sends them.
#include <catch2/catch.hpp>

#include "services/redis/sim/resp.h"

namespace lockstep::sim {

TEST_CASE("resp: a command split anywhere parses once complete", "[resp]") {
  const std::vector<std::string> argv = {"SET", "lock:a", "va\r\nlue", "PX", "1000", "NX"};
  const std::string bytes = encode_command(argv) + encode_command({"GET", "lock:a"});
  for (size_t cut = 0; cut <= bytes.size(); ++cut) {
    RespParser parser;
    parser.feed(bytes.substr(0, cut));
    std::vector<std::vector<std::string>> got;
    while (auto command = parser.next()) got.push_back(*command);
    parser.feed(bytes.substr(cut));
    while (auto command = parser.next()) got.push_back(*command);
    INFO("cut at " << cut);
    REQUIRE(got.size() == 2);
    CHECK(got[0] == argv);
    CHECK(got[1] == std::vector<std::string>{"GET", "lock:a"});
    CHECK(parser.error().empty());
  }
}

TEST_CASE("resp: inline commands and empty lines", "[resp]") {
  RespParser parser;
  parser.feed("\r\nPING\r\nECHO  hi\r\n");
  CHECK(parser.next() == std::vector<std::string>{"PING"});
  CHECK(parser.next() == std::vector<std::string>{"ECHO", "hi"});
  CHECK_FALSE(parser.next().has_value());
}

TEST_CASE("resp: a malformed stream is a protocol error, after which nothing parses", "[resp]") {
  RespParser bad_length;
  bad_length.feed("*x\r\n$3\r\nGET\r\n");
  CHECK_FALSE(bad_length.next().has_value());
  CHECK(bad_length.error() == "Protocol error: invalid multibulk length");

  RespParser no_dollar;
  no_dollar.feed("*1\r\n+GET\r\n");
  CHECK_FALSE(no_dollar.next().has_value());
  CHECK(no_dollar.error() == "Protocol error: expected '$', got '+'");
  no_dollar.feed(encode_command({"PING"}));
  CHECK_FALSE(no_dollar.next().has_value());
}

TEST_CASE("resp: replies are encoded as redis-server writes them", "[resp]") {
  CHECK(encode_reply(RedisReply::status_of("OK")) == "+OK\r\n");
  CHECK(encode_reply(RedisReply::error_of("NOSCRIPT No matching script.")) ==
        "-NOSCRIPT No matching script.\r\n");
  CHECK(encode_reply(RedisReply::integer_of(-3)) == ":-3\r\n");
  CHECK(encode_reply(RedisReply::nil()) == "$-1\r\n");
  CHECK(encode_reply(RedisReply::string_of("a\r\nb")) == "$4\r\na\r\nb\r\n");
  CHECK(encode_reply(RedisReply::array_of({RedisReply::integer_of(1), RedisReply::nil()})) ==
        "*2\r\n:1\r\n$-1\r\n");
}

}  // namespace lockstep::sim
