// The simulated member's gRPC front (etcd_grpc_front.h) driven over a byte stream as etcd3's
// grpc-js drives a real etcd 3.4: the HTTP/2 connection (SETTINGS, PING, flow control, GOAWAY),
// unary and client-streaming calls, gRPC statuses from the cluster's refusals, and Lock RPCs
// cancelled by the client's RST_STREAM or its connection's end. The client's bytes are built
// here from the codecs' encoders; what comes back is cut into frames and calls by a small reader
// of the server's side (which, unlike Http2FrameReader's, has no preface).
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "services/etcd/client/etcd_json.h"
#include "services/etcd/sim/etcd_cluster.h"
#include "services/etcd/sim/etcd_grpc_front.h"
#include "services/etcd/sim/etcd_proto.h"
#include "services/etcd/sim/hpack.h"
#include "services/etcd/sim/http2_frames.h"
#include "services/etcd/tests/proto_support.h"
#include "sim/byte_stream.h"
#include "sim/world.h"

namespace lockstep::sim::etcd::grpc_front_test {
namespace {

using testing::decoded;

using h2::FrameType;

constexpr std::string_view kGrant = "/etcdserverpb.Lease/LeaseGrant";
constexpr std::string_view kRevoke = "/etcdserverpb.Lease/LeaseRevoke";
constexpr std::string_view kKeepAlive = "/etcdserverpb.Lease/LeaseKeepAlive";
constexpr std::string_view kTxn = "/etcdserverpb.KV/Txn";
constexpr std::string_view kPut = "/etcdserverpb.KV/Put";
constexpr std::string_view kRange = "/etcdserverpb.KV/Range";
constexpr std::string_view kLock = "/v3lockpb.Lock/Lock";

std::string b64(const std::string& text) { return lockstep::etcd::base64_encode(text); }

const EtcdRpc& rpc_at(std::string_view path) {
  const EtcdRpc* rpc = find_etcd_rpc(path);
  INFO(path);
  REQUIRE(rpc != nullptr);
  return *rpc;
}

// ---- what the client sends ----

std::string client_preface(const std::vector<std::pair<uint16_t, uint32_t>>& settings = {}) {
  return std::string(h2::kClientPreface) + h2::encode_settings(settings);
}

std::string call_headers(uint32_t stream, std::string_view path, bool end_stream = false) {
  const std::string block = h2::hpack_encode({{":method", "POST"},
                                              {":scheme", "http"},
                                              {":path", std::string(path)},
                                              {":authority", "127.0.0.1:1"},
                                              {"content-type", "application/grpc"},
                                              {"te", "trailers"}});
  const uint8_t flags = h2::kEndHeaders | (end_stream ? h2::kEndStream : 0);
  return h2::encode_frame(FrameType::headers, flags, stream, block);
}

// A gRPC message: uncompressed, its 32-bit length, the protobuf bytes.
std::string grpc_message(EtcdMessage type, const EtcdJson& json) {
  const std::string body = proto_encode(type, json);
  const auto length = static_cast<uint32_t>(body.size());
  std::string out(1, '\0');
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((length >> shift) & 0xff));
  }
  return out + body;
}

// DATA frames carrying bytes, cut at the default maximum frame size; END_STREAM on the last one
// if the client ends its side with them.
std::string data_frames(uint32_t stream, std::string_view bytes, bool end_stream) {
  std::string out;
  size_t at = 0;
  do {
    const std::string_view piece = bytes.substr(at, h2::kDefaultMaxFrameSize);
    at += piece.size();
    const uint8_t flags = at >= bytes.size() && end_stream ? h2::kEndStream : 0;
    out += h2::encode_frame(FrameType::data, flags, stream, piece);
  } while (at < bytes.size());
  return out;
}

// One request message of the RPC at path, as DATA.
std::string request_data(uint32_t stream, std::string_view path, const EtcdJson& request,
                         bool end_stream) {
  return data_frames(stream, grpc_message(rpc_at(path).request, request), end_stream);
}

// A unary call as grpc-js sends it: HEADERS, then the one message with END_STREAM.
std::string unary_call(uint32_t stream, std::string_view path, const EtcdJson& request) {
  return call_headers(stream, path) + request_data(stream, path, request, true);
}

// ---- what the client reads ----

struct ServerFrame {
  uint8_t type = 0;
  uint8_t flags = 0;
  uint32_t stream = 0;
  std::string payload;
};

