// etcd 3.4's gRPC messages and the gateway's JSON (etcd_proto.h), held to protobufjs. The request
// bytes are what etcd3@1.1.2 sends: encoded by @grpc/proto-loader's serializers, with the options
// etcd3 loads the rpc.proto it ships with (keepCase, longs and enums as strings, defaults, oneofs),
// from the objects its Lock, Lease and KV builders make. The reply bytes are this encoder's,
// checked to decode in protobufjs (the same loader) to the replies the simulated cluster writes.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

#include <catch2/catch.hpp>

#include "services/etcd/sim/etcd_proto.h"
#include "services/etcd/sim/etcd_store.h"
#include "services/etcd/tests/proto_support.h"

namespace lockstep::sim::etcd {
namespace {

using testing::decoded;

std::string unhex(std::string_view hex) {
  REQUIRE(hex.size() % 2 == 0);
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  return out;
}

std::string hex(std::string_view bytes) {
  std::string out;
  char pair[3];
  for (const char c : bytes) {
    std::snprintf(pair, sizeof pair, "%02x", static_cast<unsigned>(static_cast<uint8_t>(c)));
    out += pair;
  }
  return out;
}

std::string decode_error(EtcdMessage message, std::string_view bytes) {
  const ProtoDecoded out = proto_decode(message, bytes);
  CHECK_FALSE(out.ok());
  return out.error;
}

const EtcdRpc& rpc(std::string_view grpc_path) {
  const EtcdRpc* found = find_etcd_rpc(grpc_path);
  INFO(grpc_path);
  REQUIRE(found != nullptr);
  return *found;
}

// The fixtures' lease is 7587869066787431181 (0x694d86b6c80a230d), their lock key
// "locks/my-lock"; their header is the simulated member 0's.
constexpr const char* kHeader =
    R"("header":{"cluster_id":"4331739550152871431","member_id":"10276657743932975437","revision":"5","raft_term":"2"})";

TEST_CASE("the requests etcd3 sends decode to the gateway's JSON", "[proto]") {
  struct Fixture {
    const char* grpc_path;
    const char* hex;
    const char* json;
  };
  // Each request as etcd3's code builds it (the object given to proto-loader's serializer).
  const Fixture fixtures[] = {
      // Lock.acquire: lease.grant() sends {TTL: 30}.
      {"/etcdserverpb.Lease/LeaseGrant", "081e", R"({"TTL":"30"})"},
      // Lock.acquire's txn: {compare: [{key, result: Equal, target: Create, create_revision: 0}],
      // failure: [], success: [{request_put: {key, value: '', lease}}]}. protobufjs writes the
      // result and the empty value it was given; the gateway's JSON leaves both out, but not
      // the oneof's create_revision 0.
      {"/etcdserverpb.KV/Txn",
       "0a15080010011a0d6c6f636b732f6d792d6c6f636b2800121d121b0a0d6c6f"
       "636b732f6d792d6c6f636b1200188dc6a8c0ecd6e1a669",
       R"({"compare":[{"key":"bG9ja3MvbXktbG9jaw==","target":"CREATE","create_revision":"0"}],
           "success":[{"request_put":{"key":"bG9ja3MvbXktbG9jaw==","lease":"7587869066787431181"}}]})"},
      // Lease's keepalive stream writes {ID}; release() revokes {ID}.
      {"/etcdserverpb.Lease/LeaseKeepAlive", "088dc6a8c0ecd6e1a669",
       R"({"ID":"7587869066787431181"})"},
      {"/etcdserverpb.Lease/LeaseRevoke", "088dc6a8c0ecd6e1a669",
       R"({"ID":"7587869066787431181"})"},
      // getAll().prefix('locks/').limit(10)
      {"/etcdserverpb.KV/Range", "0a066c6f636b732f12066c6f636b7330180a",
       R"({"key":"bG9ja3Mv","range_end":"bG9ja3Mw","limit":"10"})"},
      // A sorted keys-only range from "a" on, below a create revision.
      {"/etcdserverpb.KV/Range", "0a01611201002802300240016829",
       R"({"key":"YQ==","range_end":"AA==","sort_order":"DESCEND","sort_target":"CREATE",
           "keys_only":true,"max_create_revision":"41"})"},
      {"/etcdserverpb.KV/Put", "0a016b120376c3bf2001",
       R"({"key":"aw==","value":"dsO/","prev_kv":true})"},
      {"/etcdserverpb.KV/DeleteRange", "0a066c6f636b732f12066c6f636b7330",
       R"({"key":"bG9ja3Mv","range_end":"bG9ja3Mw"})"},
      // Every op kind, a value compare and a negative version (a 10-byte varint).
      {"/etcdserverpb.KV/Txn",
       "0a0a080310031a016b3a01780a12080210001a016b20ffffffffffffffffff0112050a030a016b12071a050a01"
       "6b18011a092207120512030a016e",
       R"({"compare":[{"key":"aw==","result":"NOT_EQUAL","target":"VALUE","value":"eA=="},
                      {"key":"aw==","result":"LESS","version":"-1"}],
           "success":[{"request_range":{"key":"aw=="}},
                      {"request_delete_range":{"key":"aw==","prev_kv":true}}],
           "failure":[{"request_txn":{"success":[{"request_put":{"key":"bg=="}}]}}]})"},
      {"/etcdserverpb.Lease/LeaseTimeToLive", "088dc6a8c0ecd6e1a6691001",
       R"({"ID":"7587869066787431181","keys":true})"},
      {"/v3lockpb.Lock/Lock", "0a076d792d6c6f636b108dc6a8c0ecd6e1a669",
       R"({"name":"bXktbG9jaw==","lease":"7587869066787431181"})"},
      {"/v3lockpb.Lock/Unlock", "0a186d792d6c6f636b2f36393464383662366338306132333064",
       R"({"key":"bXktbG9jay82OTRkODZiNmM4MGEyMzBk"})"},
  };
  for (const Fixture& f : fixtures) {
    INFO(f.grpc_path << " " << f.hex);
    const EtcdMessage request = rpc(f.grpc_path).request;
    const EtcdJson json = decoded(request, unhex(f.hex));
    CHECK(json == EtcdJson::parse(f.json));
    // Encoded again (without the defaults protobufjs wrote), the same JSON comes back.
    CHECK(decoded(request, proto_encode(request, json)) == json);
  }
}

