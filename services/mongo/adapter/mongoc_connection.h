#pragma once
// MongocConnection: the real MongoConnection, one libmongoc (1.23) client per connection.
//
// Invariants:
// - run_command() never throws for I/O. A reply that came back from the server is returned as is
//   (IoStatus::ok), also when it says ok: 0 or carries writeErrors / writeConcernError: libmongoc
//   reports those as failures too, but with a server-side error domain and the reply filled in.
//   Transport failures come back as an IoStatus with libmongoc's message, by io_status.h's rule
//   (classify_mongoc_failure): connection_error when the command was not sent whole (no server
//   selectable, connect refused or timed out, a failed write), timeout or connection_lost (reset,
//   EOF, a garbled reply) once it was.
// - Commands run with mongoc_client_command_simple: the client's read preference, read concern
//   and write concern are not applied, and nothing is retried, so the command document the adapter
//   built (with its own writeConcern / readConcern) is exactly what is sent, plus what the wire
//   protocol needs ($db, and lsid / $clusterTime when the deployment has sessions).
// - The URI's timeouts and appname are set from the options (they override the same options in the
//   URI string); everything else in the URI (replicaSet, directConnection, credentials, tls) is
//   kept. serverSelectionTryOnce stays libmongoc's default for a single-threaded client (true): an
//   unreachable server fails at once instead of after server_selection_timeout_ms, and a server
//   whose check failed is skipped for libmongoc's 5 s cooldown.
// - A socket timeout (the server did not answer within socket_timeout_ms) is IoStatus::timeout;
//   libmongoc words a timeout and a reset alike ("socket error or timeout"), so the elapsed time
//   tells them apart (a reset is connection_lost). After either, libmongoc drops that socket: a
//   late reply goes to nobody.
// - mongoc_init() runs once per process (thread-safe); mongoc_cleanup() is never called.
// - Thread-compatible, not thread-safe: one connection per thread (a mongoc_client_t is
//   single-threaded).
// Errors: an unparsable URI is std::invalid_argument at construction.
#include <cstdint>
#include <string>
#include <string_view>

#include "services/mongo/client/mongo_connection.h"

typedef struct _mongoc_client_t mongoc_client_t;

namespace lockstep {

// A libmongoc failure (bson_error_t's domain, code and message; waited_out: it took about the
// whole socket timeout) read by io_status.h's rule. Exposed for tests.
IoStatus classify_mongoc_failure(uint32_t domain, uint32_t code, std::string_view message,
                                 bool waited_out);

// env LOCKSTEP_MONGO_URI when set and not empty, else "mongodb://127.0.0.1:27017".
std::string default_mongo_uri();

struct MongocOptions {
  std::string uri = default_mongo_uri();
  int64_t connect_timeout_ms = 2000;
  // Above MongoAdapterOptions' default wtimeout (5000): a w:majority write that times out on the
  // server comes back as a writeConcernError instead of a client-side socket timeout.
  int64_t socket_timeout_ms = 10'000;
  int64_t server_selection_timeout_ms = 2000;
  std::string app_name = "lockstep";
};

class MongocConnection final : public MongoConnection {
 public:
  explicit MongocConnection(MongocOptions options = {});
  ~MongocConnection() override;
  MongocConnection(const MongocConnection&) = delete;
  MongocConnection& operator=(const MongocConnection&) = delete;

  MongoResult run_command(const std::string& database, MongoDocument command) override;
  // "mongodb://HOST:PORT[,HOST:PORT...]": the URI's hosts, without credentials or options.
  std::string endpoint() const override;

  const MongocOptions& options() const { return options_; }

 private:
  MongocOptions options_;
  std::string endpoint_;
  mongoc_client_t* client_ = nullptr;
};

}  // namespace lockstep