// One call (stream) as the client saw it.
struct SeenCall {
  std::vector<std::string> kinds;    // "headers", "data", "trailers", "rst": in order
  std::vector<h2::Header> headers;   // the response headers (none: trailers only)
  std::vector<h2::Header> trailers;  // none until they came
  bool trailers_only = false;
  std::vector<std::string> messages;  // whole gRPC messages' protobuf bytes
  std::string partial;                // DATA not yet a whole message
  bool compressed = false;            // a message flagged compressed (never, from this front)
  size_t data_bytes = 0;              // DATA payload bytes
};

struct Seen {
  std::vector<ServerFrame> frames;
  std::map<uint32_t, SeenCall> calls;
  std::string rest;  // bytes after the last whole frame
  std::string hpack_error;

  std::vector<ServerFrame> of_type(FrameType type) const {
    std::vector<ServerFrame> out;
    for (const ServerFrame& f : frames) {
      if (f.type == static_cast<uint8_t>(type)) out.push_back(f);
    }
    return out;
  }
  // The sum of WINDOW_UPDATE increments the server granted on `stream` (0: the connection).
  int64_t granted(uint32_t stream) const {
    int64_t sum = 0;
    for (const ServerFrame& f : of_type(FrameType::window_update)) {
      if (f.stream == stream && f.payload.size() == 4) sum += h2::read_u32(f.payload, 0);
    }
    return sum;
  }
  size_t data_bytes() const {
    size_t sum = 0;
    for (const ServerFrame& f : of_type(FrameType::data)) sum += f.payload.size();
    return sum;
  }
  const SeenCall& call(uint32_t stream) const {
    static const SeenCall kNone;
    const auto it = calls.find(stream);
    return it == calls.end() ? kNone : it->second;
  }
};

std::optional<std::string> header_value(const std::vector<h2::Header>& headers,
                                        std::string_view name) {
  for (const auto& [header, value] : headers) {
    if (header == name) return value;
  }
  return std::nullopt;
}

// The server's bytes cut into frames (9-byte header, no preface), header blocks decoded in order
// by one HPACK decoder, DATA cut into gRPC messages per stream.
Seen parse_server(std::string_view bytes) {
  Seen seen;
  h2::HpackDecoder decoder;
  size_t at = 0;
  while (bytes.size() - at >= 9) {
    const auto byte = [&](size_t i) {
      return static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + i]));
    };
    const uint32_t length = (byte(0) << 16) | (byte(1) << 8) | byte(2);
    if (bytes.size() - at - 9 < length) break;
    ServerFrame frame{.type = static_cast<uint8_t>(byte(3)),
                      .flags = static_cast<uint8_t>(byte(4)),
                      .stream = h2::read_u32(bytes, at + 5) & 0x7fff'ffffU,
                      .payload = std::string(bytes.substr(at + 9, length))};
    at += 9 + length;
    if (frame.type == static_cast<uint8_t>(FrameType::headers)) {
      SeenCall& call = seen.calls[frame.stream];
      CHECK((frame.flags & h2::kEndHeaders) != 0);  // the front's blocks fit one frame
      CHECK((frame.flags & (h2::kPadded | h2::kPriority)) == 0);
      std::optional<std::vector<h2::Header>> headers = decoder.decode(frame.payload);
      if (!headers) {
        seen.hpack_error = decoder.error();
      } else if ((frame.flags & h2::kEndStream) != 0) {
        call.trailers_only = call.kinds.empty();
        call.trailers = std::move(*headers);
        call.kinds.emplace_back("trailers");
      } else {
        call.headers = std::move(*headers);
        call.kinds.emplace_back("headers");
      }
    } else if (frame.type == static_cast<uint8_t>(FrameType::data)) {
      SeenCall& call = seen.calls[frame.stream];
      call.kinds.emplace_back("data");
      call.data_bytes += frame.payload.size();
      call.partial += frame.payload;
      while (call.partial.size() >= 5) {
        const uint32_t n = h2::read_u32(call.partial, 1);
        if (call.partial.size() < 5 + n) break;
        call.compressed = call.compressed || call.partial[0] != '\0';
        call.messages.push_back(call.partial.substr(5, n));
        call.partial.erase(0, 5 + n);
      }
    } else if (frame.type == static_cast<uint8_t>(FrameType::rst_stream)) {
      seen.calls[frame.stream].kinds.emplace_back("rst");
    }
    seen.frames.push_back(std::move(frame));
  }
  seen.rest = std::string(bytes.substr(at));
  return seen;
}