TEST_CASE("etcd3's lock acquire, decoded, is a txn the simulated store runs", "[proto]") {
  EtcdStore store(1);
  const EtcdJson grant = decoded(EtcdMessage::lease_grant_request, unhex("081e"));
  const Applied granted = store.apply("/v3/lease/grant", grant, 7587869066787431181);
  CHECK(granted.body == EtcdJson::parse(R"({"ID":"7587869066787431181","TTL":"30"})"));
  const EtcdJson txn =
      decoded(EtcdMessage::txn_request,
              unhex("0a15080010011a0d6c6f636b732f6d792d6c6f636b2800121d121b0a0d6c6f"
                    "636b732f6d792d6c6f636b1200188dc6a8c0ecd6e1a669"));
  CHECK_FALSE(EtcdStore::validate("/v3/kv/txn", txn).has_value());
  CHECK(store.apply("/v3/kv/txn", txn, 0).body == EtcdJson::parse(R"({"succeeded":true,
        "responses":[{"response_put":{"header":{"revision":"2"}}}]})"));
  // Again: the key exists, the compare fails, and the empty failure branch answers nothing.
  CHECK(store.apply("/v3/kv/txn", txn, 0).body == EtcdJson::object());
  CHECK(store.keys().at("locks/my-lock").lease == 7587869066787431181);
}

