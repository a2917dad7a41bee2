#include "services/mongo/sim/bson_value.h"

#include <cmath>
#include <iterator>
#include <limits>
#include <map>

#include <fmt/format.h>

namespace lockstep::sim::mongo {
namespace {

const std::map<int, std::string_view>& code_names() {
  static const std::map<int, std::string_view> names{
      {2, "BadValue"},
      {9, "FailedToParse"},
      {14, "TypeMismatch"},
      {28, "PathNotViable"},
      {40, "ConflictingUpdateOperators"},
      {59, "CommandNotFound"},
      {64, "WriteConcernFailed"},
      {66, "ImmutableField"},
      {67, "CannotCreateIndex"},
      {72, "InvalidOptions"},
      {79, "UnknownReplWriteConcern"},
      {85, "IndexOptionsConflict"},
      {86, "IndexKeySpecsConflict"},
      {100, "UnsatisfiableWriteConcern"},
      {168, "InvalidPipelineOperator"},
      {189, "PrimarySteppedDown"},
      {224, "QueryFeatureNotAllowed"},
      {10107, "NotWritablePrimary"},
      {11000, "DuplicateKey"},
      {11602, "InterruptedDueToReplStateChange"},
      {13435, "NotPrimaryNoSecondaryOk"},
      {13436, "NotPrimaryOrSecondary"},
      {16612, "Location16612"},
  };
  return names;
}

int compare_numbers(const Doc& a, const Doc& b) {
  if (a.is_number_float() || b.is_number_float()) {
    const double x = a.get<double>();
    const double y = b.get<double>();
    if (std::isnan(x) || std::isnan(y))
      return std::isnan(x) ? (std::isnan(y) ? 0 : -1) : 1;  // NaN first
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_number_unsigned() && b.is_number_unsigned()) {
    const auto x = a.get<uint64_t>();
    const auto y = b.get<uint64_t>();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_number_unsigned() || b.is_number_unsigned()) {
    // One is unsigned beyond int64 range or not; compare through the sign of the signed one.
    const bool a_unsigned = a.is_number_unsigned();
    const int64_t s = a_unsigned ? b.get<int64_t>() : a.get<int64_t>();
    const uint64_t u = a_unsigned ? a.get<uint64_t>() : b.get<uint64_t>();
    int r = 0;
    if (s < 0) {
      r = -1;
    } else {
      const auto us = static_cast<uint64_t>(s);
      r = us < u ? -1 : (us > u ? 1 : 0);
    }
    return a_unsigned ? -r : r;
  }
  const auto x = a.get<int64_t>();
  const auto y = b.get<int64_t>();
  return x < y ? -1 : (x > y ? 1 : 0);
}

int compare_strings(const std::string& a, const std::string& b) {
  const int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

void append_quoted(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
}

std::string quote(const std::string& s) {
  std::string out;
  append_quoted(out, s);
  return out;
}

std::string render_float(double d) {
  if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e15)
    return fmt::format("{}.0", static_cast<int64_t>(d));
  return fmt::format("{}", d);
}

const std::string& oid_hex(const Doc& object_id) {
  return sole_field(object_id, "$oid")->get_ref<const std::string&>();
}

// An integer, a boolean, a date or an ObjectId as the shell shows it, appended; false for any
// other value. render() and the index keys both spell these so (one spelling for both).
bool append_shell_scalar(std::string& out, TypeRank rank, const Doc& value) {
  switch (rank) {
    case TypeRank::number:
      if (value.is_number_float()) return false;
      out += value.is_number_unsigned() ? std::to_string(value.get<uint64_t>())
                                        : std::to_string(value.get<int64_t>());
      return true;
    case TypeRank::boolean: out += value.get<bool>() ? "true" : "false"; return true;
    case TypeRank::date:
      out += "new Date(";
      out += std::to_string(mongo_date_ms(value));
      out += ')';
      return true;
    case TypeRank::object_id:
      out += "ObjectId('";
      out += oid_hex(value);
      out += "')";
      return true;
    default: return false;
  }
}

}  // namespace

MongoError::MongoError(int code, const std::string& message)
    : std::runtime_error(message), code_(code) {}

Doc MongoError::reply() const {
  return make_document("ok", 0.0, "errmsg", what(), "code", code_, "codeName", code_name(code_));
}

std::string code_name(int code) {
  const auto found = code_names().find(code);
  return found != code_names().end() ? std::string(found->second) : fmt::format("Location{}", code);
}

bool is_object_id(const Doc& value) {
  const Doc* hex = sole_field(value, "$oid");
  return hex != nullptr && hex->is_string();
}

bool is_operator_object(const Doc& value) {
  return value.is_object() && !value.empty() && !is_mongo_date(value) && !is_object_id(value) &&
         value.begin().key().starts_with('$');
}

TypeRank type_rank(const Doc* value) {
  if (value == nullptr) return TypeRank::missing;
  switch (value->type()) {
    case Doc::value_t::null: return TypeRank::null;
    case Doc::value_t::number_integer:
    case Doc::value_t::number_unsigned:
    case Doc::value_t::number_float: return TypeRank::number;
    case Doc::value_t::string: return TypeRank::string;
    case Doc::value_t::boolean: return TypeRank::boolean;
    case Doc::value_t::array: return TypeRank::array;
    case Doc::value_t::object:
      if (is_mongo_date(*value)) return TypeRank::date;
      if (is_object_id(*value)) return TypeRank::object_id;
      return TypeRank::object;
    default: return TypeRank::other;
  }
}

std::string_view type_name(const Doc* value) {
  switch (type_rank(value)) {
    case TypeRank::missing: return "missing";
    case TypeRank::null: return "null";
    case TypeRank::number: return value->is_number_float() ? "double" : "long";
    case TypeRank::string: return "string";
    case TypeRank::object: return "object";
    case TypeRank::array: return "array";
    case TypeRank::object_id: return "objectId";
    case TypeRank::boolean: return "bool";
    case TypeRank::date: return "date";
    case TypeRank::other: return "unknown";
  }
  return "unknown";
}

int compare_values(const Doc* a, const Doc* b) {
  const TypeRank ra = type_rank(a);
  const TypeRank rb = type_rank(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case TypeRank::missing:
    case TypeRank::null:
    case TypeRank::other: return 0;
    case TypeRank::number: return compare_numbers(*a, *b);
    case TypeRank::string:
      return compare_strings(a->get_ref<const std::string&>(), b->get_ref<const std::string&>());
    case TypeRank::boolean: return a->get<bool>() == b->get<bool>() ? 0 : (a->get<bool>() ? 1 : -1);
    case TypeRank::date: {
      const int64_t x = mongo_date_ms(*a);
      const int64_t y = mongo_date_ms(*b);
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    case TypeRank::object_id: return compare_strings(oid_hex(*a), oid_hex(*b));
    case TypeRank::array: {
      const size_t n = std::min(a->size(), b->size());
      for (size_t i = 0; i < n; ++i) {
        if (const int c = compare_values(&(*a)[i], &(*b)[i]); c != 0) return c;
      }
      return a->size() == b->size() ? 0 : (a->size() < b->size() ? -1 : 1);
    }
    case TypeRank::object: {
      // Field by field in order: the field's type, then its name, then its value (as BSON does).
      auto ia = a->begin();
      auto ib = b->begin();
      for (; ia != a->end() && ib != b->end(); ++ia, ++ib) {
        const TypeRank ta = type_rank(&ia.value());
        const TypeRank tb = type_rank(&ib.value());
        if (ta != tb) return ta < tb ? -1 : 1;
        if (const int c = compare_strings(ia.key(), ib.key()); c != 0) return c;
        if (const int c = compare_values(&ia.value(), &ib.value()); c != 0) return c;
      }
      if (ia == a->end() && ib == b->end()) return 0;
      return ia == a->end() ? -1 : 1;
    }
  }
  return 0;
}

const Doc* lookup(const Doc& doc, std::string_view path) {
  const Doc* at = &doc;
  while (true) {
    if (!at->is_object() || is_mongo_date(*at) || is_object_id(*at)) return nullptr;
    const size_t dot = path.find('.');
    const std::string step(path.substr(0, dot));
    const auto found = at->find(step);
    if (found == at->end()) return nullptr;
    at = &*found;
    if (dot == std::string_view::npos) return at;
    path.remove_prefix(dot + 1);
  }
}

void set_path(Doc& doc, std::string_view path, Doc value) {
  Doc* at = &doc;
  const std::string full(path);
  while (true) {
    const size_t dot = path.find('.');
    const std::string step(path.substr(0, dot));
    if (step.empty())
      throw MongoError(56, fmt::format("An empty update path is not valid: '{}'", full));
    if (dot == std::string_view::npos) {
      (*at)[step] = std::move(value);
      return;
    }
    Doc& next = (*at)[step];  // creates null when absent
    if (next.is_null()) next = Doc::object();
    if (!next.is_object() || is_mongo_date(next) || is_object_id(next)) {
      throw MongoError(
          28, fmt::format("Cannot create field '{}' in element {{{}: {}}}",
                          std::string(path.substr(dot + 1, path.find('.', dot + 1) - dot - 1)),
                          step, render(next)));
    }
    at = &next;
    path.remove_prefix(dot + 1);
  }
}

bool unset_path(Doc& doc, std::string_view path) {
  Doc* parent = &doc;
  while (true) {
    if (!parent->is_object() || is_mongo_date(*parent) || is_object_id(*parent)) return false;
    const size_t dot = path.find('.');
    if (dot == std::string_view::npos) break;
    const auto found = parent->find(std::string(path.substr(0, dot)));
    if (found == parent->end()) return false;
    parent = &*found;
    path.remove_prefix(dot + 1);
  }
  return parent->erase(std::string(path)) > 0;
}

std::string render(const Doc& value) {
  const TypeRank rank = type_rank(&value);
  if (std::string out; append_shell_scalar(out, rank, value)) return out;
  switch (rank) {
    case TypeRank::missing:
    case TypeRank::null: return "null";
    case TypeRank::number: return render_float(value.get<double>());  // integers: above
    case TypeRank::string: return quote(value.get_ref<const std::string&>());
    case TypeRank::array: {
      std::string out = "[";
      for (size_t i = 0; i < value.size(); ++i) out += (i ? ", " : " ") + render(value[i]);
      return out + (value.empty() ? "]" : " ]");
    }
    case TypeRank::object: {
      std::string out = "{";
      bool first = true;
      for (auto it = value.begin(); it != value.end(); ++it) {
        out += (first ? " " : ", ") + it.key() + ": " + render(it.value());
        first = false;
      }
      return out + (value.empty() ? "}" : " }");
    }
    case TypeRank::boolean:
    case TypeRank::date:
    case TypeRank::object_id: break;  // shell scalars, spelled above
    case TypeRank::other: return value.dump();
  }
  return value.dump();
}

void append_canonical_key(std::string& out, const Doc* value) {
  const TypeRank rank = type_rank(value);
  // Missing and null index the same way (a unique index holds one document without the field).
  if (rank == TypeRank::missing || rank == TypeRank::null) {
    out += "5:";
    return;
  }
  out += std::to_string(static_cast<int>(rank));
  out += ':';
  if (append_shell_scalar(out, rank, *value)) return;  // integers, booleans, dates, ObjectIds
  switch (rank) {
    case TypeRank::number: {  // a float: 1.0 keys as 1, so it meets the integer 1
      const double d = value->get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) {
        out += std::to_string(static_cast<int64_t>(d));
      } else {
        fmt::format_to(std::back_inserter(out), "{}", d);
      }
      return;
    }
    case TypeRank::array: {
      for (const Doc& item : *value) {
        append_canonical_key(out, &item);
        out += ',';
      }
      return;
    }
    case TypeRank::object: {
      for (auto it = value->begin(); it != value->end(); ++it) {
        append_quoted(out, it.key());
        out += '=';
        append_canonical_key(out, &it.value());
        out += ',';
      }
      return;
    }
    case TypeRank::string: append_quoted(out, value->get_ref<const std::string&>()); return;
    default: out += render(*value); return;
  }
}

std::string canonical_key(const Doc* value) {
  std::string out;
  append_canonical_key(out, value);
  return out;
}

std::string compact(const Doc& value, size_t bytes_max) {
  std::string out = value.dump(-1, ' ', false, Doc::error_handler_t::replace);
  if (out.size() > bytes_max) out = out.substr(0, bytes_max) + "..";
  return out;
}

int64_t as_int64(const Doc& number) {
  if (number.is_number_float()) {
    const double d = number.get<double>();
    if (!(d == d)) return 0;
    if (d >= 9.2e18) return std::numeric_limits<int64_t>::max();
    if (d <= -9.2e18) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(d);
  }
  if (number.is_number_unsigned()) {
    const auto u = number.get<uint64_t>();
    return u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
               ? std::numeric_limits<int64_t>::max()
               : static_cast<int64_t>(u);
  }
  return number.get<int64_t>();
}

bool truthy(const Doc* value) {
  switch (type_rank(value)) {
    case TypeRank::missing:
    case TypeRank::null: return false;
    case TypeRank::boolean: return value->get<bool>();
    case TypeRank::number:
      return value->is_number_float() ? value->get<double>() != 0.0 : as_int64(*value) != 0;
    default: return true;
  }
}

}  // namespace lockstep::sim::mongo
