#include "services/etcd/sim/etcd_grpc_front.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "sim/assert.h"

namespace lockstep::sim::etcd {

namespace {

using h2::FrameType;

constexpr size_t kFramesPerPieceMax = 100'000;  // a bound on one piece's frame loop
constexpr size_t kCallsMax = 1000;              // open calls on one connection
constexpr size_t kMessageBytesMax = 4 << 20;    // gRPC's default largest message (4 MiB)
constexpr size_t kHeaderBlockMax = 64 << 10;    // a header block and its CONTINUATIONs
constexpr size_t kPendingFramesMax = 10'000;    // frames of one call waiting for the window
constexpr size_t kGrpcPrefixBytes = 5;          // compressed flag, 32-bit length

// gRPC status codes (grpc/doc/statuscodes.md).
constexpr int kGrpcOk = 0;
constexpr int kGrpcInternal = 13;
constexpr int kGrpcUnimplemented = 12;
constexpr int kGrpcResourceExhausted = 8;

uint8_t type_of(FrameType type) { return static_cast<uint8_t>(type); }

// grpc-message's percent-encoding (gRPC over HTTP/2): printable ASCII is kept, '%' and every other
// byte become %XX.
std::string percent_encoded(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<uint8_t>(c);
    if (byte >= 0x20 && byte <= 0x7e && c != '%') {
      out.push_back(c);
    } else {
      out += fmt::format("%{:02X}", byte);
    }
  }
  return out;
}

std::string length_prefixed(std::string_view message) {
  std::string out;
  const auto length = static_cast<uint32_t>(message.size());
  out.push_back('\0');
  out.push_back(static_cast<char>((length >> 24) & 0xff));
  out.push_back(static_cast<char>((length >> 16) & 0xff));
  out.push_back(static_cast<char>((length >> 8) & 0xff));
  out.push_back(static_cast<char>(length & 0xff));
  out.append(message);
  return out;
}

// A gateway reply's message: a stream's replies come wrapped in {"result": ...}.
const EtcdJson& unwrapped(const EtcdJson& body) {
  if (body.is_object() && body.size() == 1 && body.contains("result")) return body["result"];
  return body;
}

}  // namespace

EtcdGrpcFront::EtcdGrpcFront(World& world, EtcdCluster& cluster, EtcdGrpcFrontOptions options)
    : world_(world), cluster_(cluster), options_(std::move(options)) {
  LOCKSTEP_SIM_CHECK(options_.conn < (uint64_t{1} << 29), "a connection id below 2^29");
}

// Streams the cluster knows this front's calls by: apart from the C++ connections' (client + 1)
// << 32 and the members' own (1 << 62).
uint64_t EtcdGrpcFront::cluster_stream(uint32_t id) const {
  return (uint64_t{1} << 61) | (options_.conn << 31) | id;
}

StreamFront::Served EtcdGrpcFront::serve(const std::string& bytes) {
  Served now;
  if (ended_) return now;
  serving_ = &now;
  if (!std::exchange(settings_sent_, true)) emit(h2::encode_settings({}));
  // A frame's worth at a time: the reader bounds what it holds unread, not what a piece carries.
  for (size_t at = 0; at < bytes.size() && !ended_ && reader_.error().empty();
       at += h2::kDefaultMaxFrameSize) {
    reader_.feed(std::string_view(bytes).substr(at, h2::kDefaultMaxFrameSize));
    for (size_t i = 0; i < kFramesPerPieceMax && !ended_; ++i) {
      std::optional<h2::Frame> frame = reader_.next();
      if (!frame) break;
      on_frame(*frame);
    }
  }
  if (!reader_.error().empty() && !ended_) fail(h2::kProtocolError, reader_.error());
  collect();
  serving_ = nullptr;
  now.close = !broken_.empty();  // the GOAWAY reaches the client, then the server's FIN
  return now;
}

void EtcdGrpcFront::emit(std::string bytes) {
  if (serving_ != nullptr) {
    serving_->replies += bytes;
    return;
  }
  end_.send(std::move(bytes));
}

void EtcdGrpcFront::fail(uint32_t error_code, std::string why) {
  world_.trace_linef("stream {} at {}: HTTP/2 broken: {}", options_.stream_name, name(), why);
  emit(h2::encode_goaway(last_stream_, error_code, why));
  broken_ = std::move(why);
  for (auto& [id, call] : calls_) cancel(call);
  calls_.clear();
  ended_ = true;
}