TEST_CASE("replies encode to the bytes protobufjs decodes back to them", "[proto]") {
  struct Fixture {
    const char* grpc_path;
    std::string json;
    const char* hex;
  };
  const std::string h = kHeader;
  const char* header_hex = "0a1908879cfdd2b9c5db8e3c10cdd2918bd2b881cf8e0118052002";
  const Fixture fixtures[] = {
      {"/etcdserverpb.Lease/LeaseGrant", "{" + h + R"(,"ID":"7587869066787431181","TTL":"30"})",
       "108dc6a8c0ecd6e1a669181e"},
      // Lock.acquire's txn, succeeded: one put's response with its header.
      {"/etcdserverpb.KV/Txn",
       "{" + h + R"(,"succeeded":true,"responses":[{"response_put":{"header":{"revision":"5"}}}]})",
       "10011a0612040a021805"},
      // Two kvs: one with every field, one keys-only without value or lease.
      {"/etcdserverpb.KV/Range", "{" + h + R"(,"kvs":[
         {"key":"YQ==","create_revision":"2","mod_revision":"3","version":"2","value":"Mg==","lease":"7587869066787431181"},
         {"key":"Yg==","create_revision":"4","mod_revision":"4","version":"1"}],"more":true,"count":"3"})",
       "12160a01611002180320022a0132308dc6a8c0ecd6e1a66912090a016210041804200118012003"},
      // The gateway frames a keepalive's reply as {"result": ...}; the message is its inside.
      {"/etcdserverpb.Lease/LeaseKeepAlive",
       "{\"result\":{" + h + R"(,"ID":"7587869066787431181","TTL":"30"}})",
       "108dc6a8c0ecd6e1a669181e"},
      // A lease not found: TTL -1, ten bytes.
      {"/etcdserverpb.Lease/LeaseTimeToLive",
       "{" + h + R"(,"ID":"7587869066787431181","TTL":"-1"})",
       "108dc6a8c0ecd6e1a66918ffffffffffffffffff01"},
      {"/etcdserverpb.Lease/LeaseTimeToLive",
       "{" + h +
           R"(,"ID":"7587869066787431181","TTL":"29","grantedTTL":"30","keys":["bG9ja3MvbXktbG9jaw==",""]})",
       "108dc6a8c0ecd6e1a669181d201e2a0d6c6f636b732f6d792d6c6f636b2a00"},
      {"/v3lockpb.Lock/Lock", "{" + h + R"(,"key":"bXktbG9jay82OTRkODZiNmM4MGEyMzBk"})",
       "12186d792d6c6f636b2f36393464383662366338306132333064"},
      {"/etcdserverpb.KV/DeleteRange",
       "{" + h +
           R"(,"deleted":"1","prev_kvs":[{"key":"YQ==","create_revision":"2","mod_revision":"3","version":"2","value":"Mg=="}]})",
       "10011a0c0a01611002180320022a0132"},
      {"/etcdserverpb.KV/Put",
       "{" + h +
           R"(,"prev_kv":{"key":"YQ==","create_revision":"2","mod_revision":"2","version":"1","value":"MQ=="}})",
       "120c0a01611002180220012a0131"},
      {"/etcdserverpb.Lease/LeaseRevoke", "{" + h + "}", ""},
      {"/v3lockpb.Lock/Unlock", "{" + h + "}", ""},
      // A lock txn that failed: the two ranges of the sim's Lock RPC, one empty.
      {"/etcdserverpb.KV/Txn",
       "{" + h + R"(,"responses":[{"response_range":{"header":{"revision":"5"},"kvs":[
         {"key":"bG9ja3MvbXktbG9jaw==","create_revision":"4","mod_revision":"4","version":"1","lease":"7587869066787431181"}],
         "count":"1"}},{"response_range":{"header":{"revision":"5"}}}]})",
       "1a290a270a021805121f0a0d6c6f636b732f6d792d6c6f636b100418042001308dc6a8c0ecd6e1a669200"
       "11a060a040a021805"},
  };
  for (const Fixture& f : fixtures) {
    INFO(f.grpc_path << " " << f.json);
    const EtcdMessage response = rpc(f.grpc_path).response;
    const std::string bytes = proto_encode(response, EtcdJson::parse(f.json));
    CHECK(hex(bytes) == header_hex + std::string(f.hex));
  }
  // 64-bit extremes and a string: uint64's top, int64's bottom, a negative ID, UTF-8.
  const char* extremes =
      R"({"header":{"cluster_id":"18446744073709551615","revision":"-9223372036854775808"},"ID":"-2","error":"lease h\u00e9"})";
  CHECK(hex(proto_encode(EtcdMessage::lease_grant_response, EtcdJson::parse(extremes))) ==
        "0a1608ffffffffffffffffff01188080808080808080800110feffffffffffffffff0122096c656173652068c3"
        "a9");
}

