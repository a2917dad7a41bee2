#include "services/etcd/sim/etcd_proto.h"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "base/check.h"
#include "services/etcd/client/etcd_json.h"

namespace lockstep::sim::etcd {

using lockstep::etcd::base64_decode;
using lockstep::etcd::base64_encode;
using lockstep::etcd::bytes_field;
using lockstep::etcd::int_field;
using lockstep::etcd::int_json;
using lockstep::etcd::uint_field;

namespace {

// ---- the schema: etcd v3.4.23's rpc.proto, kv.proto and v3lock.proto ----

enum class Kind : uint8_t { int64, uint64, boolean, enumeration, bytes, string, message };

struct Field {
  uint32_t number = 0;
  std::string_view name;
  Kind kind = Kind::int64;
  bool repeated = false;
  int oneof = 0;  // the members of one oneof share a number above 0
  EtcdMessage message = EtcdMessage::response_header;  // Kind::message: its type
  std::span<const std::string_view> enum_names = {};   // Kind::enumeration: the names by value
};

struct Schema {
  std::string_view name;
  std::span<const Field> fields;  // in field-number order
};

constexpr std::array<std::string_view, 3> kSortOrder = {"NONE", "ASCEND", "DESCEND"};
constexpr std::array<std::string_view, 5> kSortTarget = {"KEY", "VERSION", "CREATE", "MOD",
                                                         "VALUE"};
constexpr std::array<std::string_view, 4> kCompareResult = {"EQUAL", "GREATER", "LESS",
                                                            "NOT_EQUAL"};
constexpr std::array<std::string_view, 5> kCompareTarget = {"VERSION", "CREATE", "MOD", "VALUE",
                                                            "LEASE"};

using M = EtcdMessage;

constexpr Field header_field() {
  return {.number = 1, .name = "header", .kind = Kind::message, .message = M::response_header};
}

constexpr Field kResponseHeader[] = {
    {.number = 1, .name = "cluster_id", .kind = Kind::uint64},
    {.number = 2, .name = "member_id", .kind = Kind::uint64},
    {.number = 3, .name = "revision", .kind = Kind::int64},
    {.number = 4, .name = "raft_term", .kind = Kind::uint64},
};
constexpr Field kKeyValue[] = {
    {.number = 1, .name = "key", .kind = Kind::bytes},
    {.number = 2, .name = "create_revision", .kind = Kind::int64},
    {.number = 3, .name = "mod_revision", .kind = Kind::int64},
    {.number = 4, .name = "version", .kind = Kind::int64},
    {.number = 5, .name = "value", .kind = Kind::bytes},
    {.number = 6, .name = "lease", .kind = Kind::int64},
};
constexpr Field kRangeRequest[] = {
    {.number = 1, .name = "key", .kind = Kind::bytes},
    {.number = 2, .name = "range_end", .kind = Kind::bytes},
    {.number = 3, .name = "limit", .kind = Kind::int64},
    {.number = 4, .name = "revision", .kind = Kind::int64},
    {.number = 5, .name = "sort_order", .kind = Kind::enumeration, .enum_names = kSortOrder},
    {.number = 6, .name = "sort_target", .kind = Kind::enumeration, .enum_names = kSortTarget},
    {.number = 7, .name = "serializable", .kind = Kind::boolean},
    {.number = 8, .name = "keys_only", .kind = Kind::boolean},
    {.number = 9, .name = "count_only", .kind = Kind::boolean},
    {.number = 10, .name = "min_mod_revision", .kind = Kind::int64},
    {.number = 11, .name = "max_mod_revision", .kind = Kind::int64},
    {.number = 12, .name = "min_create_revision", .kind = Kind::int64},
    {.number = 13, .name = "max_create_revision", .kind = Kind::int64},
};
constexpr Field kRangeResponse[] = {
    header_field(),
    {.number = 2, .name = "kvs", .kind = Kind::message, .repeated = true, .message = M::key_value},
    {.number = 3, .name = "more", .kind = Kind::boolean},
    {.number = 4, .name = "count", .kind = Kind::int64},
};
constexpr Field kPutRequest[] = {
    {.number = 1, .name = "key", .kind = Kind::bytes},
    {.number = 2, .name = "value", .kind = Kind::bytes},
    {.number = 3, .name = "lease", .kind = Kind::int64},
    {.number = 4, .name = "prev_kv", .kind = Kind::boolean},
    {.number = 5, .name = "ignore_value", .kind = Kind::boolean},
    {.number = 6, .name = "ignore_lease", .kind = Kind::boolean},
};
constexpr Field kPutResponse[] = {
    header_field(),
    {.number = 2, .name = "prev_kv", .kind = Kind::message, .message = M::key_value},
};
constexpr Field kDeleteRangeRequest[] = {
    {.number = 1, .name = "key", .kind = Kind::bytes},
    {.number = 2, .name = "range_end", .kind = Kind::bytes},
    {.number = 3, .name = "prev_kv", .kind = Kind::boolean},
};
constexpr Field kDeleteRangeResponse[] = {
    header_field(),
    {.number = 2, .name = "deleted", .kind = Kind::int64},
    {.number = 3,
     .name = "prev_kvs",
     .kind = Kind::message,
     .repeated = true,
     .message = M::key_value},
};
constexpr Field kRequestOp[] = {
    // oneof request
    {.number = 1,
     .name = "request_range",
     .kind = Kind::message,
     .oneof = 1,
     .message = M::range_request},
    {.number = 2,
     .name = "request_put",
     .kind = Kind::message,
     .oneof = 1,
     .message = M::put_request},
    {.number = 3,
     .name = "request_delete_range",
     .kind = Kind::message,
     .oneof = 1,
     .message = M::delete_range_request},
    {.number = 4,
     .name = "request_txn",
     .kind = Kind::message,
     .oneof = 1,
     .message = M::txn_request},
};
constexpr Field kResponseOp[] = {
    // oneof response
    {.number = 1,
     .name = "response_range",
     .kind = Kind::message,
     .oneof = 1,
     .message = M::range_response},
    {.number = 2,
     .name = "response_put",
     .kind = Kind::message,
     .oneof = 1,
     .message = M::put_response},
    {.number = 3,
     .name = "response_delete_range",
     .kind = Kind::message,
     .oneof = 1,
     .message = M::delete_range_response},
    {.number = 4,
     .name = "response_txn",
     .kind = Kind::message,
     .oneof = 1,
     .message = M::txn_response},
};
constexpr Field kCompare[] = {
    // oneof target_union: 4 to 8
    {.number = 1, .name = "result", .kind = Kind::enumeration, .enum_names = kCompareResult},
    {.number = 2, .name = "target", .kind = Kind::enumeration, .enum_names = kCompareTarget},
    {.number = 3, .name = "key", .kind = Kind::bytes},
    {.number = 4, .name = "version", .kind = Kind::int64, .oneof = 1},
    {.number = 5, .name = "create_revision", .kind = Kind::int64, .oneof = 1},
    {.number = 6, .name = "mod_revision", .kind = Kind::int64, .oneof = 1},
    {.number = 7, .name = "value", .kind = Kind::bytes, .oneof = 1},
    {.number = 8, .name = "lease", .kind = Kind::int64, .oneof = 1},
    {.number = 64, .name = "range_end", .kind = Kind::bytes},
};
constexpr Field kTxnRequest[] = {
    {.number = 1,
     .name = "compare",
     .kind = Kind::message,
     .repeated = true,
     .message = M::compare},
    {.number = 2,
     .name = "success",
     .kind = Kind::message,
     .repeated = true,
     .message = M::request_op},
    {.number = 3,
     .name = "failure",
     .kind = Kind::message,
     .repeated = true,
     .message = M::request_op},
};
constexpr Field kTxnResponse[] = {
    header_field(),
    {.number = 2, .name = "succeeded", .kind = Kind::boolean},
    {.number = 3,
     .name = "responses",
     .kind = Kind::message,
     .repeated = true,
     .message = M::response_op},
};
constexpr Field kLeaseGrantRequest[] = {
    {.number = 1, .name = "TTL", .kind = Kind::int64},
    {.number = 2, .name = "ID", .kind = Kind::int64},
};
constexpr Field kLeaseGrantResponse[] = {
    header_field(),
    {.number = 2, .name = "ID", .kind = Kind::int64},
    {.number = 3, .name = "TTL", .kind = Kind::int64},
    {.number = 4, .name = "error", .kind = Kind::string},
};
constexpr Field kLeaseId[] = {
    // LeaseRevokeRequest, LeaseKeepAliveRequest
    {.number = 1, .name = "ID", .kind = Kind::int64},
};
constexpr Field kHeaderOnly[] = {header_field()};  // LeaseRevokeResponse, UnlockResponse
constexpr Field kLeaseKeepAliveResponse[] = {
    header_field(),
    {.number = 2, .name = "ID", .kind = Kind::int64},
    {.number = 3, .name = "TTL", .kind = Kind::int64},
};
constexpr Field kLeaseTimeToLiveRequest[] = {
    {.number = 1, .name = "ID", .kind = Kind::int64},
    {.number = 2, .name = "keys", .kind = Kind::boolean},
};
constexpr Field kLeaseTimeToLiveResponse[] = {
    header_field(),
    {.number = 2, .name = "ID", .kind = Kind::int64},
    {.number = 3, .name = "TTL", .kind = Kind::int64},
    {.number = 4, .name = "grantedTTL", .kind = Kind::int64},
    {.number = 5, .name = "keys", .kind = Kind::bytes, .repeated = true},
};
constexpr Field kLockRequest[] = {
    {.number = 1, .name = "name", .kind = Kind::bytes},
    {.number = 2, .name = "lease", .kind = Kind::int64},
};
constexpr Field kLockResponse[] = {
    header_field(),
    {.number = 2, .name = "key", .kind = Kind::bytes},
};
constexpr Field kUnlockRequest[] = {
    {.number = 1, .name = "key", .kind = Kind::bytes},
};

constexpr Schema schema_of(EtcdMessage message) {
  switch (message) {
    case M::response_header: return {"etcdserverpb.ResponseHeader", kResponseHeader};
    case M::key_value: return {"mvccpb.KeyValue", kKeyValue};
    case M::range_request: return {"etcdserverpb.RangeRequest", kRangeRequest};
    case M::range_response: return {"etcdserverpb.RangeResponse", kRangeResponse};
    case M::put_request: return {"etcdserverpb.PutRequest", kPutRequest};
    case M::put_response: return {"etcdserverpb.PutResponse", kPutResponse};
    case M::delete_range_request: return {"etcdserverpb.DeleteRangeRequest", kDeleteRangeRequest};
    case M::delete_range_response:
      return {"etcdserverpb.DeleteRangeResponse", kDeleteRangeResponse};
    case M::compare: return {"etcdserverpb.Compare", kCompare};
    case M::request_op: return {"etcdserverpb.RequestOp", kRequestOp};
    case M::response_op: return {"etcdserverpb.ResponseOp", kResponseOp};
    case M::txn_request: return {"etcdserverpb.TxnRequest", kTxnRequest};
    case M::txn_response: return {"etcdserverpb.TxnResponse", kTxnResponse};
    case M::lease_grant_request: return {"etcdserverpb.LeaseGrantRequest", kLeaseGrantRequest};
    case M::lease_grant_response: return {"etcdserverpb.LeaseGrantResponse", kLeaseGrantResponse};
    case M::lease_revoke_request: return {"etcdserverpb.LeaseRevokeRequest", kLeaseId};
    case M::lease_revoke_response: return {"etcdserverpb.LeaseRevokeResponse", kHeaderOnly};
    case M::lease_keep_alive_request: return {"etcdserverpb.LeaseKeepAliveRequest", kLeaseId};
    case M::lease_keep_alive_response:
      return {"etcdserverpb.LeaseKeepAliveResponse", kLeaseKeepAliveResponse};
    case M::lease_time_to_live_request:
      return {"etcdserverpb.LeaseTimeToLiveRequest", kLeaseTimeToLiveRequest};
    case M::lease_time_to_live_response:
      return {"etcdserverpb.LeaseTimeToLiveResponse", kLeaseTimeToLiveResponse};
    case M::lock_request: return {"v3lockpb.LockRequest", kLockRequest};
    case M::lock_response: return {"v3lockpb.LockResponse", kLockResponse};
    case M::unlock_request: return {"v3lockpb.UnlockRequest", kUnlockRequest};
    case M::unlock_response: return {"v3lockpb.UnlockResponse", kHeaderOnly};
  }
  return {"?", {}};
}

// The table's own invariants, checked by the compiler: fields in ascending number order (the
// encoder writes them so), and repeated only where no packing question arises (bytes, strings,
// messages: no etcd message the front speaks has a repeated number).
constexpr bool well_formed(std::span<const Field> fields) {
  uint32_t previous = 0;
  for (const Field& f : fields) {
    if (f.number <= previous || f.number >= (1u << 29)) return false;
    if (f.repeated && (f.oneof != 0 || (f.kind != Kind::bytes && f.kind != Kind::string &&
                                        f.kind != Kind::message)))
      return false;
    if (f.kind == Kind::enumeration && f.enum_names.empty()) return false;
    previous = f.number;
  }
  return true;
}

constexpr bool every_schema_well_formed() {
  for (int m = 0; m <= static_cast<int>(M::unlock_response); ++m) {
    if (!well_formed(schema_of(static_cast<EtcdMessage>(m)).fields)) return false;
  }
  return true;
}
static_assert(every_schema_well_formed());

const Field* field_numbered(std::span<const Field> fields, uint32_t number) {
  for (const Field& f : fields) {
    if (f.number == number) return &f;
  }
  return nullptr;
}

bool has_field_named(std::span<const Field> fields, std::string_view name) {
  for (const Field& f : fields) {
    if (f.name == name) return true;
  }
  return false;
}

// ---- the wire ----

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5
};

constexpr int kVarintBytesMax = 10;

WireType wire_type_of(Kind kind) {
  switch (kind) {
    case Kind::bytes:
    case Kind::string:
    case Kind::message: return kLengthDelimited;
    default: return kVarint;
  }
}

// Reads the wire format front to back; every read consumes at least one byte or fails, so loops
// over a reader end within its size.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  bool done() const { return at_ == bytes_.size(); }

