#pragma once
// The EtcdConnection seam: one request to etcd's v3 JSON gateway (a POST of a JSON body to a path
// such as /v3/kv/range) and its JSON reply, or a stream of replies (/v3/watch, and a long call such
// as /v3/lock/lock whose one reply may take a while).
//
// Real: HTTP/1.1 over loopback to one or more members (services/etcd/adapter/http_connection.h).
// Sim: messages over the simulated network to a simulated member (services/etcd/sim). Adapters see
// only this interface, so they run unchanged in both worlds.
//
// Why the JSON gateway and not gRPC: Debian ships etcd 3.4 but not its .proto files, and every
// request lockstep needs (leases, ranges, txns, watches, the Lock RPC) has a gateway path whose
// JSON is plain to build and to compare (the differential test compares replies field by field).
//
// Conventions of the gateway, kept as they are: keys and values are base64 (etcd_json.h), 64-bit
// integers come back as JSON strings, fields at their default (0, false, "") are omitted, and a
// server's refusal is a reply {"error": TEXT, "message": TEXT, "code": GRPC_CODE} with an HTTP
// status other than 200.
//
// Invariants: call() blocks until the reply arrives or the connection's request timeout passes. A
// transport failure (timeout, refused, reset) comes back as an IoStatus with a message, never as an
// exception and never as a reply; after a timeout a late reply goes to nobody. A stream's next()
// waits at most its timeout; a stream that broke or ended says so once (connection_error) and
// stays so. Destroying a stream cancels it on the server (the gateway sees its connection close),
// as a Go client's cancelled context does.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lockstep/io_status.h"

namespace lockstep {

using EtcdJson = nlohmann::json;

struct EtcdResult {
  IoStatus status = IoStatus::ok;
  int http_status = 200;  // status ok: the gateway's HTTP status
  EtcdJson body;          // status ok: the reply document
  std::string message;    // status not ok: what went wrong

  bool ok() const { return status == IoStatus::ok; }
  // The reply is the server's refusal ({"error": ..., "code": N}).
  bool refused() const { return ok() && body.is_object() && body.contains("error"); }
  int64_t error_code() const;      // the gRPC code of a refusal, else 0
  std::string error_text() const;  // the text of a refusal, else ""
};

// A reply or message in one line, bounded, for traces and errors.
std::string describe(const EtcdResult& result);

class EtcdStream {
 public:
  virtual ~EtcdStream() = default;
  // The next message: ok with its body; timeout when none came within timeout_us (the stream
  // stays open); connection_error once the stream ended or broke.
  virtual EtcdResult next(int64_t timeout_us) = 0;
};

class EtcdConnection {
 public:
  virtual ~EtcdConnection() = default;
  // POSTs body to path and returns the reply.
  virtual EtcdResult call(std::string_view path, const EtcdJson& body) = 0;
  // POSTs body to path on a connection of its own and returns the stream of its replies.
  virtual std::unique_ptr<EtcdStream> open(std::string_view path, const EtcdJson& body) = 0;
  // "127.0.0.1:2379", "sim:etcd-0": the member the next request goes to, for messages.
  virtual std::string endpoint() const = 0;
};

}  // namespace lockstep