TEST_CASE("the encoder leaves out defaults but not a oneof member or a message present",
          "[proto]") {
  CHECK(proto_encode(EtcdMessage::lease_grant_request, {{"TTL", "0"}, {"ID", 0}}).empty());
  CHECK(proto_encode(EtcdMessage::put_request,
                     {{"key", ""}, {"prev_kv", false}, {"lease", nullptr}, {"value", "AA=="}}) ==
        unhex("120100"));
  // create_revision 0 is what etcd3's and etcd's lock compares say: it must reach the server.
  CHECK(hex(proto_encode(EtcdMessage::compare, {{"target", "CREATE"}, {"create_revision", "0"}})) ==
        "10012800");
  CHECK(hex(proto_encode(EtcdMessage::compare, {{"value", ""}})) == "3a00");
  CHECK(hex(proto_encode(EtcdMessage::request_op, {{"request_put", EtcdJson::object()}})) ==
        "1200");
  CHECK(hex(proto_encode(EtcdMessage::range_response, {{"header", EtcdJson::object()}})) == "0a00");
  CHECK(proto_encode(EtcdMessage::txn_request, {{"success", EtcdJson::array()}}).empty());
}

TEST_CASE("the encoder takes 64-bit integers and enums as numbers too, and ignores other fields",
          "[proto]") {
  // The sim's Lock RPC writes a range's limit as a number.
  CHECK(proto_encode(EtcdMessage::range_request, {{"key", "YQ=="}, {"limit", 1}}) ==
        proto_encode(EtcdMessage::range_request, {{"key", "YQ=="}, {"limit", "1"}}));
  CHECK(proto_encode(EtcdMessage::compare, {{"result", 3}, {"target", 4}}) ==
        proto_encode(EtcdMessage::compare, {{"result", "NOT_EQUAL"}, {"target", "LEASE"}}));
  // A negative enum is sign-extended, as protobuf writes an int32.
  CHECK(hex(proto_encode(EtcdMessage::compare, {{"result", -1}})) == "08ffffffffffffffffff01");
  CHECK(proto_encode(EtcdMessage::unlock_response,
                     {{"header", {{"revision", "3"}, {"leader", "x"}}}, {"extra", {1, 2}}}) ==
        unhex("0a021803"));
  // {"result": ...} alone is a stream's framing; beside other fields it is an unknown field.
  CHECK(proto_encode(EtcdMessage::lease_keep_alive_response,
                     {{"result", {{"ID", "1"}}}, {"ID", "2"}}) == unhex("1002"));
}

TEST_CASE("the encoder refuses JSON the gateway would not write", "[proto]") {
  CHECK_THROWS_AS(proto_encode(EtcdMessage::put_request, {{"key", "not base64"}}),
                  std::logic_error);
  CHECK_THROWS_AS(proto_encode(EtcdMessage::put_request, {{"lease", "ten"}}), std::logic_error);
  CHECK_THROWS_AS(proto_encode(EtcdMessage::put_request, {{"prev_kv", "true"}}), std::logic_error);
  CHECK_THROWS_AS(proto_encode(EtcdMessage::compare, {{"result", "EQUALS"}}), std::logic_error);
  CHECK_THROWS_AS(proto_encode(EtcdMessage::compare, {{"version", "1"}, {"lease", "2"}}),
                  std::logic_error);
  CHECK_THROWS_AS(proto_encode(EtcdMessage::response_header, {{"cluster_id", "-1"}}),
                  std::logic_error);
  CHECK_THROWS_AS(proto_encode(EtcdMessage::range_response, {{"kvs", EtcdJson::object()}}),
                  std::logic_error);
  CHECK_THROWS_AS(proto_encode(EtcdMessage::txn_request, EtcdJson::array()), std::logic_error);
  // Nesting past the decoder's bound is a bug in whatever wrote it.
  EtcdJson op = EtcdJson::object();
  for (int level = 0; level < kProtoDepthMax / 2; ++level)
    op = {{"request_txn", {{"failure", {op}}}}};
  CHECK_NOTHROW(proto_encode(EtcdMessage::request_op, op));
  op = {{"request_txn", {{"failure", {op}}}}};
  CHECK_THROWS_AS(proto_encode(EtcdMessage::request_op, op), std::logic_error);
}