  std::optional<uint64_t> varint() {
    uint64_t value = 0;
    for (int i = 0; i < kVarintBytesMax; ++i) {
      if (done()) return std::nullopt;
      const auto byte = static_cast<uint8_t>(bytes_[at_++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
      if (byte < 0x80) return value;
    }
    overflow_ = true;
    return std::nullopt;
  }

  std::optional<std::string_view> take(uint64_t length) {
    if (length > bytes_.size() - at_) return std::nullopt;
    const std::string_view out = bytes_.substr(at_, static_cast<size_t>(length));
    at_ += static_cast<size_t>(length);
    return out;
  }

  // Why the last varint failed: past 10 bytes, or the end.
  std::string varint_error(std::string_view what) const {
    return overflow_ ? fmt::format("{} overflows 64 bits", what)
                     : fmt::format("truncated {}", what);
  }
  size_t left() const { return bytes_.size() - at_; }

 private:
  std::string_view bytes_;
  size_t at_ = 0;
  bool overflow_ = false;
};

// Strict UTF-8 (no overlong forms, surrogates or values past U+10FFFF), as Go's proto3 strings
// and nlohmann::json's dump() want it.
bool valid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<uint8_t>(text[i]);
    int extra = 0;
    uint8_t low = 0x80;
    uint8_t high = 0xbf;
    if (c < 0x80) {
      extra = 0;
    } else if (c >= 0xc2 && c <= 0xdf) {
      extra = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      extra = 2;
      if (c == 0xe0) low = 0xa0;
      if (c == 0xed) high = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      extra = 3;
      if (c == 0xf0) low = 0x90;
      if (c == 0xf4) high = 0x8f;
    } else {
      return false;
    }
    if (text.size() - i - 1 < static_cast<size_t>(extra)) return false;
    for (int k = 1; k <= extra; ++k) {
      const auto next = static_cast<uint8_t>(text[i + static_cast<size_t>(k)]);
      if (next < (k == 1 ? low : 0x80) || next > (k == 1 ? high : 0xbf)) return false;
    }
    i += static_cast<size_t>(extra) + 1;
  }
  return true;
}

