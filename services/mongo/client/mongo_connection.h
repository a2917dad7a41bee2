#pragma once
// The MongoConnection seam: run one database command (a document) against a MongoDB deployment and
// get its reply document.
//
// Real: libmongoc (services/mongo/adapter/mongoc_connection.h), which does server selection, sessions and
// the wire protocol. Sim: a connection over the simulated network to a simulated replica set
// (services/mongo/sim). The Mongo adapter builds every command itself (update, delete, find, findAndModify,
// createIndexes), so it runs unchanged in both worlds and the contract tests see exactly what it
// sends.
//
// Documents are nlohmann JSON whose objects keep insertion order (OrderedObject, as BSON: a
// command's name must be its first key), with these conventions for the BSON types lockstep uses:
// - integers are BSON int32 when they fit, int64 otherwise; BSON int32/int64 come back as integers;
//   BSON doubles come back as floating-point numbers ("ok": 1.0 compares equal to 1);
// - a date is {"$date": <int64 milliseconds since the Unix epoch>}, both ways;
// - an ObjectId is {"$oid": "<24 hex digits>"}, both ways;
// - any other BSON type in a reply comes back as {"$unsupported": "<type name>"}.
//
// Invariants: run_command() blocks until the reply arrives or the timeouts pass. A transport or
// server-selection failure (no reachable primary, timeout, reset) comes back as an IoStatus with a
// message, never as an exception and never as a reply. A reply that arrived is returned as is,
// whatever it says: a command error ({"ok": 0, "code": ..., "errmsg": ...}), write errors
// ("writeErrors": [{"code": 11000, ...}]) and write-concern errors ("writeConcernError") are the
// adapter's to interpret. After a timeout a late reply goes to nobody.
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "lockstep/io_status.h"
#include "services/mongo/client/ordered_object.h"

namespace lockstep {

using MongoDocument = nlohmann::basic_json<OrderedObject>;

// make_document("a", 1, "b", x): a document of these fields in this order; make_array(1, x): an
// array. Values are moved in when given as rvalues. Not nlohmann's initializer lists, which build
// and destroy a temporary two-element array per field: building the Mongo adapter's commands that
// way was a third of the JSON work of a simulated Mongo seed.
namespace detail {
inline void add_fields(MongoDocument&) {}
template <typename Value, typename... Rest>
void add_fields(MongoDocument& document, const char* key, Value&& value, Rest&&... rest) {
  document.emplace(key, MongoDocument(std::forward<Value>(value)));
  add_fields(document, std::forward<Rest>(rest)...);
}
}  // namespace detail

template <typename... KeysAndValues>
MongoDocument make_document(KeysAndValues&&... fields) {
  static_assert(sizeof...(KeysAndValues) % 2 == 0, "make_document takes keys and values in pairs");
  MongoDocument document = MongoDocument::object();
  detail::add_fields(document, std::forward<KeysAndValues>(fields)...);
  return document;
}

template <typename... Values>
MongoDocument make_array(Values&&... values) {
  MongoDocument array = MongoDocument::array();
  array.get_ref<MongoDocument::array_t&>().reserve(sizeof...(Values));
  (array.push_back(MongoDocument(std::forward<Values>(values))), ...);
  return array;
}

// {"$date": ms} and back.
inline MongoDocument mongo_date(int64_t epoch_ms) { return make_document("$date", epoch_ms); }
bool is_mongo_date(const MongoDocument& value);
int64_t mongo_date_ms(const MongoDocument& value);  // precondition: is_mongo_date(value)
// The value of `name` when `value` is an object of that one field ({"$date": ...}, {"$oid": ...}),
// else nullptr; read in place (the simulated mongod's comparisons ask it of every value).
const MongoDocument* sole_field(const MongoDocument& value, std::string_view name);

struct MongoResult {
  IoStatus status = IoStatus::ok;
  MongoDocument reply = MongoDocument::object();  // valid when status == ok
  std::string message{};                          // what went wrong, when status != ok

  bool ok() const { return status == IoStatus::ok; }
};

class MongoConnection {
 public:
  virtual ~MongoConnection() = default;
  // Runs `command` on `database` (the driver adds $db, lsid and the like). The connection takes
  // the command: a caller done with it moves it in (the simulated connection keeps it as the
  // message in flight, and a copy of every command was a tenth of a simulated Mongo seed).
  virtual MongoResult run_command(const std::string& database, MongoDocument command) = 0;
  // "mongodb://127.0.0.1:27017", "sim:mongo-rs": for messages.
  virtual std::string endpoint() const = 0;
};

// Well-known server error codes the adapter and the simulated mongod share.
namespace mongo_error {
inline constexpr int kDuplicateKey = 11000;
inline constexpr int kWriteConcernFailed = 64;  // WriteConcernFailed (wtimeout)
inline constexpr int kNotWritablePrimary = 10107;
inline constexpr int kNotPrimaryOrSecondary = 13436;
inline constexpr int kPrimarySteppedDown = 189;
inline constexpr int kInterruptedDueToReplStateChange = 11602;
inline constexpr int kCommandNotFound = 59;
inline constexpr int kFailedToParse = 9;
inline constexpr int kBadValue = 2;
}  // namespace mongo_error

}  // namespace lockstep
