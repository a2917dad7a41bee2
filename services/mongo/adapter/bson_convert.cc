#include "services/mongo/adapter/bson_convert.h"

#include <bson/bson.h>

#include <cstring>
#include <limits>
#include <string>

#include "base/check.h"

namespace lockstep {
namespace {

bool is_oid(const MongoDocument& value) {
  if (!value.is_object() || value.size() != 1 || !value.contains("$oid")) return false;
  const MongoDocument& hex = value["$oid"];
  return hex.is_string() && bson_oid_is_valid(hex.get_ref<const std::string&>().c_str(),
                                              hex.get_ref<const std::string&>().size());
}

int key_length(const std::string& key) {
  LOCKSTEP_CHECK(key.find('\0') == std::string::npos, "BSON keys cannot contain NUL bytes");
  LOCKSTEP_CHECK(key.size() < static_cast<size_t>(std::numeric_limits<int>::max()),
                 "a key of sane length");
  return static_cast<int>(key.size());
}

void append_value(bson_t* out, const std::string& key, const MongoDocument& value);

void append_fields(bson_t* out, const MongoDocument& object) {
  for (const auto& [key, value] : object.items()) append_value(out, key, value);
}

void append_array(bson_t* out, const std::string& key, const MongoDocument& array) {
  bson_t child;
  bson_append_array_begin(out, key.c_str(), key_length(key), &child);
  size_t index = 0;
  for (const MongoDocument& item : array) append_value(&child, std::to_string(index++), item);
  bson_append_array_end(out, &child);
}

void append_value(bson_t* out, const std::string& key, const MongoDocument& value) {
  const int length = key_length(key);
  const char* name = key.c_str();
  bool appended = true;
  switch (value.type()) {
    case MongoDocument::value_t::null: appended = bson_append_null(out, name, length); break;
    case MongoDocument::value_t::boolean:
      appended = bson_append_bool(out, name, length, value.get<bool>());
      break;
    case MongoDocument::value_t::number_integer: {
      const auto number = value.get<int64_t>();
      appended = number >= std::numeric_limits<int32_t>::min() &&
                         number <= std::numeric_limits<int32_t>::max()
                     ? bson_append_int32(out, name, length, static_cast<int32_t>(number))
                     : bson_append_int64(out, name, length, number);
      break;
    }
    case MongoDocument::value_t::number_unsigned: {
      const auto number = value.get<uint64_t>();
      LOCKSTEP_CHECK(number <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
                     "BSON has no unsigned integers above INT64_MAX");
      appended = number <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max())
                     ? bson_append_int32(out, name, length, static_cast<int32_t>(number))
                     : bson_append_int64(out, name, length, static_cast<int64_t>(number));
      break;
    }
    case MongoDocument::value_t::number_float:
      appended = bson_append_double(out, name, length, value.get<double>());
      break;
    case MongoDocument::value_t::string: {
      const auto& text = value.get_ref<const std::string&>();
      LOCKSTEP_CHECK(text.size() < static_cast<size_t>(std::numeric_limits<int>::max()),
                     "a string of sane length");
      appended = bson_append_utf8(out, name, length, text.data(), static_cast<int>(text.size()));
      break;
    }
    case MongoDocument::value_t::array: append_array(out, key, value); break;
    case MongoDocument::value_t::object: {
      if (is_mongo_date(value)) {
        appended = bson_append_date_time(out, name, length, mongo_date_ms(value));
      } else if (is_oid(value)) {
        bson_oid_t oid;
        bson_oid_init_from_string(&oid, value["$oid"].get_ref<const std::string&>().c_str());
        appended = bson_append_oid(out, name, length, &oid);
      } else {
        bson_t child;
        bson_append_document_begin(out, name, length, &child);
        append_fields(&child, value);
        bson_append_document_end(out, &child);
      }
      break;
    }
    case MongoDocument::value_t::binary:
      LOCKSTEP_CHECK(false, "JSON binary values are not part of the Mongo seam");
    case MongoDocument::value_t::discarded:
      LOCKSTEP_CHECK(false, "a discarded JSON value cannot be sent");
  }
  LOCKSTEP_CHECK(appended, "the BSON document stays under its maximum size");
}

MongoDocument read_document(bson_iter_t* iter, bool as_array);

MongoDocument read_value(bson_iter_t* iter) {
  const bson_type_t type = bson_iter_type(iter);
  switch (type) {
    case BSON_TYPE_DOUBLE: return bson_iter_double(iter);
    case BSON_TYPE_UTF8: {
      uint32_t length = 0;
      const char* text = bson_iter_utf8(iter, &length);
      return std::string(text, length);
    }
    case BSON_TYPE_DOCUMENT:
    case BSON_TYPE_ARRAY: {
      bson_iter_t child;
      LOCKSTEP_CHECK(bson_iter_recurse(iter, &child), "a valid embedded document");
      return read_document(&child, type == BSON_TYPE_ARRAY);
    }
    case BSON_TYPE_OID: {
      char hex[25];
      bson_oid_to_string(bson_iter_oid(iter), hex);
      return MongoDocument{{"$oid", std::string(hex)}};
    }
    case BSON_TYPE_BOOL: return bson_iter_bool(iter);
    case BSON_TYPE_DATE_TIME: return mongo_date(bson_iter_date_time(iter));
    case BSON_TYPE_NULL: return nullptr;
    case BSON_TYPE_INT32: return static_cast<int64_t>(bson_iter_int32(iter));
    case BSON_TYPE_INT64: return static_cast<int64_t>(bson_iter_int64(iter));
    default: return MongoDocument{{"$unsupported", std::string(bson_type_name(type))}};
  }
}

MongoDocument read_document(bson_iter_t* iter, bool as_array) {
  MongoDocument result = as_array ? MongoDocument::array() : MongoDocument::object();
  while (bson_iter_next(iter)) {
    if (as_array) {
      result.push_back(read_value(iter));
    } else {
      result[std::string(bson_iter_key(iter), bson_iter_key_len(iter))] = read_value(iter);
    }
  }
  return result;
}

}  // namespace