// ---- decoding ----

std::string decode_into(EtcdMessage message, std::string_view bytes, int depth, EtcdJson& out);

// Skips an unknown field's value ("" or why not); a group up to its matching end.
std::string skip_value(Reader& in, uint32_t wire_type, uint64_t number, int depth) {
  switch (wire_type) {
    case kVarint:
      return in.varint() ? "" : in.varint_error(fmt::format("varint of field {}", number));
    case kFixed64: return in.take(8) ? "" : fmt::format("truncated fixed64 of field {}", number);
    case kFixed32: return in.take(4) ? "" : fmt::format("truncated fixed32 of field {}", number);
    case kLengthDelimited: {
      const std::optional<uint64_t> length = in.varint();
      if (!length) return in.varint_error(fmt::format("length of field {}", number));
      if (!in.take(*length))
        return fmt::format("length {} of field {} runs past the end ({} bytes left)", *length,
                           number, in.left());
      return "";
    }
    case kStartGroup: {
      if (depth >= kProtoDepthMax)
        return fmt::format("groups nested deeper than {}", kProtoDepthMax);
      while (!in.done()) {
        const std::optional<uint64_t> tag = in.varint();
        if (!tag) return in.varint_error("tag");
        const auto inner_type = static_cast<uint32_t>(*tag & 7);
        if (inner_type == kEndGroup) {
          if ((*tag >> 3) == number) return "";
          return fmt::format("group {} ends as group {}", number, *tag >> 3);
        }
        std::string error = skip_value(in, inner_type, *tag >> 3, depth + 1);
        if (!error.empty()) return error;
      }
      return fmt::format("group {} has no end", number);
    }
    case kEndGroup: return fmt::format("end of group {} that did not start", number);
    default: return fmt::format("invalid wire type {} of field {}", wire_type, number);
  }
}