void EtcdGrpcFront::on_frame(const h2::Frame& frame) {
  if (continuing_ != 0 &&
      (frame.type != type_of(FrameType::continuation) || frame.stream != continuing_)) {
    return fail(h2::kProtocolError, "a header block interrupted before END_HEADERS");
  }
  switch (static_cast<FrameType>(frame.type)) {
    case FrameType::headers:
    case FrameType::continuation: {
      const bool first = frame.type == type_of(FrameType::headers);
      if (first && frame.stream == 0) return fail(h2::kProtocolError, "HEADERS on stream 0");
      if (!first && continuing_ == 0) return fail(h2::kProtocolError, "a CONTINUATION alone");
      std::optional<std::string_view> fragment =
          first ? h2::unpadded(frame) : std::optional<std::string_view>(frame.payload);
      if (!fragment) return fail(h2::kProtocolError, "HEADERS padded past its end");
      if (first) {
        block_.clear();
        continuing_flags_ = frame.flags;
      }
      block_.append(*fragment);
      if (block_.size() > kHeaderBlockMax) {
        return fail(h2::kProtocolError,
                    fmt::format("a header block above {} bytes", kHeaderBlockMax));
      }
      if ((frame.flags & h2::kEndHeaders) == 0) {
        continuing_ = frame.stream;
        return;
      }
      continuing_ = 0;
      return on_headers(frame.stream, continuing_flags_, block_);
    }
    case FrameType::data: return on_data(frame);
    case FrameType::settings: return on_settings(frame);
    case FrameType::window_update: return on_window_update(frame);
    case FrameType::rst_stream: return on_rst_stream(frame.stream);
    case FrameType::ping:
      if ((frame.flags & h2::kAck) != 0) return;
      if (frame.payload.size() != 8) return fail(h2::kProtocolError, "a PING not of 8 bytes");
      return emit(h2::encode_frame(FrameType::ping, h2::kAck, 0, frame.payload));
    case FrameType::goaway:  // the client will close: calls in flight still answer
    case FrameType::priority: return;
    case FrameType::push_promise: return fail(h2::kProtocolError, "a client's PUSH_PROMISE");
  }
  // Unknown frame types are ignored (RFC 9113 section 4.1).
}

void EtcdGrpcFront::on_settings(const h2::Frame& frame) {
  if (frame.stream != 0) return fail(h2::kProtocolError, "SETTINGS on a stream");
  if ((frame.flags & h2::kAck) != 0) return;
  const auto settings = h2::decode_settings(frame.payload);
  if (!settings) return fail(h2::kProtocolError, "SETTINGS not a multiple of 6 bytes");
  for (const auto& [id, value] : *settings) {
    if (id != h2::kSettingsInitialWindowSize) continue;  // the encoder keeps no table, frames fit
    if (value > h2::kWindowSizeMax) return fail(h2::kFlowControlError, "a window above 2^31-1");
    const int64_t delta = static_cast<int64_t>(value) - initial_window_;
    initial_window_ = value;
    for (auto& [stream, call] : calls_) call.send_window += delta;
  }
  emit(h2::encode_settings_ack());
  flush_all();
}

void EtcdGrpcFront::on_window_update(const h2::Frame& frame) {
  if (frame.payload.size() != 4) return fail(h2::kProtocolError, "a WINDOW_UPDATE not of 4 bytes");
  const int64_t increment = h2::read_u32(frame.payload, 0) & 0x7fff'ffffU;
  if (frame.stream == 0) {
    connection_window_ += increment;
    if (connection_window_ > h2::kWindowSizeMax) {
      return fail(h2::kFlowControlError, "the connection's window above 2^31-1");
    }
    return flush_all();
  }
  const auto it = calls_.find(frame.stream);
  if (it == calls_.end()) return;  // a closed stream's: allowed
  it->second.send_window += increment;
  flush(it->second);
  flush_all();
}

void EtcdGrpcFront::on_rst_stream(uint32_t id) {
  const auto it = calls_.find(id);
  if (it == calls_.end()) return;
  cancel(it->second);
  calls_.erase(it);
}

void EtcdGrpcFront::on_headers(uint32_t id, uint8_t flags, std::string_view block) {
  std::optional<std::vector<h2::Header>> headers = decoder_.decode(block);
  if (!headers) return fail(h2::kCompressionError, decoder_.error());
  const bool end_stream = (flags & h2::kEndStream) != 0;
  if (const auto it = calls_.find(id); it != calls_.end()) {  // the client's trailers
    if (!end_stream) return fail(h2::kProtocolError, "trailers without END_STREAM");
    it->second.client_ended = true;
    return run_if_ready(it->second);
  }
  if (id % 2 == 0) return fail(h2::kProtocolError, fmt::format("a client's even stream {}", id));
  if (id <= last_stream_) return;  // a closed stream's (its call answered and forgotten)
  last_stream_ = id;
  if (calls_.size() >= kCallsMax) {
    emit(h2::encode_rst_stream(id, 0x7));  // REFUSED_STREAM
    return;
  }
  std::string path;
  for (const auto& [header, value] : *headers) {
    if (header == ":path") path = value;
  }
  Call& call = calls_[id];
  call.id = id;
  call.rpc = find_etcd_rpc(path);
  call.send_window = initial_window_;
  call.client_ended = end_stream;
  world_.trace_line_by([&] {
    return fmt::format("stream {} at {}: call {} {}", options_.stream_name, name(), id, path);
  });
  if (call.rpc == nullptr)
    return finish(call, kGrpcUnimplemented, fmt::format("unknown method {}", path));
  run_if_ready(call);
}