// A call answered 200 with one message and OK: that message, decoded.
EtcdJson answered_ok(const Seen& seen, uint32_t stream, std::string_view path) {
  const SeenCall& call = seen.call(stream);
  INFO("stream " << stream << " " << path);
  CHECK(seen.hpack_error.empty());
  // HEADERS, the message's DATA (one frame unless it is above the maximum frame size), trailers.
  REQUIRE(call.kinds.size() >= 3);
  CHECK(call.kinds.front() == "headers");
  CHECK(call.kinds.back() == "trailers");
  for (size_t i = 1; i + 1 < call.kinds.size(); ++i) CHECK(call.kinds[i] == "data");
  CHECK((call.kinds.size() == 3 || call.data_bytes > h2::kDefaultMaxFrameSize));
  CHECK(header_value(call.headers, ":status") == "200");
  CHECK(header_value(call.headers, "content-type") == "application/grpc");
  CHECK(header_value(call.trailers, "grpc-status") == "0");
  CHECK_FALSE(header_value(call.trailers, "grpc-message").has_value());
  CHECK(call.partial.empty());
  CHECK_FALSE(call.compressed);
  REQUIRE(call.messages.size() == 1);
  return decoded(rpc_at(path).response, call.messages[0]);
}

// A call refused before any message: HEADERS with END_STREAM alone, carrying the status.
void check_trailers_only(const Seen& seen, uint32_t stream, const std::string& status,
                         const std::optional<std::string>& message) {
  const SeenCall& call = seen.call(stream);
  INFO("stream " << stream);
  CHECK(call.kinds == std::vector<std::string>{"trailers"});
  CHECK(call.trailers_only);
  CHECK(call.data_bytes == 0);
  CHECK(header_value(call.trailers, ":status") == "200");
  CHECK(header_value(call.trailers, "content-type") == "application/grpc");
  CHECK(header_value(call.trailers, "grpc-status") == status);
  if (message) CHECK(header_value(call.trailers, "grpc-message") == *message);
}

WorldOptions front_world(uint64_t seed = 1) {
  return {.seed = seed, .network = {.latency_us_min = 100, .latency_us_max = 100}};
}

// A 3-member cluster (member 0 leads) on a network of fixed 100 us latency.
struct Fixture {
  explicit Fixture(uint64_t seed = 1) : world(front_world(seed)), cluster(world, {.members = 3}) {}
  void at(TimeUs t_us, std::function<void()> fn) { world.scheduler().at(t_us, std::move(fn)); }
  World world;
  EtcdCluster cluster;
};

// One client connection to a member's gRPC front: what it read, and when it heard the end.
struct GrpcClient {
  std::string bytes;
  std::optional<TimeUs> ended_at_us;
  size_t bytes_at_end = 0;  // what it had read when it heard the end
  std::unique_ptr<SimByteStream> stream;

  GrpcClient(Fixture& f, uint64_t conn, const std::string& name, int client, int member = 0) {
    const NodeId node = f.world.add_node(name);
    const NodeId kernel = f.world.add_node(name + "-host");
    World& w = f.world;
    stream = std::make_unique<SimByteStream>(
        w, ByteStreamOptions{.client_node = node, .kernel_node = kernel, .name = name},
        std::make_unique<EtcdGrpcFront>(
            w, f.cluster,
            EtcdGrpcFrontOptions{
                .member = member, .client = client, .conn = conn, .stream_name = name}),
        [this](std::string b) { bytes += b; },
        [this, &w] {
          ended_at_us = w.now_us();
          bytes_at_end = bytes.size();
        });
  }
  void write(std::string b) { stream->write(std::move(b)); }
  Seen seen() const { return parse_server(bytes); }
};

// The lease a LeaseGrant on `stream` answered, as the gateway spells it (a decimal string).
std::string granted_lease(const GrpcClient& c, uint32_t stream) {
  const EtcdJson grant = answered_ok(c.seen(), stream, kGrant);
  REQUIRE(grant.contains("ID"));
  return grant["ID"].get<std::string>();
}

// etcd3's Lock.acquire: create the key with the lease unless it exists.
EtcdJson acquire_txn(const std::string& key, const std::string& lease) {
  return {
      {"compare",
       {{{"key", b64(key)}, {"target", "CREATE"}, {"result", "EQUAL"}, {"create_revision", "0"}}}},
      {"success", {{{"request_put", {{"key", b64(key)}, {"lease", lease}}}}}}};
}