// A scalar's JSON, or null for its default (which the gateway omits).
EtcdJson scalar_json(const Field& field, uint64_t raw) {
  switch (field.kind) {
    case Kind::int64: {
      const auto value = static_cast<int64_t>(raw);  // two's complement, as protobuf's int64
      return value == 0 ? EtcdJson() : int_json(value);
    }
    case Kind::uint64: return raw == 0 ? EtcdJson() : EtcdJson(std::to_string(raw));
    case Kind::boolean: return raw == 0 ? EtcdJson() : EtcdJson(true);
    case Kind::enumeration: {
      // An enum is an int32 on the wire (a negative one sign-extended to 10 bytes); jsonpb writes
      // a value its enum does not name as a bare number.
      const auto value = static_cast<int32_t>(static_cast<uint32_t>(raw & 0xffffffffu));
      if (value == 0) return EtcdJson();
      if (value > 0 && static_cast<size_t>(value) < field.enum_names.size())
        return EtcdJson(std::string(field.enum_names[static_cast<size_t>(value)]));
      return EtcdJson(value);
    }
    default: LOCKSTEP_CHECK(false, "a varint field");
  }
}

// Sets out to a length-delimited value's JSON (a message merges into it): "" or why not.
std::string length_delimited_json(const Field& field, std::string_view bytes, int depth,
                                  EtcdJson& out) {
  switch (field.kind) {
    case Kind::bytes: out = base64_encode(bytes); return "";
    case Kind::string:
      if (!valid_utf8(bytes)) return fmt::format("field {} is not UTF-8", field.name);
      out = std::string(bytes);
      return "";
    case Kind::message: {
      if (!out.is_object()) out = EtcdJson::object();
      std::string error = decode_into(field.message, bytes, depth + 1, out);
      return error.empty() ? "" : fmt::format("{}: {}", field.name, error);
    }
    default: LOCKSTEP_CHECK(false, "a length-delimited field");
  }
}