void EtcdGrpcFront::on_data(const h2::Frame& frame) {
  if (frame.stream == 0) return fail(h2::kProtocolError, "DATA on stream 0");
  std::optional<std::string_view> data = h2::unpadded(frame);
  if (!data) return fail(h2::kProtocolError, "DATA padded past its end");
  // Everything the client sends is granted back at once: the server reads as fast as it comes.
  if (!frame.payload.empty()) {
    const auto length = static_cast<uint32_t>(frame.payload.size());
    emit(h2::encode_window_update(0, length));
    if ((frame.flags & h2::kEndStream) == 0) emit(h2::encode_window_update(frame.stream, length));
  }
  const auto it = calls_.find(frame.stream);
  if (it == calls_.end() || it->second.finished) return;  // a cancelled or answered call's
  Call& call = it->second;
  call.data.append(*data);
  call.client_ended = call.client_ended || (frame.flags & h2::kEndStream) != 0;
  take_messages(call);
}

void EtcdGrpcFront::take_messages(Call& call) {
  while (!call.finished && call.data.size() >= kGrpcPrefixBytes) {
    if (call.data[0] != '\0') return finish(call, kGrpcUnimplemented, "compressed messages");
    const uint32_t length = h2::read_u32(call.data, 1);
    if (length > kMessageBytesMax) {
      return finish(call, kGrpcResourceExhausted,
                    fmt::format("a message of {} bytes, above {}", length, kMessageBytesMax));
    }
    if (call.data.size() < kGrpcPrefixBytes + length) break;
    const std::string_view bytes = std::string_view(call.data).substr(kGrpcPrefixBytes, length);
    ProtoDecoded decoded = proto_decode(call.rpc->request, bytes);
    call.data.erase(0, kGrpcPrefixBytes + length);
    if (!decoded.json)
      return finish(call, kGrpcInternal, "grpc: error unmarshalling request: " + decoded.error);
    if (call.rpc->client_streams) {
      run_keepalive(call, std::move(*decoded.json));
    } else {
      if (!call.messages.empty())
        return finish(call, kGrpcInternal, "a unary call with two messages");
      call.messages.push_back(std::move(*decoded.json));
    }
  }
  run_if_ready(call);
}

void EtcdGrpcFront::run_if_ready(Call& call) {
  if (call.finished || !call.client_ended) return;
  if (call.rpc == nullptr) return;  // answered UNIMPLEMENTED already
  if (call.rpc->client_streams) {   // the client ended its side: OK once every reply went
    if (call.keepalives_running == 0) finish(call, kGrpcOk, "");
    return;
  }
  if (call.running) return;
  if (call.messages.empty()) return finish(call, kGrpcInternal, "a unary call without its message");
  EtcdJson request = std::move(call.messages.front());
  call.messages.clear();
  run_unary(call, std::move(request));
}

void EtcdGrpcFront::run_unary(Call& call, EtcdJson request) {
  call.running = true;
  const uint32_t id = call.id;
  std::weak_ptr<int> alive = alive_;
  auto answered = [this, alive, id](int http_status, EtcdJson body) {
    if (alive.expired()) return;
    answer(id, http_status, body, /*last=*/true);
  };
  const std::string path(call.rpc->gateway_path);
  if (path == "/v3/lock/lock") {
    cluster_.open_stream(options_.member, options_.client, cluster_stream(id), path, request,
                         std::move(answered));
  } else {
    cluster_.handle(options_.member, options_.client, path, request, std::move(answered));
  }
}

void EtcdGrpcFront::run_keepalive(Call& call, EtcdJson request) {
  const uint32_t id = call.id;
  ++call.keepalives_running;
  std::weak_ptr<int> alive = alive_;
  cluster_.handle(options_.member, options_.client, std::string(call.rpc->gateway_path), request,
                  [this, alive, id](int http_status, EtcdJson body) {
                    if (alive.expired()) return;
                    answer(id, http_status, body, /*last=*/false);
                  });
}