TEST_CASE("every message kind comes back from its encoding unchanged", "[proto]") {
  const std::string h = kHeader;
  const std::string kv =
      R"({"key":"YQ==","create_revision":"2","mod_revision":"3","version":"-4","value":"Mg==","lease":"5"})";
  const std::string range =
      R"({"key":"YQ==","range_end":"AA==","limit":"1","revision":"7","sort_order":"ASCEND",
          "sort_target":"VALUE","serializable":true,"keys_only":true,"count_only":true,
          "min_mod_revision":"1","max_mod_revision":"2","min_create_revision":"3",
          "max_create_revision":"9223372036854775807"})";
  const std::string put =
      R"({"key":"YQ==","value":"/w==","lease":"-7","prev_kv":true,"ignore_value":true,"ignore_lease":true})";
  const std::string del = R"({"key":"YQ==","range_end":"Yg==","prev_kv":true})";
  const std::string range_response =
      "{" + h + R"(,"kvs":[)" + kv + "," + kv + R"(],"more":true,"count":"2"})";
  const std::string put_response = "{" + h + R"(,"prev_kv":)" + kv + "}";
  const std::string del_response = "{" + h + R"(,"deleted":"2","prev_kvs":[)" + kv + "]}";
  const std::string compare =
      R"({"result":"GREATER","target":"MOD","key":"YQ==","mod_revision":"0","range_end":"Yg=="})";
  const std::string txn =
      R"({"compare":[)" + compare +
      R"(,{"target":"LEASE","lease":"3"},{"version":"1"},{"create_revision":"2"},{"value":""}],
      "success":[{"request_range":)" +
      range + R"(},{"request_put":)" + put + R"(},{"request_delete_range":)" + del +
      R"(}],"failure":[{"request_txn":{"compare":[{"key":"YQ=="}]}}]})";
  const std::string txn_response =
      "{" + h + R"(,"succeeded":true,"responses":[{"response_range":)" + range_response +
      R"(},{"response_put":)" + put_response + R"(},{"response_delete_range":)" + del_response +
      R"(},{"response_txn":{"succeeded":true}}]})";
  const std::pair<EtcdMessage, std::string> samples[] = {
      {EtcdMessage::response_header,
       R"({"cluster_id":"18446744073709551615","member_id":"1","revision":"-1","raft_term":"3"})"},
      {EtcdMessage::key_value, kv},
      {EtcdMessage::range_request, range},
      {EtcdMessage::range_response, range_response},
      {EtcdMessage::put_request, put},
      {EtcdMessage::put_response, put_response},
      {EtcdMessage::delete_range_request, del},
      {EtcdMessage::delete_range_response, del_response},
      {EtcdMessage::compare, compare},
      {EtcdMessage::request_op, R"({"request_txn":{}})"},
      {EtcdMessage::response_op, R"({"response_delete_range":{"deleted":"1"}})"},
      {EtcdMessage::txn_request, txn},
      {EtcdMessage::txn_response, txn_response},
      {EtcdMessage::lease_grant_request, R"({"TTL":"30","ID":"-3"})"},
      {EtcdMessage::lease_grant_response, "{" + h + R"(,"ID":"1","TTL":"2","error":"x"})"},
      {EtcdMessage::lease_revoke_request, R"({"ID":"1"})"},
      {EtcdMessage::lease_revoke_response, "{" + h + "}"},
      {EtcdMessage::lease_keep_alive_request, R"({"ID":"1"})"},
      {EtcdMessage::lease_keep_alive_response, "{" + h + R"(,"ID":"1","TTL":"2"})"},
      {EtcdMessage::lease_time_to_live_request, R"({"ID":"1","keys":true})"},
      {EtcdMessage::lease_time_to_live_response,
       "{" + h + R"(,"ID":"1","TTL":"-1","grantedTTL":"60","keys":["YQ==","","Yg=="]})"},
      {EtcdMessage::lock_request, R"({"name":"bA==","lease":"1"})"},
      {EtcdMessage::lock_response, "{" + h + R"(,"key":"bC8x"})"},
      {EtcdMessage::unlock_request, R"({"key":"bC8x"})"},
      {EtcdMessage::unlock_response, "{" + h + "}"},
  };
  for (const auto& [message, text] : samples) {
    INFO(to_string(message) << " " << text);
    const EtcdJson json = EtcdJson::parse(text);
    const std::string bytes = proto_encode(message, json);
    CHECK(decoded(message, bytes) == json);
    CHECK(proto_encode(message, decoded(message, bytes)) == bytes);  // deterministic
  }
  CHECK(decoded(EtcdMessage::txn_request, "") == EtcdJson::object());
}