// Sets a known field from the wire: a repeated one appends, a message merges (a oneof's replaces
// its member, as gogo's unmarshalers do), a scalar at its default goes, except a oneof member.
std::string decode_field(const Field& field, std::span<const Field> fields, Reader& in, int depth,
                         EtcdJson& out) {
  const std::string key(field.name);
  if (field.oneof != 0) {
    for (const Field& other : fields) {
      if (other.oneof == field.oneof && other.number != field.number)
        out.erase(std::string(other.name));
    }
  }
  if (wire_type_of(field.kind) == kVarint) {
    const std::optional<uint64_t> raw = in.varint();
    if (!raw) return in.varint_error(fmt::format("varint of field {}", field.name));
    EtcdJson value = scalar_json(field, *raw);
    if (value.is_null() && field.oneof != 0) {
      value = field.kind == Kind::enumeration ? EtcdJson(std::string(field.enum_names[0]))
              : field.kind == Kind::boolean   ? EtcdJson(false)
                                              : int_json(0);
    }
    if (value.is_null()) {
      out.erase(key);
    } else {
      out[key] = std::move(value);
    }
    return "";
  }
  const std::optional<uint64_t> length = in.varint();
  if (!length) return in.varint_error(fmt::format("length of field {}", field.name));
  const std::optional<std::string_view> bytes = in.take(*length);
  if (!bytes)
    return fmt::format("length {} of field {} runs past the end ({} bytes left)", *length,
                       field.name, in.left());
  EtcdJson value;
  if (field.kind == Kind::message && !field.repeated && field.oneof == 0 && out.contains(key))
    value = std::move(out[key]);  // merged into
  std::string error = length_delimited_json(field, *bytes, depth, value);
  if (!error.empty()) return error;
  if (field.repeated) {
    if (!out.contains(key)) out[key] = EtcdJson::array();
    out[key].push_back(std::move(value));
  } else if (field.kind != Kind::message && field.oneof == 0 && bytes->empty()) {
    out.erase(key);  // a default bytes or string
  } else {
    out[key] = std::move(value);
  }
  return "";
}

