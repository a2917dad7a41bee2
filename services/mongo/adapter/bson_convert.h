#pragma once
// MongoDocument (services/mongo/client/mongo_connection.h) <-> BSON, walking the
// values with bson_iter / bson_append_* directly (no JSON text in between, so no type guessing).
//
// To BSON (what the adapter builds):
// - integers: int32 when they fit, int64 otherwise; floating-point numbers: double;
// - {"$date": <integer ms>} (exactly that one key): a BSON date; {"$oid": "<24 hex digits>"}: an
//   ObjectId; every other object, including operators like {"$set": ...}: an embedded document;
// - strings (byte for byte), bools, null, arrays (keys "0", "1", ...).
// Preconditions (LOCKSTEP_CHECK): the top level is an object; no key contains a NUL byte; no
// unsigned integer above INT64_MAX; no JSON binary values (not part of the seam).
//
// From BSON (what a server replies): int32 and int64 -> integers; double -> floating point;
// date -> {"$date": ms}; ObjectId -> {"$oid": hex}; utf8, bool, null, documents, arrays as
// themselves; every other type (timestamp, binary, decimal128, regex, ...) ->
// {"$unsupported": "<type name>"}. Key order is kept both ways.
#include <cstdint>
#include <string_view>
#include <vector>

#include "services/mongo/client/mongo_connection.h"

typedef struct _bson_t bson_t;  // libbson's document type (bson/bson-types.h)

namespace lockstep {

// Appends every field of `document` (an object) to `out`, which the caller has initialised.
void append_to_bson(const MongoDocument& document, bson_t* out);
// A BSON document converted from `document`; the caller bson_destroy()s it.
bson_t* to_bson(const MongoDocument& document);
// The BSON document as MongoDocument. Precondition: `document` is a valid BSON document.
MongoDocument from_bson(const bson_t& document);

// The same through raw BSON bytes (a complete document, length prefix included), for callers
// that do not link libbson. from_bson_bytes returns a discarded value (is_discarded()) when the
// bytes are not one valid BSON document.
std::vector<uint8_t> to_bson_bytes(const MongoDocument& document);
MongoDocument from_bson_bytes(const uint8_t* data, size_t length);

// "double", "utf8", "timestamp", ...: the names used in {"$unsupported": NAME}.
std::string_view bson_type_name(int bson_type);

}  // namespace lockstep