TEST_CASE("malformed bytes are errors that say why", "[proto]") {
  using Catch::Matchers::Contains;
  const EtcdMessage range = EtcdMessage::range_request;
  CHECK_THAT(decode_error(range, unhex("1880")), Contains("truncated varint of field limit"));
  CHECK_THAT(decode_error(range, unhex("80")), Contains("truncated tag"));
  CHECK_THAT(decode_error(range, unhex("18ffffffffffffffffffff01")),
             Contains("varint of field limit overflows 64 bits"));
  CHECK_THAT(decode_error(range, unhex("0a0561")),
             Contains("length 5 of field key runs past the end (1 bytes left)"));
  CHECK_THAT(decode_error(range, unhex("0a")), Contains("truncated length of field key"));
  CHECK_THAT(decode_error(range, unhex("0801")),
             Contains("wire type 0 for field key, which has wire type 2"));
  CHECK_THAT(decode_error(range, unhex("1a0161")),
             Contains("wire type 2 for field limit, which has wire type 0"));
  CHECK_THAT(decode_error(range, unhex("0001")), Contains("invalid field number 0"));
  CHECK_THAT(decode_error(range, unhex("ff0701")), Contains("invalid wire type 7 of field 127"));
  CHECK_THAT(decode_error(range, unhex("fc07")), Contains("end of group 127 that did not start"));
  CHECK_THAT(decode_error(range, unhex("fb07")), Contains("group 127 has no end"));
  CHECK_THAT(decode_error(range, unhex("fd0701")), Contains("truncated fixed32 of field 127"));
  CHECK_THAT(decode_error(range, unhex("f907010203")), Contains("truncated fixed64 of field 127"));
  // Where in the message: the path of fields down to the fault.
  CHECK(decode_error(EtcdMessage::txn_request, unhex("12030a0118")) ==
        "etcdserverpb.TxnRequest: success: etcdserverpb.RequestOp: request_range: "
        "etcdserverpb.RangeRequest: truncated varint of field limit");
  CHECK_THAT(decode_error(EtcdMessage::lease_grant_response, unhex("2201ff")),
             Contains("field error is not UTF-8"));
}

TEST_CASE("nesting deeper than the bound is an error, not a deep recursion", "[proto]") {
  // A request op whose txn's failure op is a txn whose failure op...: `wraps` messages around an
  // empty one, which is that deep.
  const auto chain = [](int wraps) {
    std::string bytes;
    for (int i = 1; i <= wraps; ++i) {
      std::string length;  // a varint: the chain outgrows one byte
      for (size_t n = bytes.size(); length.empty() || n > 0; n >>= 7)
        length += static_cast<char>((n & 0x7f) | (n >= 0x80 ? 0x80 : 0));
      const char* tag = (wraps - i) % 2 == 0 ? "\x22" : "\x1a";  // request_txn, failure
      bytes = tag + length + bytes;
    }
    return bytes;
  };
  CHECK(proto_decode(EtcdMessage::request_op, chain(kProtoDepthMax)).ok());
  const std::string error = proto_decode(EtcdMessage::request_op, chain(kProtoDepthMax + 1)).error;
  CHECK_THAT(error, Catch::Matchers::StartsWith("etcdserverpb.RequestOp: request_txn: "
                                                "etcdserverpb.TxnRequest: failure: "));
  CHECK_THAT(error, Catch::Matchers::EndsWith(
                        "request_txn: etcdserverpb.TxnRequest: messages nested deeper than 32"));
  // Unknown groups nest too, under the same bound.
  std::string groups;
  for (int i = 0; i < 40; ++i) groups += "\xfb\x07";
  CHECK_THAT(proto_decode(EtcdMessage::range_request, groups).error,
             Catch::Matchers::Contains("groups nested deeper than 32"));
}