std::string decode_into(EtcdMessage message, std::string_view bytes, int depth, EtcdJson& out) {
  const Schema schema = schema_of(message);
  if (depth > kProtoDepthMax)
    return fmt::format("{}: messages nested deeper than {}", schema.name, kProtoDepthMax);
  Reader in(bytes);
  while (!in.done()) {
    const std::optional<uint64_t> tag = in.varint();
    if (!tag) return fmt::format("{}: {}", schema.name, in.varint_error("tag"));
    const uint64_t number = *tag >> 3;
    const auto wire_type = static_cast<uint32_t>(*tag & 7);
    if (number == 0 || number >= (1u << 29))
      return fmt::format("{}: invalid field number {}", schema.name, number);
    const Field* field = field_numbered(schema.fields, static_cast<uint32_t>(number));
    std::string error;
    if (field == nullptr) {
      error = skip_value(in, wire_type, number, depth);
    } else if (wire_type != wire_type_of(field->kind)) {
      error = fmt::format("wire type {} for field {}, which has wire type {}", wire_type,
                          field->name, static_cast<uint32_t>(wire_type_of(field->kind)));
    } else {
      error = decode_field(*field, schema.fields, in, depth, out);
    }
    if (!error.empty()) return fmt::format("{}: {}", schema.name, error);
  }
  return "";
}

