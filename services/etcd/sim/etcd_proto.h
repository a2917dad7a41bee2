#pragma once
// etcd 3.4's gRPC messages (etcdserverpb, mvccpb, v3lockpb) as protobuf wire bytes, and the JSON
// its gateway spells them in, which is what the simulated cluster takes and answers
// (etcd_cluster.h): for a gRPC front that serves clients speaking protobuf (the npm client etcd3)
// from the same cluster as the JSON clients.
//
// The gateway's spelling is jsonpb's with the proto field names (grpc-gateway v1's default
// marshaler): int64 and uint64 as decimal strings, bytes as padded standard base64, enums by name
// (a value the enum does not name as its number), proto3 defaults omitted except a oneof member,
// which is written when set even at its default ({"create_revision": "0"} in a compare), nested
// messages as objects, repeated fields as arrays (omitted when empty).
//
// Both directions follow one table of the messages (field numbers, types and names from etcd
// v3.4.23's rpc.proto, kv.proto and v3lock.proto), not code per message. Decoding is as etcd's
// gogo-generated unmarshalers read: unknown fields (and groups) skipped, a scalar seen twice keeps
// its last value, a message field seen twice merges, a oneof keeps its last member. Encoding is
// deterministic: fields in field-number order, as Go's marshaler writes them.
//
// Invariants: decoding never throws; it bounds message nesting at kProtoDepthMax and reports any
// malformed encoding in one line. Encoding takes JSON the cluster wrote: a value of the wrong type
// for its field (a key not base64, an enum name the enum lacks, two members of one oneof) is a bug
// there and fails a LOCKSTEP_CHECK.
#include <optional>
#include <string>
#include <string_view>

#include "services/etcd/client/etcd_connection.h"

namespace lockstep::sim::etcd {

// The etcd 3.4 messages the gRPC front speaks.
enum class EtcdMessage {
  response_header,
  key_value,
  range_request,
  range_response,
  put_request,
  put_response,
  delete_range_request,
  delete_range_response,
  compare,
  request_op,
  response_op,
  txn_request,
  txn_response,
  lease_grant_request,
  lease_grant_response,
  lease_revoke_request,
  lease_revoke_response,
  lease_keep_alive_request,
  lease_keep_alive_response,
  lease_time_to_live_request,
  lease_time_to_live_response,
  lock_request,
  lock_response,
  unlock_request,
  unlock_response,
};

// The message's full protobuf name: "etcdserverpb.TxnRequest", "mvccpb.KeyValue".
std::string_view to_string(EtcdMessage message);

// How deep messages may nest in one decoded message (a txn in a txn's op is two levels down).
inline constexpr int kProtoDepthMax = 32;

struct ProtoDecoded {
  std::optional<EtcdJson> json;  // the message as the gateway spells it; nullopt on an error
  std::string error;             // why the bytes are not a message: one line

  bool ok() const { return json.has_value(); }
};

// Decodes protobuf wire bytes of `message` into the gateway's JSON object. Malformed: a truncated
// varint, tag or length, a length past the end, a wire type other than the field's (or 6, 7, an
// unmatched end group), field number 0, a string that is not UTF-8, nesting deeper than
// kProtoDepthMax. A varint of more than 10 bytes overflows; extra high bits of a 10th byte are
// dropped, as gogo's unmarshaler does.
ProtoDecoded proto_decode(EtcdMessage message, std::string_view bytes);

// Encodes the gateway's JSON object as protobuf wire bytes of `message`. Absent, null and default
// scalars are left out (proto3), a oneof member and a message field present are written even at
// their default; 64-bit integers may be strings or numbers, enums names or numbers. JSON fields the
// message does not have are ignored, and so is the gateway's framing of a stream's message: an
// object {"result": M} (a keepalive's reply) encodes M. Not for a refusal ({"error", "code"}): that
// is a gRPC status, not a message.
std::string proto_encode(EtcdMessage message, const EtcdJson& json);

// One RPC of the front: its gRPC path, the gateway path the simulated cluster serves it at, its
// messages, and which side streams.
struct EtcdRpc {
  std::string_view grpc_path;     // "/etcdserverpb.KV/Txn"
  std::string_view gateway_path;  // "/v3/kv/txn"
  EtcdMessage request;
  EtcdMessage response;
  bool client_streams = false;
  bool server_streams = false;
};

// The RPC at a gRPC path; nullptr for one the front does not serve.
const EtcdRpc* find_etcd_rpc(std::string_view grpc_path);

}  // namespace lockstep::sim::etcd