TEST_CASE("decoding reads as etcd's unmarshalers: unknown fields skipped, the last value kept",
          "[proto]") {
  // Field 127 as a varint, a fixed64, bytes, a group holding a varint, a fixed32; then the key.
  const std::string unknown =
      "f80701"
      "f9070102030405060708"
      "fa0703616263"
      "fb070801fc07"
      "fd0701020304"
      "0a0161";
  CHECK(decoded(EtcdMessage::range_request, unhex(unknown)) == EtcdJson({{"key", "YQ=="}}));
  // A scalar twice: the last; at its default: gone.
  CHECK(decoded(EtcdMessage::range_request, unhex("18011802")) == EtcdJson({{"limit", "2"}}));
  CHECK(decoded(EtcdMessage::range_request, unhex("18011800")) == EtcdJson::object());
  // A message field twice merges; a oneof keeps its last member.
  CHECK(decoded(EtcdMessage::range_response, unhex("0a0218030a022005")) ==
        EtcdJson::parse(R"({"header":{"revision":"3","raft_term":"5"}})"));
  CHECK(decoded(EtcdMessage::compare, unhex("200128023a00")) == EtcdJson({{"value", ""}}));
  CHECK(decoded(EtcdMessage::request_op, unhex("12000a00")) ==
        EtcdJson::parse(R"({"request_range":{}})"));
  // A oneof's message member twice: the second replaces the first (gogo's, unlike a field's).
  CHECK(decoded(EtcdMessage::request_op, unhex("0a0218010a024001")) ==
        EtcdJson::parse(R"({"request_range":{"keys_only":true}})"));
  // An enum value the enum does not name stays a number, as jsonpb writes it, and re-encodes.
  const EtcdJson unnamed = decoded(EtcdMessage::compare, unhex("0809"));
  CHECK(unnamed == EtcdJson({{"result", 9}}));
  CHECK(proto_encode(EtcdMessage::compare, unnamed) == unhex("0809"));
  // A bool is any nonzero varint.
  CHECK(decoded(EtcdMessage::put_request, unhex("2002")) == EtcdJson({{"prev_kv", true}}));
}

TEST_CASE("the front's RPCs: their paths, messages and streams", "[proto]") {
  CHECK(rpc("/etcdserverpb.KV/Range").gateway_path == "/v3/kv/range");
  CHECK(rpc("/etcdserverpb.KV/Put").response == EtcdMessage::put_response);
  CHECK(rpc("/etcdserverpb.KV/DeleteRange").gateway_path == "/v3/kv/deleterange");
  CHECK(rpc("/etcdserverpb.KV/Txn").request == EtcdMessage::txn_request);
  CHECK(rpc("/etcdserverpb.Lease/LeaseGrant").gateway_path == "/v3/lease/grant");
  CHECK(rpc("/etcdserverpb.Lease/LeaseRevoke").gateway_path == "/v3/lease/revoke");
  CHECK(rpc("/etcdserverpb.Lease/LeaseTimeToLive").gateway_path == "/v3/lease/timetolive");
  const EtcdRpc& keepalive = rpc("/etcdserverpb.Lease/LeaseKeepAlive");
  CHECK(keepalive.gateway_path == "/v3/lease/keepalive");
  CHECK((keepalive.client_streams && keepalive.server_streams));
  CHECK(rpc("/v3lockpb.Lock/Lock").response == EtcdMessage::lock_response);
  CHECK(rpc("/v3lockpb.Lock/Unlock").gateway_path == "/v3/lock/unlock");
  CHECK_FALSE(rpc("/etcdserverpb.KV/Txn").server_streams);
  CHECK(find_etcd_rpc("/etcdserverpb.Watch/Watch") == nullptr);
  CHECK(find_etcd_rpc("/etcdserverpb.KV/txn") == nullptr);
  CHECK(find_etcd_rpc("") == nullptr);
  CHECK(to_string(EtcdMessage::key_value) == "mvccpb.KeyValue");
  CHECK(to_string(EtcdMessage::unlock_request) == "v3lockpb.UnlockRequest");
}

}  // namespace
}  // namespace lockstep::sim::etcd
