#include "services/redis/adapter/hiredis_connection.h"

#include <poll.h>

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "base/check.h"

namespace lockstep {
namespace {

void ignore_sigpipe_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      std::signal(SIGPIPE, SIG_IGN);
    }
  });
}

timeval to_timeval(int64_t duration_ms) {
  return {.tv_sec = static_cast<time_t>(duration_ms / 1000),
          .tv_usec = static_cast<suseconds_t>((duration_ms % 1000) * 1000)};
}

// hiredis reports a socket timeout as an I/O error with errno EAGAIN (SO_RCVTIMEO/SO_SNDTIMEO)
// or ETIMEDOUT (connect); its message alone does not say so reliably. Whether it was a timeout
// words the message; the stage it failed at decides the IoStatus.
bool timed_out(const redisContext& context, int saved_errno) {
  return context.err == REDIS_ERR_IO && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK ||
                                         saved_errno == ETIMEDOUT || saved_errno == EINPROGRESS);
}

std::string describe_failure(bool was_timeout, const redisContext& context, int64_t timeout_ms) {
  if (was_timeout) {
    return "timed out after " + std::to_string(timeout_ms) + " ms (" + context.errstr + ")";
  }
  return context.errstr;
}

}  // namespace

RedisReply convert_hiredis_reply(const redisReply& reply) {
  switch (reply.type) {
    case REDIS_REPLY_STATUS: return RedisReply::status_of(std::string(reply.str, reply.len));
    case REDIS_REPLY_ERROR: return RedisReply::error_of(std::string(reply.str, reply.len));
    case REDIS_REPLY_INTEGER: return RedisReply::integer_of(static_cast<int64_t>(reply.integer));
    case REDIS_REPLY_NIL: return RedisReply::nil();
    case REDIS_REPLY_STRING: return RedisReply::string_of(std::string(reply.str, reply.len));
    case REDIS_REPLY_ARRAY: {
      std::vector<RedisReply> items;
      items.reserve(reply.elements);
      for (size_t i = 0; i < reply.elements; ++i)
        items.push_back(convert_hiredis_reply(*reply.element[i]));
      return RedisReply::array_of(std::move(items));
    }
    default: LOCKSTEP_CHECK(false, "hiredis 0.14 returns only the six RESP2 reply types");
  }
}