// ---- encoding ----

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

void put_tag(std::string& out, const Field& field) {
  put_varint(out, (static_cast<uint64_t>(field.number) << 3) | wire_type_of(field.kind));
}

void put_length_delimited(std::string& out, const Field& field, std::string_view bytes) {
  put_tag(out, field);
  put_varint(out, bytes.size());
  out += bytes;
}

std::string encode_message(EtcdMessage message, const EtcdJson& json, int depth);

// An enum's wire value from its name or number.
int32_t enum_value(const Field& field, const EtcdJson& value) {
  if (value.is_number_integer()) {
    const auto number = value.get<int64_t>();
    LOCKSTEP_CHECK(number >= INT32_MIN && number <= INT32_MAX, "an enum value fits an int32");
    return static_cast<int32_t>(number);
  }
  LOCKSTEP_CHECK(value.is_string(), "an enum is a name or a number");
  const auto& name = value.get_ref<const std::string&>();
  for (size_t i = 0; i < field.enum_names.size(); ++i) {
    if (field.enum_names[i] == name) return static_cast<int32_t>(i);
  }
  LOCKSTEP_CHECK(false, fmt::format("{} names a value of {}'s enum", name, field.name));
}

// A varint field's wire value (0 for its default): its value, in the object holding it (whose
// int_field reads either spelling of a 64-bit integer).
uint64_t varint_value(const Field& field, const EtcdJson& object, const EtcdJson& value) {
  switch (field.kind) {
    case Kind::int64: {
      const std::optional<int64_t> number = int_field(object, field.name);
      LOCKSTEP_CHECK(number.has_value(), fmt::format("{} is an int64", field.name));
      return static_cast<uint64_t>(*number);
    }
    case Kind::uint64: {
      const std::optional<uint64_t> number = uint_field(object, field.name);
      LOCKSTEP_CHECK(number.has_value(), fmt::format("{} is a uint64", field.name));
      return *number;
    }
    case Kind::boolean:
      LOCKSTEP_CHECK(value.is_boolean(), fmt::format("{} is a bool", field.name));
      return value.get<bool>() ? 1 : 0;
    case Kind::enumeration:
      // Sign-extended: a negative int32 takes 10 bytes, as protobuf writes it.
      return static_cast<uint64_t>(static_cast<int64_t>(enum_value(field, value)));
    default: LOCKSTEP_CHECK(false, "a varint field");
  }
}

// A length-delimited value's bytes: decoded base64, the string, or the encoded message.
std::string length_delimited_value(const Field& field, const EtcdJson& value, int depth) {
  switch (field.kind) {
    case Kind::bytes: {
      LOCKSTEP_CHECK(value.is_string(), fmt::format("{} is base64", field.name));
      std::optional<std::string> bytes = base64_decode(value.get_ref<const std::string&>());
      LOCKSTEP_CHECK(bytes.has_value(), fmt::format("{} is base64", field.name));
      return std::move(*bytes);
    }
    case Kind::string:
      LOCKSTEP_CHECK(value.is_string(), fmt::format("{} is a string", field.name));
      return value.get<std::string>();
    case Kind::message:
      LOCKSTEP_CHECK(value.is_object(), fmt::format("{} is an object", field.name));
      return encode_message(field.message, value, depth + 1);
    default: LOCKSTEP_CHECK(false, "a length-delimited field");
  }
}

