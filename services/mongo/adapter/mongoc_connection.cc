#include "services/mongo/adapter/mongoc_connection.h"

#include <mongoc/mongoc.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string_view>

#include "base/check.h"
#include "services/mongo/adapter/bson_convert.h"

namespace lockstep {
namespace {

void init_mongoc_once() {
  static std::once_flag once;
  std::call_once(once, [] { mongoc_init(); });
}

struct UriDeleter {
  void operator()(mongoc_uri_t* uri) const { mongoc_uri_destroy(uri); }
};
// Destroys a bson_t at scope exit (unique_ptr<bson_t> would drop bson_t's alignment attribute).
class BsonGuard {
 public:
  explicit BsonGuard(bson_t* document) : document_(document) {}
  ~BsonGuard() { bson_destroy(document_); }
  BsonGuard(const BsonGuard&) = delete;
  BsonGuard& operator=(const BsonGuard&) = delete;
  bson_t* get() const { return document_; }

 private:
  bson_t* document_;
};

int32_t as_int32_ms(int64_t ms) {
  LOCKSTEP_CHECK(ms > 0 && ms <= std::numeric_limits<int32_t>::max(),
                 "a timeout in (0, INT32_MAX] ms");
  return static_cast<int32_t>(ms);
}

void set_int32(mongoc_uri_t* uri, const char* option, int64_t ms) {
  LOCKSTEP_CHECK(mongoc_uri_set_option_as_int32(uri, option, as_int32_ms(ms)),
                 "a settable URI option");
}

std::string hosts_of(const mongoc_uri_t* uri) {
  std::string hosts;
  for (const mongoc_host_list_t* host = mongoc_uri_get_hosts(uri); host != nullptr;
       host = host->next) {
    if (!hosts.empty()) hosts += ",";
    hosts += host->host_and_port;
  }
  return "mongodb://" + hosts;
}

// A reply the server sent, reported by libmongoc as a failure: a command error or a write
// concern error. Everything else (stream, protocol, server selection, client) is transport.
bool server_answered(const bson_error_t& error, const bson_t& reply) {
  const bool server_domain = error.domain == MONGOC_ERROR_SERVER ||
                             error.domain == MONGOC_ERROR_WRITE_CONCERN ||
                             error.domain == MONGOC_ERROR_QUERY;
  return server_domain && !bson_empty(&reply);
}

}  // namespace

IoStatus classify_mongoc_failure(uint32_t domain, uint32_t code, std::string_view message,
                                 bool waited_out) {
  // Nothing was sent: no server selectable, the connect failed or timed out, or a client-side
  // refusal before the wire.
  if (domain != MONGOC_ERROR_STREAM && domain != MONGOC_ERROR_PROTOCOL)
    return IoStatus::connection_error;
  if (domain == MONGOC_ERROR_STREAM && code != MONGOC_ERROR_STREAM_SOCKET)
    return IoStatus::connection_error;  // name resolution, connect
  // libmongoc prefixes both stages with "Failed to send ... command"; the reading stage's own
  // words follow it. A failure while writing (a broken pipe, a write timeout) left the command
  // short of whole, so the server never ran it.
  constexpr std::string_view kReadingStage[] = {"socket error or timeout", "invalid message length",
                                                "malformed reply", "decompress", "invalid reply"};
  const bool reading =
      domain == MONGOC_ERROR_PROTOCOL ||
      std::any_of(std::begin(kReadingStage), std::end(kReadingStage), [&](std::string_view words) {
        return message.find(words) != std::string_view::npos;
      });
  if (!reading) return IoStatus::connection_error;
  const bool timed_out = waited_out || message.find("timed out") != std::string_view::npos ||
                         message.find("Timed out") != std::string_view::npos;
  return timed_out ? IoStatus::timeout : IoStatus::connection_lost;
}

std::string default_mongo_uri() {
  const char* from_env = std::getenv("LOCKSTEP_MONGO_URI");
  if (from_env != nullptr && *from_env != '\0') return from_env;
  return "mongodb://127.0.0.1:27017";
}

MongocConnection::MongocConnection(MongocOptions options) : options_(std::move(options)) {
  init_mongoc_once();
  bson_error_t error;
  std::unique_ptr<mongoc_uri_t, UriDeleter> uri(
      mongoc_uri_new_with_error(options_.uri.c_str(), &error));
  if (uri == nullptr)
    throw std::invalid_argument("bad MongoDB URI \"" + options_.uri + "\": " + error.message);
  set_int32(uri.get(), MONGOC_URI_CONNECTTIMEOUTMS, options_.connect_timeout_ms);
  set_int32(uri.get(), MONGOC_URI_SOCKETTIMEOUTMS, options_.socket_timeout_ms);
  set_int32(uri.get(), MONGOC_URI_SERVERSELECTIONTIMEOUTMS, options_.server_selection_timeout_ms);
  if (!options_.app_name.empty()) {
    LOCKSTEP_CHECK(mongoc_uri_set_appname(uri.get(), options_.app_name.c_str()),
                   "an appname of at most 128 bytes");
  }
  endpoint_ = hosts_of(uri.get());
  client_ = mongoc_client_new_from_uri_with_error(uri.get(), &error);
  if (client_ == nullptr)
    throw std::invalid_argument("MongoDB client for \"" + endpoint_ + "\": " + error.message);
  // Error API 2: command errors come back in the MONGOC_ERROR_SERVER domain, apart from the
  // client-side MONGOC_ERROR_QUERY ones.
  mongoc_client_set_error_api(client_, MONGOC_ERROR_API_VERSION_2);
}

MongocConnection::~MongocConnection() {
  if (client_ != nullptr) mongoc_client_destroy(client_);
}

std::string MongocConnection::endpoint() const { return endpoint_; }

MongoResult MongocConnection::run_command(const std::string& database, MongoDocument command) {
  LOCKSTEP_CHECK(!database.empty(), "a database to run the command on");
  LOCKSTEP_CHECK(command.is_object() && !command.empty(),
                 "a command is a document whose first key names it");
  const BsonGuard request(to_bson(command));
  bson_t reply;
  bson_error_t error;
  const auto started = std::chrono::steady_clock::now();
  const bool succeeded = mongoc_client_command_simple(client_, database.c_str(), request.get(),
                                                      nullptr, &reply, &error);
  const auto elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - started)
                              .count();
  const BsonGuard reply_guard(&reply);  // command_simple always initialises it
  if (succeeded || server_answered(error, reply)) return {.reply = from_bson(reply)};

  const std::string message = error.message;
  const std::string name = command.begin().key();
  // "socket error or timeout" is libmongoc's wording for both: the elapsed time tells them apart.
  const bool waited_out = elapsed_ms * 10 >= options_.socket_timeout_ms * 9;
  const IoStatus status = classify_mongoc_failure(error.domain, error.code, message, waited_out);
  return {.status = status,
          .message = name + " on " + endpoint_ + " after " + std::to_string(elapsed_ms) +
                     " ms: " + message + " (libmongoc error domain " +
                     std::to_string(error.domain) + ", code " + std::to_string(error.code) + ")"};
}

}  // namespace lockstep