TEST_CASE(
    "a lease grant and etcd3's lock txn are answered as unary gRPC calls, and only the first txn "
    "succeeds",
    "[etcd][sim][grpc]") {
  Fixture f;
  GrpcClient a(f, 1, "a", 0);
  GrpcClient b(f, 2, "b", 1);
  std::string lease;
  f.at(0, [&] { a.write(client_preface() + unary_call(1, kGrant, {{"TTL", "5"}})); });
  f.at(10'000, [&] {
    lease = granted_lease(a, 1);
    a.write(unary_call(3, kTxn, acquire_txn("lockstep/k/etcd3", lease)));
  });
  f.at(20'000, [&] { a.write(unary_call(5, kTxn, acquire_txn("lockstep/k/etcd3", lease))); });
  // Another connection's try, after its own handshake.
  f.at(30'000, [&] {
    b.write(client_preface() + unary_call(1, kTxn, acquire_txn("lockstep/k/etcd3", lease)));
  });
  f.world.run();

  const Seen seen = a.seen();
  CHECK(seen.rest.empty());
  REQUIRE(seen.frames.size() >= 2);
  // The server's SETTINGS (empty: the defaults), then the ACK of the client's.
  CHECK(seen.frames[0].type == static_cast<uint8_t>(FrameType::settings));
  CHECK(seen.frames[0].flags == 0);
  CHECK(seen.frames[0].stream == 0);
  CHECK(seen.frames[0].payload.empty());
  CHECK(seen.frames[1].type == static_cast<uint8_t>(FrameType::settings));
  CHECK(seen.frames[1].flags == h2::kAck);
  CHECK(seen.of_type(FrameType::settings).size() == 2);

  const EtcdJson grant = answered_ok(seen, 1, kGrant);
  CHECK(grant["TTL"] == "5");
  CHECK(grant["ID"] == lease);
  CHECK(grant.contains("header"));
  CHECK(answered_ok(seen, 3, kTxn).value("succeeded", false));
  CHECK_FALSE(answered_ok(seen, 5, kTxn).value("succeeded", false));
  CHECK_FALSE(answered_ok(b.seen(), 1, kTxn).value("succeeded", false));

  // Every byte of the client's DATA was granted back on the connection.
  const size_t client_data =
      request_data(1, kGrant, {{"TTL", "5"}}, true).size() - 9 +
      2 * (request_data(3, kTxn, acquire_txn("lockstep/k/etcd3", lease), true).size() - 9);
  CHECK(seen.granted(0) == static_cast<int64_t>(client_data));
  CHECK(seen.of_type(FrameType::window_update).size() >= 3);

  for (int m = 0; m < 3; ++m) {
    INFO("member " << m);
    const auto& keys = f.cluster.store(m).keys();
    REQUIRE(keys.count("lockstep/k/etcd3") == 1);
    CHECK(std::to_string(keys.at("lockstep/k/etcd3").lease) == lease);
    CHECK(keys.at("lockstep/k/etcd3").create_revision == keys.at("lockstep/k/etcd3").mod_revision);
  }
  CHECK_FALSE(a.ended_at_us.has_value());
  CHECK(f.world.trace().contains("stream a at etcd-0: call 3 /etcdserverpb.KV/Txn"));
}