// One field present in json: every element of a repeated one, a scalar unless at its default.
void encode_field(const Field& field, const EtcdJson& json, const EtcdJson& value, int depth,
                  std::string& out) {
  if (field.repeated) {
    LOCKSTEP_CHECK(value.is_array(), fmt::format("{} is an array", field.name));
    for (const EtcdJson& element : value)
      put_length_delimited(out, field, length_delimited_value(field, element, depth));
    return;
  }
  if (wire_type_of(field.kind) == kVarint) {
    const uint64_t raw = varint_value(field, json, value);
    if (raw == 0 && field.oneof == 0) return;  // proto3 leaves defaults out
    put_tag(out, field);
    put_varint(out, raw);
    return;
  }
  const std::string bytes = length_delimited_value(field, value, depth);
  if (bytes.empty() && field.kind != Kind::message && field.oneof == 0) return;
  put_length_delimited(out, field, bytes);
}

std::string encode_message(EtcdMessage message, const EtcdJson& json, int depth) {
  const Schema schema = schema_of(message);
  LOCKSTEP_CHECK(depth <= kProtoDepthMax,
                 fmt::format("{} nests at most {} messages deep", schema.name, kProtoDepthMax));
  LOCKSTEP_CHECK(json.is_object(), fmt::format("{} is a JSON object", schema.name));
  std::string out;
  int oneof_written = 0;
  for (const Field& field : schema.fields) {
    const auto it = json.find(field.name);
    if (it == json.end() || it->is_null()) continue;
    if (field.oneof != 0) {
      LOCKSTEP_CHECK(oneof_written != field.oneof,
                     fmt::format("{} has one member of a oneof", schema.name));
      oneof_written = field.oneof;  // a message here has one oneof at most
    }
    encode_field(field, json, *it, depth, out);
  }
  return out;
}

// ---- the RPCs ----

constexpr EtcdRpc kRpcs[] = {
    {"/etcdserverpb.KV/Range", "/v3/kv/range", M::range_request, M::range_response},
    {"/etcdserverpb.KV/Put", "/v3/kv/put", M::put_request, M::put_response},
    {"/etcdserverpb.KV/DeleteRange", "/v3/kv/deleterange", M::delete_range_request,
     M::delete_range_response},
    {"/etcdserverpb.KV/Txn", "/v3/kv/txn", M::txn_request, M::txn_response},
    {"/etcdserverpb.Lease/LeaseGrant", "/v3/lease/grant", M::lease_grant_request,
     M::lease_grant_response},
    {"/etcdserverpb.Lease/LeaseRevoke", "/v3/lease/revoke", M::lease_revoke_request,
     M::lease_revoke_response},
    {"/etcdserverpb.Lease/LeaseKeepAlive", "/v3/lease/keepalive", M::lease_keep_alive_request,
     M::lease_keep_alive_response, true, true},
    {"/etcdserverpb.Lease/LeaseTimeToLive", "/v3/lease/timetolive", M::lease_time_to_live_request,
     M::lease_time_to_live_response},
    {"/v3lockpb.Lock/Lock", "/v3/lock/lock", M::lock_request, M::lock_response},
    {"/v3lockpb.Lock/Unlock", "/v3/lock/unlock", M::unlock_request, M::unlock_response},
};

}  // namespace

std::string_view to_string(EtcdMessage message) { return schema_of(message).name; }

ProtoDecoded proto_decode(EtcdMessage message, std::string_view bytes) {
  EtcdJson out = EtcdJson::object();
  std::string error = decode_into(message, bytes, 0, out);
  if (!error.empty()) return {.json = std::nullopt, .error = std::move(error)};
  return {.json = std::move(out), .error = ""};
}

std::string proto_encode(EtcdMessage message, const EtcdJson& json) {
  // The gateway frames each message of a stream as {"result": M}; no message here but Compare
  // (never a reply) has a field of that name.
  const bool framed = json.is_object() && json.size() == 1 && json.contains("result") &&
                      json["result"].is_object() &&
                      !has_field_named(schema_of(message).fields, "result");
  return encode_message(message, framed ? json["result"] : json, 0);
}

const EtcdRpc* find_etcd_rpc(std::string_view grpc_path) {
  for (const EtcdRpc& rpc : kRpcs) {
    if (rpc.grpc_path == grpc_path) return &rpc;
  }
  return nullptr;
}

}  // namespace lockstep::sim::etcd