namespace {

// An idle Redis connection has nothing to read (no pub/sub here, every reply was consumed), so
// readability or a hang-up means the server closed it (EOF or reset pending).
bool peer_closed(int fd) {
  pollfd entry{.fd = fd, .events = POLLIN, .revents = 0};
  return ::poll(&entry, 1, 0) > 0 && (entry.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

}  // namespace

HiredisConnection::HiredisConnection(HiredisOptions options) : options_(std::move(options)) {
  LOCKSTEP_CHECK(!options_.host.empty(), "a host to connect to");
  LOCKSTEP_CHECK(options_.port > 0 && options_.port < 65536, "a TCP port");
  LOCKSTEP_CHECK(options_.connect_timeout_ms > 0, "a bounded connect");
  LOCKSTEP_CHECK(options_.command_timeout_ms > 0, "a bounded command");
  ignore_sigpipe_once();
}

HiredisConnection::~HiredisConnection() { disconnect(); }

std::string HiredisConnection::endpoint() const {
  return options_.host + ":" + std::to_string(options_.port);
}

void HiredisConnection::disconnect() {
  if (context_ != nullptr) redisFree(context_);
  context_ = nullptr;
}

namespace {

// hiredis's default functions are one static table; the bounded table is a copy of it with
// createArray checked first.
redisReplyObjectFunctions g_bounded_functions;
void* (*g_create_array)(const redisReadTask*, int) = nullptr;
std::once_flag g_bounded_once;

void* bounded_create_array(const redisReadTask* task, int elements) {
  if (elements > kReplyElementsMax) return nullptr;  // hiredis: an out-of-memory reader error
  return g_create_array(task, elements);
}

}  // namespace

void bound_reply_arrays(redisReader* reader) {
  if (reader == nullptr || reader->fn == nullptr || reader->fn == &g_bounded_functions) return;
  std::call_once(g_bounded_once, [reader] {
    g_bounded_functions = *reader->fn;
    g_create_array = reader->fn->createArray;
    g_bounded_functions.createArray = bounded_create_array;
  });
  reader->fn = &g_bounded_functions;
}

RedisResult HiredisConnection::connect() {
  errno = 0;
  context_ = redisConnectWithTimeout(options_.host.c_str(), options_.port,
                                     to_timeval(options_.connect_timeout_ms));
  const int saved_errno = errno;
  if (context_ == nullptr) {
    return {.status = IoStatus::connection_error,
            .message = "hiredis could not allocate a context"};
  }
  bound_reply_arrays(context_->reader);
  // redisSetTimeout sets SO_RCVTIMEO/SO_SNDTIMEO; on failure it records the error in the context.
  if (context_->err == 0 &&
      redisSetTimeout(context_, to_timeval(options_.command_timeout_ms)) == REDIS_OK) {
    return {};
  }
  // Nothing was sent, so even a connect that timed out is connection_error (see io_status.h).
  RedisResult failed{.status = IoStatus::connection_error,
                     .message = "connect to " + endpoint() + ": " +
                                describe_failure(timed_out(*context_, saved_errno), *context_,
                                                 options_.connect_timeout_ms)};
  disconnect();
  return failed;
}

std::optional<int> HiredisConnection::write_pending() {
  // Bounded: each round writes at least one byte or fails (a blocking socket with SO_SNDTIMEO).
  for (int done = 0; done == 0;) {
    errno = 0;
    if (redisBufferWrite(context_, &done) != REDIS_OK) return errno;
  }
  return std::nullopt;
}

RedisResult HiredisConnection::failed(const std::string& command, IoStatus status, int saved_errno,
                                      const char* stage) {
  RedisResult result{.status = status,
                     .message = command + " on " + endpoint() + ": " + stage + ": " +
                                describe_failure(timed_out(*context_, saved_errno), *context_,
                                                 options_.command_timeout_ms)};
  disconnect();
  return result;
}

RedisResult HiredisConnection::command(const std::vector<std::string>& argv) {
  LOCKSTEP_CHECK(!argv.empty(), "a command has a name");
  // A restarted server closed this idle connection: reconnect before sending rather than report
  // the stale socket as a backend error. Never a resend: the command has not been written yet.
  if (context_ != nullptr && std::chrono::steady_clock::now() - last_reply_at_ >= kIdleCheckAfter &&
      peer_closed(context_->fd)) {
    disconnect();
  }
  if (context_ == nullptr) {
    RedisResult connected_result = connect();
    if (!connected_result.ok()) return connected_result;
  }
  // On the stack for the commands a lock sends (a script call has at most seven arguments).
  constexpr size_t kArgsInline = 8;
  std::array<const char*, kArgsInline> args_inline{};
  std::array<size_t, kArgsInline> lengths_inline{};
  std::vector<const char*> args_heap;
  std::vector<size_t> lengths_heap;
  const char** args = args_inline.data();
  size_t* lengths = lengths_inline.data();
  if (argv.size() > kArgsInline) {
    args_heap.resize(argv.size());
    lengths_heap.resize(argv.size());
    args = args_heap.data();
    lengths = lengths_heap.data();
  }
  for (size_t i = 0; i < argv.size(); ++i) {
    args[i] = argv[i].data();
    lengths[i] = argv[i].size();
  }
  // Appended, written, then read as three steps (redisCommandArgv does all three and its error
  // does not say which failed): only a failure after the whole command was written may have left
  // it applied (IoStatus::connection_lost or timeout); one while writing is connection_error.
  if (redisAppendCommandArgv(context_, static_cast<int>(argv.size()), args, lengths) != REDIS_OK) {
    return failed(argv.front(), IoStatus::connection_error, errno, "formatting");
  }
  if (const std::optional<int> write_errno = write_pending()) {
    return failed(argv.front(), IoStatus::connection_error, *write_errno, "writing");
  }
  errno = 0;
  void* raw = nullptr;
  const int read_status = redisGetReply(context_, &raw);
  const int saved_errno = errno;
  if (read_status != REDIS_OK || raw == nullptr) {
    const IoStatus status =
        timed_out(*context_, saved_errno) ? IoStatus::timeout : IoStatus::connection_lost;
    return failed(argv.front(), status, saved_errno, "reading the reply");
  }
  last_reply_at_ = std::chrono::steady_clock::now();
  const std::unique_ptr<redisReply, void (*)(void*)> reply(static_cast<redisReply*>(raw),
                                                           freeReplyObject);
  return {.reply = convert_hiredis_reply(*reply)};
}

}  // namespace lockstep