TEST_CASE(
    "a LeaseKeepAlive stream answers each message as it comes and ends OK when the client ends its "
    "side",
    "[etcd][sim][grpc]") {
  Fixture f;
  GrpcClient a(f, 1, "a", 0);
  std::string lease;
  std::string before_end;
  f.at(0, [&] { a.write(client_preface() + unary_call(1, kGrant, {{"TTL", "5"}})); });
  f.at(10'000, [&] {
    lease = granted_lease(a, 1);
    a.write(call_headers(3, kKeepAlive) + request_data(3, kKeepAlive, {{"ID", lease}}, false));
  });
  f.at(20'000, [&] { a.write(request_data(3, kKeepAlive, {{"ID", lease}}, false)); });
  f.at(30'000, [&] { before_end = a.bytes; });
  f.at(40'000, [&] { a.write(h2::encode_frame(FrameType::data, h2::kEndStream, 3, "")); });
  f.world.run();

  const Seen early = parse_server(before_end);
  const SeenCall& open = early.call(3);
  CHECK(open.kinds == std::vector<std::string>{"headers", "data", "data"});
  CHECK(open.trailers.empty());
  REQUIRE(open.messages.size() == 2);
  for (const std::string& message : open.messages) {
    const EtcdJson reply = decoded(EtcdMessage::lease_keep_alive_response, message);
    CHECK(reply["ID"] == lease);
    CHECK(reply["TTL"] == "5");
    CHECK(reply.contains("header"));
  }
  // DATA on a stream the client keeps open is granted back on that stream too.
  const int64_t message_bytes =
      static_cast<int64_t>(request_data(3, kKeepAlive, {{"ID", lease}}, false).size()) - 9;
  CHECK(early.granted(3) == 2 * message_bytes);

  const Seen seen = a.seen();
  const SeenCall& call = seen.call(3);
  CHECK(call.kinds == std::vector<std::string>{"headers", "data", "data", "trailers"});
  CHECK(call.messages.size() == 2);
  CHECK(header_value(call.trailers, "grpc-status") == "0");
  CHECK(f.cluster.store(0).lease(std::stoll(lease)) != nullptr);
}

// A LeaseKeepAlive call whose one message comes with the client's END_STREAM, on `member`'s
// front. etcd's leaseKeepAlive loop renews and sends each message's reply before it reads the
// next (here the client's end): a reply is never cut off by the OK.
void keepalive_with_end(int member) {
  Fixture f;
  GrpcClient a(f, 1, "a", 0, member);
  std::string lease;
  f.at(0, [&] { a.write(client_preface() + unary_call(1, kGrant, {{"TTL", "5"}})); });
  f.at(20'000, [&] {
    lease = granted_lease(a, 1);
    a.write(call_headers(3, kKeepAlive) + request_data(3, kKeepAlive, {{"ID", lease}}, true));
  });
  f.world.run();
  const Seen seen = a.seen();
  const SeenCall& call = seen.call(3);
  CHECK(call.kinds == std::vector<std::string>{"headers", "data", "trailers"});
  REQUIRE(call.messages.size() == 1);
  CHECK(decoded(EtcdMessage::lease_keep_alive_response, call.messages[0])["TTL"] == "5");
  CHECK(header_value(call.trailers, "grpc-status") == "0");
}

TEST_CASE("a LeaseKeepAlive message sent with the client's end is answered before the OK",
          "[etcd][sim][grpc]") {
  keepalive_with_end(0);  // the leader renews at once
}

// Through a follower the renewal is answered later (a round trip to the leader). The front once
// finished the call OK as soon as the client ended its side: the trailers went first and the
// reply was dropped.
TEST_CASE(
    "a LeaseKeepAlive message sent with the client's end is answered before the OK, through a "
    "follower",
    "[etcd][sim][grpc]") {
  keepalive_with_end(1);
}

TEST_CASE(
    "an RPC the front does not serve is answered trailers-only with UNIMPLEMENTED, and the "
    "connection goes on",
    "[etcd][sim][grpc]") {
  Fixture f;
  GrpcClient a(f, 1, "a", 0);
  f.at(0, [&] {
    a.write(client_preface() + call_headers(1, "/etcdserverpb.Watch/Watch") +
            request_data(1, kRange, {{"key", b64("k")}}, true) +
            call_headers(3, "/nope/Nope", true) + unary_call(5, kRange, {{"key", b64("k")}}));
  });
  f.world.run();
  const Seen seen = a.seen();
  check_trailers_only(seen, 1, "12", std::nullopt);
  CHECK(header_value(seen.call(1).trailers, "grpc-message").value_or("").find("Watch") !=
        std::string::npos);
  check_trailers_only(seen, 3, "12", std::nullopt);
  CHECK(answered_ok(seen, 5, kRange).value("count", "0") == "0");
  CHECK(seen.of_type(FrameType::goaway).empty());
  CHECK_FALSE(a.ended_at_us.has_value());
}

TEST_CASE("the cluster's refusals become the gRPC status and message etcd gives, trailers-only",
          "[etcd][sim][grpc]") {
  Fixture f;
  GrpcClient a(f, 1, "a", 0);
  f.at(0, [&] {
    a.write(client_preface() + unary_call(1, kRevoke, {{"ID", "12345"}}) +  // refused once applied
            unary_call(3, kPut, {{"value", b64("v")}}) +                    // refused before Raft
            unary_call(5, kPut, {{"key", b64("k")}, {"lease", "777"}}));
  });
  f.world.run();
  const Seen seen = a.seen();
  check_trailers_only(seen, 1, "5", std::string("etcdserver: requested lease not found"));
  check_trailers_only(seen, 3, "3", std::string("etcdserver: key is not provided"));
  check_trailers_only(seen, 5, "5", std::string("etcdserver: requested lease not found"));
  CHECK(f.cluster.store(0).keys().empty());
}

// Two connections to member 0: A holds the lock L, B's Lock RPC waits behind it until `cancel`
// (B's RST_STREAM or its connection's end) at 60 ms.
void lock_waiter_cancelled(const std::function<void(GrpcClient&)>& cancel,
                           const std::string& trace_expected) {
  Fixture f;
  GrpcClient a(f, 1, "a", 0);
  GrpcClient b(f, 2, "b", 1);
  std::string a_lease;
  std::string b_lease;
  bool b_waited = false;
  std::string b_before_cancel;
  f.at(0, [&] {
    a.write(client_preface() + unary_call(1, kGrant, {{"TTL", "10"}}));
    b.write(client_preface() + unary_call(1, kGrant, {{"TTL", "10"}}));
  });
  f.at(10'000, [&] {
    a_lease = granted_lease(a, 1);
    a.write(unary_call(3, kLock, {{"name", b64("L")}, {"lease", a_lease}}));
  });
  f.at(20'000, [&] {
    b_lease = granted_lease(b, 1);
    b.write(unary_call(3, kLock, {{"name", b64("L")}, {"lease", b_lease}}));
  });
  f.at(50'000, [&] {
    const auto& keys = f.cluster.store(0).keys();
    b_waited = keys.count(lockstep::etcd::lock_key("L", std::stoll(b_lease))) == 1;
    b_before_cancel = b.bytes;
  });
  f.at(60'000, [&] { cancel(b); });
  f.world.run();

  const std::string a_key = lockstep::etcd::lock_key("L", std::stoll(a_lease));
  const std::string b_key = lockstep::etcd::lock_key("L", std::stoll(b_lease));
  const EtcdJson held = answered_ok(a.seen(), 3, kLock);
  CHECK(held["key"] == b64(a_key));
  CHECK(b_waited);  // B's key was in the queue, and B not answered
  CHECK(parse_server(b_before_cancel).call(3).kinds.empty());
  CHECK(b.seen().call(3).kinds.empty());  // nothing of the cancelled call afterwards
  for (int m = 0; m < 3; ++m) {
    INFO("member " << m);
    const auto& keys = f.cluster.store(m).keys();
    CHECK(keys.count(a_key) == 1);
    CHECK(keys.count(b_key) == 0);  // the cancelled call deleted its key
  }
  CHECK(f.world.trace().contains(trace_expected));
}