void EtcdGrpcFront::answer(uint32_t id, int http_status, const EtcdJson& body, bool last) {
  if (ended_) return;
  const auto it = calls_.find(id);
  if (it == calls_.end() || it->second.finished) return;  // cancelled meanwhile
  Call& call = it->second;
  call.running = false;
  if (call.keepalives_running > 0) --call.keepalives_running;
  if (http_status != 200) {
    const int code = body.is_object() && body.contains("code") && body["code"].is_number_integer()
                         ? body["code"].get<int>()
                         : kGrpcInternal;
    const std::string message =
        body.is_object() && body.contains("message") && body["message"].is_string()
            ? body["message"].get<std::string>()
            : fmt::format("HTTP {}", http_status);
    finish(call, code == kGrpcOk ? kGrpcInternal : code, message);
    if (serving_ == nullptr) collect();
    return;
  }
  send_message(call, unwrapped(body));
  if (last) {
    finish(call, kGrpcOk, "");
  } else {
    run_if_ready(call);  // a client-streaming call whose client ended: OK after its last reply
  }
  if (serving_ == nullptr) collect();  // an answer that came later, outside serve()
}

void EtcdGrpcFront::send_message(Call& call, const EtcdJson& body) {
  if (!std::exchange(call.headers_sent, true)) {
    queue_frame(call,
                h2::encode_frame(
                    FrameType::headers, h2::kEndHeaders, call.id,
                    h2::hpack_encode({{":status", "200"}, {"content-type", "application/grpc"}})),
                0);
  }
  const std::string message = length_prefixed(proto_encode(call.rpc->response, body));
  for (size_t at = 0; at < message.size(); at += h2::kDefaultMaxFrameSize) {
    const std::string_view piece = std::string_view(message).substr(at, h2::kDefaultMaxFrameSize);
    queue_frame(call, h2::encode_frame(FrameType::data, 0, call.id, piece), piece.size());
  }
}

void EtcdGrpcFront::finish(Call& call, int grpc_status, std::string_view message) {
  if (std::exchange(call.finished, true)) return;
  std::vector<h2::Header> trailers;
  if (!call.headers_sent) {  // trailers only
    trailers = {{":status", "200"}, {"content-type", "application/grpc"}};
  }
  trailers.emplace_back("grpc-status", std::to_string(grpc_status));
  if (!message.empty()) trailers.emplace_back("grpc-message", percent_encoded(message));
  world_.trace_line_by([&] {
    return fmt::format("stream {} at {}: call {} ends: {} {}", options_.stream_name, name(),
                       call.id, grpc_status, message);
  });
  queue_frame(call,
              h2::encode_frame(FrameType::headers, h2::kEndHeaders | h2::kEndStream, call.id,
                               h2::hpack_encode(trailers)),
              0);
}

void EtcdGrpcFront::cancel(Call& call) {
  if (call.finished) return;
  call.finished = true;
  if (call.running && call.rpc != nullptr && call.rpc->gateway_path == "/v3/lock/lock") {
    cluster_.cancel_stream(options_.member, cluster_stream(call.id));
  }
}

void EtcdGrpcFront::queue_frame(Call& call, std::string frame, size_t data_bytes) {
  LOCKSTEP_SIM_CHECK(call.pending.size() < kPendingFramesMax,
                     "a call's frames waiting for a window the client never opens");
  // A frame that is not DATA waits only behind DATA that waits (its order in the call).
  if (data_bytes == 0 && call.pending.empty()) {
    emit(std::move(frame));
  } else {
    call.pending.push_back(std::move(frame));
    call.pending_data_bytes += data_bytes;
    flush(call);
  }
}

// Forgets calls answered and sent whole; never while a caller holds one (top-level only).
void EtcdGrpcFront::collect() {
  std::erase_if(calls_, [](const auto& entry) {
    return entry.second.finished && entry.second.pending.empty();
  });
}

// Sends the call's waiting frames its window and the connection's allow, in order.
void EtcdGrpcFront::flush(Call& call) {
  while (!call.pending.empty()) {
    const std::string& frame = call.pending.front();
    const bool is_data = static_cast<uint8_t>(frame[3]) == type_of(FrameType::data);
    const int64_t bytes = is_data ? static_cast<int64_t>(frame.size() - 9) : 0;
    if (bytes > 0 && (bytes > call.send_window || bytes > connection_window_)) return;
    call.send_window -= bytes;
    connection_window_ -= bytes;
    call.pending_data_bytes -= static_cast<size_t>(bytes);
    emit(call.pending.front());
    call.pending.pop_front();
  }
}

void EtcdGrpcFront::flush_all() {
  for (auto& [id, call] : calls_) flush(call);
}

void EtcdGrpcFront::client_end(bool reset) {
  if (std::exchange(ended_, true)) return;
  world_.trace_linef("stream {} at {}: the client's {}: {} call(s) cancelled", options_.stream_name,
                     name(), reset ? "RST" : "FIN", calls_.size());
  for (auto& [id, call] : calls_) cancel(call);
  calls_.clear();
}

}  // namespace lockstep::sim::etcd
