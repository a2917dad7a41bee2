#pragma once
// The ext process protocol, version 1 (services/ext/PROTOCOL.md): the lines a lock library's driver and the
// harness exchange, and their codec. Pure functions: no processes, no I/O.
//
// Invariants: decode_line() never throws; anything that is not exactly one of the driver's three
// line kinds (ready, response, event) with every required field of the right type comes back as a
// DecodeError naming what is wrong. encode() always yields one line without its '\n'.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace lockstep::ext {

inline constexpr int kProtocolVersion = 1;
inline constexpr size_t kLineMaxBytes = size_t{64} * 1024;

enum class TokenKind { monotonic, random, none };
std::string_view to_string(TokenKind kind);

struct Capabilities {
  bool extend = false;
  bool is_locked = false;
  TokenKind token = TokenKind::none;
};

struct Ready {
  std::string name;
  std::string version;
  int protocol = 0;
  Capabilities capabilities;
  int64_t now_ns = 0;  // the driver's CLOCK_MONOTONIC when it wrote the line
};

enum class Status { ok, contended, not_owner, unknown, unsupported, error, bad_request };
std::string_view to_string(Status status);

struct LibraryError {
  std::string name;
  std::string message;
};

// A `bench` op's counts (the loop ran in the driver, which counted them): services/ext/PROTOCOL.md.
struct BenchCounts {
  int64_t successes = 0;          // acquire + hold + release that ended with the lock released
  int64_t attempts = 0;           // acquire calls, contended ones included
  int64_t releases = 0;           // release calls
  int64_t release_not_owner = 0;  // releases that found the lock gone (not successes)
  int64_t commands = -1;          // commands the library sent its servers; -1: not reported
  int64_t loops = 0;
  int64_t start_ns = 0;  // CLOCK_MONOTONIC: the loops' start and the last one's end
  int64_t end_ns = 0;
};

struct Response {
  int64_t id = 0;
  Status status = Status::error;
  std::string token;                // acquire: the library's value for the lock
  std::optional<LibraryError> err;  // what the library threw, if it did
  int64_t t0_ns = 0;                // CLOCK_MONOTONIC around the library call
  int64_t t1_ns = 0;
  std::optional<BenchCounts> bench;  // `bench` responses only
  // acquire, extend (optional): when the library itself holds the lock's validity to end, on the
  // driver's wall clock in ms (node-redlock's Lock.expiration); 0: the library reports none.
  int64_t valid_until_ms = 0;
};

struct Event {
  std::string event;  // "lock_lost"
  std::string handle;
  std::string key;
  int64_t t_ns = 0;
  std::optional<LibraryError> err;
};

struct DecodeError {
  std::string message;
};

using Line = std::variant<Ready, Response, Event, DecodeError>;
Line decode_line(std::string_view line);

// ping and bench are additions to version 1 for benchmarks (a driver that predates them answers
// bad_request): ping never touches the library; bench runs an acquire/release loop in the driver.
enum class Op { acquire, release, extend, is_locked, pause, shutdown, ping, bench };
std::string_view to_string(Op op);

struct Request {
  int64_t id = 0;
  Op op = Op::acquire;
  int client = -1;  // shared drivers only; omitted when negative
  std::string handle;
  std::string key;
  int64_t ttl_ms = 0;       // acquire, extend
  int64_t duration_ms = 0;  // pause
  // bench: loops on `key` (ttl_ms) from start_ns to stop_ns (CLOCK_MONOTONIC; 0: now, and
  // duration_ms after it), holding each lock hold_ms, backing off up to retry_max_ms (0: 16).
  int64_t hold_ms = 0;
  int64_t start_ns = 0;
  int64_t stop_ns = 0;
  int loops = 1;
  int64_t retry_max_ms = 0;
};
std::string encode(const Request& request);

}  // namespace lockstep::ext