TEST_CASE("a Lock RPC waiting in the queue and cancelled by RST_STREAM deletes its key",
          "[etcd][sim][grpc]") {
  lock_waiter_cancelled([](GrpcClient& b) { b.write(h2::encode_rst_stream(3, 0x8)); },
                        "stream b at etcd-0: call 3 /v3lockpb.Lock/Lock");
}

TEST_CASE("a Lock RPC waiting in the queue is cancelled by the client's FIN, and deletes its key",
          "[etcd][sim][grpc]") {
  lock_waiter_cancelled([](GrpcClient& b) { b.stream->close(); },
                        "stream b at etcd-0: the client's FIN: 1 call(s) cancelled");
}

TEST_CASE("a PING is answered with a PING ACK of the same 8 bytes, and an ACK is not answered",
          "[etcd][sim][grpc]") {
  Fixture f;
  GrpcClient a(f, 1, "a", 0);
  f.at(0, [&] {
    a.write(client_preface() + h2::encode_frame(FrameType::ping, 0, 0, "lockstep") +
            h2::encode_frame(FrameType::ping, h2::kAck, 0, "ackedack"));
  });
  f.world.run();
  const std::vector<ServerFrame> pings = a.seen().of_type(FrameType::ping);
  REQUIRE(pings.size() == 1);
  CHECK(pings[0].flags == h2::kAck);
  CHECK(pings[0].stream == 0);
  CHECK(pings[0].payload == "lockstep");
}

TEST_CASE("a connection that does not start with HTTP/2's preface is refused: nothing on it runs",
          "[etcd][sim][grpc]") {
  Fixture f;
  GrpcClient a(f, 1, "a", 0);
  f.at(0, [&] {
    a.write("GET /v3/kv/range HTTP/1.1\r\nHost: etcd\r\n\r\n" + h2::encode_settings({}) +
            unary_call(1, kPut, {{"key", b64("k")}}));
  });
  f.world.run();
  CHECK(f.world.trace().contains(
      "stream a at etcd-0: HTTP/2 broken: the connection did not start with HTTP/2's client "
      "preface"));
  CHECK(f.cluster.store(0).keys().empty());
  CHECK(a.seen().calls.empty());
}

