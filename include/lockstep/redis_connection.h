#pragma once
// The RedisConnection seam: send one command (argv) to one Redis server and get its reply.
//
// Real: hiredis over TCP (services/redis/adapter/hiredis_connection.h). Sim: a connection over the
// simulated network to a simulated Redis node. Adapters see only this interface, so they run
// unchanged in both worlds.
//
// Invariants: command() blocks until the reply arrives or the command timeout passes; a transport
// failure (timeout, refused, reset) comes back as an IoStatus, never as an exception, and never as
// a reply; a server error (-ERR ..., -NOSCRIPT ...) is a reply of type error. After a timeout the
// connection may still deliver the late reply to nobody: the next command never sees it.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/io_status.h"

namespace lockstep {

// One RESP2 reply.
struct RedisReply {
  enum class Type { status, error, integer, nil, string, array };
  Type type = Type::nil;
  std::string str{};                   // status, error, string
  int64_t integer = 0;                 // integer
  std::vector<RedisReply> elements{};  // array

  static RedisReply status_of(std::string text) {
    return {.type = Type::status, .str = std::move(text)};
  }
  static RedisReply error_of(std::string text) {
    return {.type = Type::error, .str = std::move(text)};
  }
  static RedisReply integer_of(int64_t value) { return {.type = Type::integer, .integer = value}; }
  static RedisReply string_of(std::string text) {
    return {.type = Type::string, .str = std::move(text)};
  }
  static RedisReply nil() { return {}; }
  static RedisReply array_of(std::vector<RedisReply> items) {
    return {.type = Type::array, .elements = std::move(items)};
  }

  bool is_error() const { return type == Type::error; }
  bool is_nil() const { return type == Type::nil; }
  bool operator==(const RedisReply& other) const = default;
};

// "OK", "(nil)", "(integer) 3", "\"value\"", "(error) ERR ...", "[1, \"a\"]": for traces and tests.
std::string describe(const RedisReply& reply);

struct RedisResult {
  IoStatus status = IoStatus::ok;
  RedisReply reply{};     // valid when status == ok
  std::string message{};  // what went wrong, when status != ok

  bool ok() const { return status == IoStatus::ok; }
};

class RedisConnection {
 public:
  virtual ~RedisConnection() = default;
  virtual RedisResult command(const std::vector<std::string>& argv) = 0;
  // "127.0.0.1:6379", "sim:redis-0": for messages.
  virtual std::string endpoint() const = 0;
};

}  // namespace lockstep