std::string_view bson_type_name(int bson_type) {
  switch (static_cast<bson_type_t>(bson_type)) {
    case BSON_TYPE_EOD: return "eod";
    case BSON_TYPE_DOUBLE: return "double";
    case BSON_TYPE_UTF8: return "utf8";
    case BSON_TYPE_DOCUMENT: return "document";
    case BSON_TYPE_ARRAY: return "array";
    case BSON_TYPE_BINARY: return "binary";
    case BSON_TYPE_UNDEFINED: return "undefined";
    case BSON_TYPE_OID: return "oid";
    case BSON_TYPE_BOOL: return "bool";
    case BSON_TYPE_DATE_TIME: return "date_time";
    case BSON_TYPE_NULL: return "null";
    case BSON_TYPE_REGEX: return "regex";
    case BSON_TYPE_DBPOINTER: return "dbpointer";
    case BSON_TYPE_CODE: return "code";
    case BSON_TYPE_SYMBOL: return "symbol";
    case BSON_TYPE_CODEWSCOPE: return "codewscope";
    case BSON_TYPE_INT32: return "int32";
    case BSON_TYPE_TIMESTAMP: return "timestamp";
    case BSON_TYPE_INT64: return "int64";
    case BSON_TYPE_DECIMAL128: return "decimal128";
    case BSON_TYPE_MAXKEY: return "maxkey";
    case BSON_TYPE_MINKEY: return "minkey";
  }
  return "unknown";
}

void append_to_bson(const MongoDocument& document, bson_t* out) {
  LOCKSTEP_CHECK(document.is_object(), "a BSON document is an object");
  LOCKSTEP_CHECK(out != nullptr, "an initialised bson_t to append to");
  append_fields(out, document);
}

bson_t* to_bson(const MongoDocument& document) {
  bson_t* out = bson_new();
  try {
    append_to_bson(document, out);
  } catch (...) {
    bson_destroy(out);
    throw;
  }
  return out;
}

MongoDocument from_bson(const bson_t& document) {
  bson_iter_t iter;
  LOCKSTEP_CHECK(bson_iter_init(&iter, &document), "a valid BSON document");
  return read_document(&iter, false);
}

std::vector<uint8_t> to_bson_bytes(const MongoDocument& document) {
  bson_t* converted = to_bson(document);
  const uint8_t* data = bson_get_data(converted);
  std::vector<uint8_t> bytes(data, data + converted->len);
  bson_destroy(converted);
  return bytes;
}

MongoDocument from_bson_bytes(const uint8_t* data, size_t length) {
  bson_t view;
  if (data == nullptr || !bson_init_static(&view, data, length) ||
      !bson_validate(&view, BSON_VALIDATE_NONE, nullptr)) {
    return MongoDocument(MongoDocument::value_t::discarded);
  }
  return from_bson(view);
}

}  // namespace lockstep