// A gRPC server (grpc-go) writes the GOAWAY and closes the connection. The front once reported
// the protocol error as Served::broken, whose replies the byte stream drops and of which it tells
// the client nothing: the GOAWAY never arrived and the client never heard the end.
TEST_CASE("a connection that does not start with HTTP/2's preface reads a GOAWAY, then its end",
          "[etcd][sim][grpc]") {
  Fixture f;
  GrpcClient a(f, 1, "a", 0);
  f.at(0, [&] { a.write("GET /v3/kv/range HTTP/1.1\r\nHost: etcd\r\n\r\n"); });
  f.world.run();
  REQUIRE(a.ended_at_us.has_value());
  const Seen before_end = parse_server(std::string_view(a.bytes).substr(0, a.bytes_at_end));
  const std::vector<ServerFrame> goaways = before_end.of_type(FrameType::goaway);
  REQUIRE(goaways.size() == 1);
  REQUIRE(goaways[0].payload.size() >= 8);
  CHECK(goaways[0].stream == 0);
  CHECK(h2::read_u32(goaways[0].payload, 0) == 0);                   // no stream was opened
  CHECK(h2::read_u32(goaways[0].payload, 4) == h2::kProtocolError);  // PROTOCOL_ERROR
  CHECK(before_end.frames.back().type == static_cast<uint8_t>(FrameType::goaway));
  CHECK(a.bytes.size() == a.bytes_at_end);  // nothing after the end
}

