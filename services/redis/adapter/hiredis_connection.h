#pragma once
// HiredisConnection: the real RedisConnection, one blocking hiredis (0.14) context over TCP.
//
// Invariants:
// - command() never throws for I/O: a reply, or an IoStatus with hiredis's message, by the rule of
//   io_status.h: connection_error when the command was not written whole (refused, a connect that
//   timed out, a failed write), timeout (no reply within command_timeout_ms) or connection_lost
//   (reset, EOF, protocol error) once it was. Server errors (-ERR, -NOSCRIPT) are replies of type
//   error.
// - After any I/O failure the hiredis context is unusable (and after a timeout a late reply may
//   still be in flight), so it is freed. The next command connects afresh: at most one connect
//   attempt per command, so a command takes at most connect_timeout_ms + command_timeout_ms.
// - An open connection the server has closed while it sat idle (a restart) is noticed before the
//   command is written (poll: EOF or reset pending) and replaced by a fresh connect, so a restart
//   costs no error. Only a connection idle for kIdleCheckAfter or more is polled: a restart takes
//   far longer, and a poll(2) per command costs a few percent of a loopback round trip. A
//   command already written is never sent again.
// - Arguments are sent with their lengths: binary safe (NUL bytes, any bytes).
// - Thread-compatible, not thread-safe: one connection per thread.
// - Constructing one ignores SIGPIPE process-wide if it was at its default (hiredis 0.14 writes
//   with write(2), and a write to a reset socket would otherwise kill the process).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/redis_connection.h"

struct redisReader;  // hiredis/read.h

struct redisContext;
struct redisReply;

namespace lockstep {

struct HiredisOptions {
  std::string host = "127.0.0.1";
  int port = 6379;
  int64_t connect_timeout_ms = 1000;
  int64_t command_timeout_ms = 1000;
};

// hiredis's reply as the seam's (shared with the Redlock fan-out, which parses with hiredis too).
RedisReply convert_hiredis_reply(const redisReply& reply);

class HiredisConnection final : public RedisConnection {
 public:
  explicit HiredisConnection(HiredisOptions options);
  ~HiredisConnection() override;
  HiredisConnection(const HiredisConnection&) = delete;
  HiredisConnection& operator=(const HiredisConnection&) = delete;

  RedisResult command(const std::vector<std::string>& argv) override;
  std::string endpoint() const override;

  // True while a context is open (it was connected and no I/O failure has happened since).
  bool connected() const { return context_ != nullptr; }

 private:
  RedisResult connect();
  void disconnect();
  // Writes hiredis's output buffer out; the errno of a failed write, nullopt once all is written.
  std::optional<int> write_pending();
  // The failure of `command` at `stage` as a result; frees the context.
  RedisResult failed(const std::string& command, IoStatus status, int saved_errno,
                     const char* stage);

  HiredisOptions options_;
  redisContext* context_ = nullptr;
  std::chrono::steady_clock::time_point last_reply_at_{};  // when the context last answered
};

inline constexpr auto kIdleCheckAfter = std::chrono::milliseconds(1);

// hiredis 0.14 allocates an array reply's elements from its header, before any arrives, and has
// no bound of its own: a peer answering "*2000000000" made lockstep allocate 16 GB. Past
// kReplyElementsMax elements the reader fails the reply instead (an error on the connection: a
// connection_error, never a reply). Called on every reader lockstep creates.
inline constexpr int kReplyElementsMax = 1'000'000;
void bound_reply_arrays(redisReader* reader);

}  // namespace lockstep
