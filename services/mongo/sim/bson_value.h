#pragma once
// Values of the simulated mongod: MongoDocument (nlohmann JSON, objects in insertion order) read
// as BSON, with the conventions of services/mongo/client/mongo_connection.h ({"$date": ms} is a date,
// {"$oid": hex} an ObjectId). What every other file of services/mongo/sim shares:
// - BSON comparison order across types (missing < null < numbers < strings < objects < arrays <
//   ObjectId < booleans < dates), numbers compared by value whatever their width;
// - dotted field paths ("a.b") into nested objects;
// - MongoError, the error a command reports ({"ok": 0, "code", "codeName", "errmsg"} or a
//   writeErrors entry), with mongod's code names;
// - mongo-shell rendering of values for E11000 messages and traces ({ key: "k" }).
//
// Invariants: nothing here depends on addresses or hashing; a value's rendering and its canonical
// key (unique indexes) are functions of the value alone.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "services/mongo/client/mongo_connection.h"

namespace lockstep::sim::mongo {

using Doc = MongoDocument;

// mongod's error: a code, its name, and the message.
class MongoError : public std::runtime_error {
 public:
  MongoError(int code, const std::string& message);
  int code() const { return code_; }
  // {"ok": 0.0, "errmsg", "code", "codeName"}, as mongod answers a failed command.
  Doc reply() const;

 private:
  int code_;
};

// mongod's name for an error code ("DuplicateKey"), or "Location<code>" as mongod prints unnamed
// ones.
std::string code_name(int code);

// BSON canonical type order; `missing` is a field that does not exist.
enum class TypeRank {
  missing = 0,
  null = 5,
  number = 10,
  string = 15,
  object = 20,
  array = 25,
  object_id = 35,
  boolean = 40,
  date = 45,
  other = 100
};

bool is_object_id(const Doc& value);
// An object whose first field names an operator ("$gt", "$add"...), not a date or an ObjectId.
bool is_operator_object(const Doc& value);
TypeRank type_rank(const Doc* value);          // nullptr: missing
std::string_view type_name(const Doc* value);  // "date", "string", ... for messages

// Total BSON order (<0, 0, >0); nullptr is a missing value and sorts first.
int compare_values(const Doc* a, const Doc* b);
inline bool values_equal(const Doc& a, const Doc& b) { return compare_values(&a, &b) == 0; }

// The value at a dotted path, or nullptr when some step is missing or not an object.
const Doc* lookup(const Doc& doc, std::string_view path);
// Sets the value at a dotted path, creating objects on the way. Throws MongoError (28
// PathNotViable) when a step is a non-object value.
void set_path(Doc& doc, std::string_view path, Doc value);
// Removes the value at a dotted path; false if it was not there.
bool unset_path(Doc& doc, std::string_view path);

// Mongo shell rendering: "k", 12, new Date(1767225600000), ObjectId('...'), { a: 1 }, [ 1, 2 ],
// null.
std::string render(const Doc& value);
// A string that is equal for two values exactly when compare_values says they are equal (1 and
// 1.0 give the same), for unique-index maps.
std::string canonical_key(const Doc* value);
// The same appended to out (an index key of several fields is built in one string).
void append_canonical_key(std::string& out, const Doc* value);
// A compact one-line JSON of at most bytes_max (with ".." when cut), for traces.
std::string compact(const Doc& value, size_t bytes_max = 96);

// The value of a number field as an integer (doubles truncated); precondition: is_number().
int64_t as_int64(const Doc& number);
// Truthiness in aggregation: false, null, missing and 0 are false.
bool truthy(const Doc* value);

}  // namespace lockstep::sim::mongo