TEST_CASE("a response waits for the stream's window, then arrives whole before the trailers",
          "[etcd][sim][grpc]") {
  Fixture f;
  GrpcClient a(f, 1, "a", 0);
  const std::string value(300, 'v');
  std::string put_waiting;
  std::string range_waiting;
  f.at(0, [&] {
    a.write(client_preface({{h2::kSettingsInitialWindowSize, 10}}) +
            unary_call(1, kPut, {{"key", b64("big")}, {"value", b64(value)}}));
  });
  f.at(20'000, [&] { put_waiting = a.bytes; });
  f.at(30'000, [&] { a.write(h2::encode_window_update(1, 1000)); });
  f.at(40'000, [&] { a.write(unary_call(3, kRange, {{"key", b64("big")}})); });
  f.at(60'000, [&] { range_waiting = a.bytes; });
  f.at(70'000, [&] { a.write(h2::encode_window_update(3, 1000)); });
  f.world.run();

  // The put ran, its answer's HEADERS went, its DATA (above 10 bytes) waited for the window.
  CHECK(f.cluster.store(0).keys().count("big") == 1);
  CHECK(parse_server(put_waiting).call(1).kinds == std::vector<std::string>{"headers"});
  const Seen range_seen = parse_server(range_waiting);
  const SeenCall& range_early = range_seen.call(3);
  CHECK(range_early.kinds == std::vector<std::string>{"headers"});
  CHECK(range_early.data_bytes == 0);

  const Seen seen = a.seen();
  answered_ok(seen, 1, kPut);
  const EtcdJson range = answered_ok(seen, 3, kRange);
  REQUIRE(range.contains("kvs"));
  CHECK(range["kvs"][0]["value"] == b64(value));
  CHECK(seen.call(3).data_bytes > 300);
}

TEST_CASE("a response larger than the connection's window waits for a connection WINDOW_UPDATE",
          "[etcd][sim][grpc]") {
  Fixture f;
  GrpcClient a(f, 1, "a", 0);
  const std::string value(20'000, 'x');
  std::string waiting;
  f.at(0, [&] { a.write(client_preface({{h2::kSettingsInitialWindowSize, 1 << 20}})); });
  // Five puts of 20 kB, each granted back before the next (the client keeps to its window).
  for (uint32_t i = 0; i < 5; ++i) {
    f.at(1'000 + i * 10'000, [&, i] {
      a.write(unary_call(1 + 2 * i, kPut,
                         {{"key", b64("big/" + std::to_string(i))}, {"value", b64(value)}}));
    });
  }
  f.at(60'000, [&] {
    a.write(unary_call(11, kRange, {{"key", b64("big/")}, {"range_end", b64("big0")}}));
  });
  f.at(80'000, [&] { waiting = a.bytes; });
  f.at(90'000,
       [&] { a.write(h2::encode_window_update(11, 1 << 20)); });  // the stream's: not enough
  f.at(100'000, [&] { CHECK(a.bytes == waiting); });
  f.at(110'000, [&] { a.write(h2::encode_window_update(0, 1 << 20)); });
  f.world.run();

  const Seen early = parse_server(waiting);
  CHECK(early.data_bytes() <= static_cast<size_t>(h2::kDefaultWindowSize));
  const SeenCall& range_early = early.call(11);
  CHECK(range_early.data_bytes > 0);  // what the window allowed went
  CHECK(range_early.trailers.empty());
  CHECK(range_early.messages.empty());

  const Seen seen = a.seen();
  for (uint32_t i = 0; i < 5; ++i) answered_ok(seen, 1 + 2 * i, kPut);
  CHECK(seen.call(11).kinds.size() > 3);
  const EtcdJson range = answered_ok(seen, 11, kRange);
  REQUIRE(range.contains("kvs"));
  REQUIRE(range["kvs"].size() == 5);
  for (uint32_t i = 0; i < 5; ++i) {
    CHECK(range["kvs"][i]["key"] == b64("big/" + std::to_string(i)));
    CHECK(range["kvs"][i]["value"] == b64(value));
  }
  for (const ServerFrame& frame : seen.of_type(FrameType::data)) {
    CHECK(frame.payload.size() <= h2::kDefaultMaxFrameSize);
  }
}

// serve() once fed the whole piece to Http2FrameReader, which holds at most 33,810 bytes unread
// ("more than 33810 bytes sent ahead of a whole frame"), so a piece of whole frames above that
// broke the connection.
TEST_CASE("a client's piece of several frames, larger than two frames, is read whole",
          "[etcd][sim][grpc]") {
  // grpc-js writes a put's HEADERS and DATA frames together: 40 kB, within the client's window
  // (65,535), in one write.
  Fixture f;
  GrpcClient a(f, 1, "a", 0);
  const std::string value(40'000, 'y');
  f.at(0, [&] {
    a.write(client_preface() + unary_call(1, kPut, {{"key", b64("big")}, {"value", b64(value)}}));
  });
  f.world.run();
  const Seen seen = a.seen();
  CHECK(seen.of_type(FrameType::goaway).empty());
  CHECK_FALSE(a.ended_at_us.has_value());
  answered_ok(seen, 1, kPut);
  REQUIRE(f.cluster.store(0).keys().count("big") == 1);
  CHECK(f.cluster.store(0).keys().at("big").value == value);
}

// A scripted exchange on two connections: handshake, grant, txn, keepalive, ping, a Lock RPC
// waiting and cancelled. What each client read, and the trace's hash.
std::pair<std::string, uint64_t> scripted_exchange(uint64_t seed) {
  Fixture f(seed);
  GrpcClient a(f, 1, "a", 0);
  GrpcClient b(f, 2, "b", 1, 1);
  std::string lease;
  f.at(0, [&] {
    a.write(client_preface() + unary_call(1, kGrant, {{"TTL", "5"}}) +
            h2::encode_frame(FrameType::ping, 0, 0, "01234567"));
    b.write(client_preface());
  });
  f.at(10'000, [&] {
    lease = granted_lease(a, 1);
    a.write(unary_call(3, kTxn, acquire_txn("k", lease)) +
            unary_call(5, kLock, {{"name", b64("L")}, {"lease", lease}}) +
            call_headers(7, kKeepAlive) + request_data(7, kKeepAlive, {{"ID", lease}}, false));
    // Without a lease the Lock RPC grants one; L waits behind A, M is taken at once.
    b.write(unary_call(1, kLock, {{"name", b64("L")}}) +
            unary_call(3, kLock, {{"name", b64("M")}}));
  });
  f.at(30'000, [&] {
    a.write(request_data(7, kKeepAlive, {{"ID", lease}}, true));
    b.write(h2::encode_rst_stream(1, 0x8));
  });
  f.at(40'000, [&] { b.stream->close(); });
  f.world.run();
  return {a.bytes + "|" + b.bytes, f.world.trace().hash()};
}

TEST_CASE("the same scripted exchange in two worlds of the same seed reads the same bytes",
          "[etcd][sim][grpc]") {
  const auto [bytes_1, hash_1] = scripted_exchange(3);
  const auto [bytes_2, hash_2] = scripted_exchange(3);
  CHECK(bytes_1.size() > 500);
  CHECK(bytes_1 == bytes_2);
  CHECK(hash_1 == hash_2);
}

}  // namespace
}  // namespace lockstep::sim::etcd::grpc_front_test
