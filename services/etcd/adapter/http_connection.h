#pragma once
// HttpEtcdConnection: the real EtcdConnection, HTTP/1.1 to etcd's JSON gateway on loopback.
//
// A small HTTP client of its own rather than libcurl: it speaks to one known peer (Go's net/http
// behind grpc-gateway) the one subset lockstep needs: POST with a Content-Length body; a reply
// with Content-Length or chunked; a stream (watch) read message by message as the chunks come,
// under a poll(2) deadline per message; and a timeout that closes the socket, so the gateway
// cancels the call on the server (a waiting Lock RPC gives up its place) and a late reply reaches
// nobody. Those are the RedisConnection rules, kept the same way.
//
// Invariants:
// - call() never throws for I/O: a reply (any HTTP status; the body is the JSON the gateway wrote),
//   or IoStatus::timeout (connect or reply not within request_timeout_ms) or
//   IoStatus::connection_error (refused, reset, EOF, a reply that is not HTTP/JSON).
// - Calls share one keep-alive socket; after any failure it is closed and the next call connects
//   afresh to the next member in `ports` (a client's endpoint list, as clientv3 fails over). An
//   idle socket the server closed (a restart) is noticed before a request is written and
//   replaced; a request already written is never sent again.
// - open() uses a socket of its own per stream, closed when the stream is destroyed.
// - Bounded: a reply or stream message is at most reply_bytes_max; headers at most 64 KiB.
// - Thread-compatible, not thread-safe. Constructing one ignores SIGPIPE process-wide if it was at
//   its default (a write to a reset socket would otherwise kill the process).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "services/etcd/client/etcd_connection.h"

namespace lockstep {

struct HttpEtcdOptions {
  std::vector<int> ports;  // the members' client ports on 127.0.0.1, in the order to try them
  int64_t connect_timeout_ms = 1000;
  int64_t request_timeout_ms = 1000;
  size_t reply_bytes_max = size_t{16} << 20;
};

class HttpWire;

class HttpEtcdConnection final : public EtcdConnection {
 public:
  explicit HttpEtcdConnection(HttpEtcdOptions options);
  ~HttpEtcdConnection() override;
  HttpEtcdConnection(const HttpEtcdConnection&) = delete;
  HttpEtcdConnection& operator=(const HttpEtcdConnection&) = delete;

  EtcdResult call(std::string_view path, const EtcdJson& body) override;
  std::unique_ptr<EtcdStream> open(std::string_view path, const EtcdJson& body) override;
  std::string endpoint() const override;

  bool connected() const { return wire_ != nullptr; }

 private:
  void fail_over();  // closes the socket; the next request goes to the next member

  HttpEtcdOptions options_;
  size_t current_ = 0;  // index into options_.ports
  std::unique_ptr<HttpWire> wire_;
};

}  // namespace lockstep
