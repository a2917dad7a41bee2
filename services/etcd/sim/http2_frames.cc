#include "services/etcd/sim/http2_frames.h"

#include <fmt/format.h>

#include "base/check.h"

namespace lockstep::sim::h2 {

namespace {

constexpr size_t kFrameHeaderBytes = 9;
// A bound on what a reader keeps unread: the largest frame and its header, twice over.
constexpr size_t kBufferedMax = 2 * (kDefaultMaxFrameSize + kFrameHeaderBytes) + 1024;

void put_u32(std::string& out, uint32_t value) {
  out.push_back(static_cast<char>((value >> 24) & 0xff));
  out.push_back(static_cast<char>((value >> 16) & 0xff));
  out.push_back(static_cast<char>((value >> 8) & 0xff));
  out.push_back(static_cast<char>(value & 0xff));
}

}  // namespace

uint32_t read_u32(std::string_view bytes, size_t at) {
  LOCKSTEP_CHECK(at + 4 <= bytes.size(), "a 32-bit field past the end");
  const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(bytes[i])); };
  return (byte(at) << 24) | (byte(at + 1) << 16) | (byte(at + 2) << 8) | byte(at + 3);
}

void Http2FrameReader::feed(std::string_view bytes) {
  if (!error_.empty()) return;
  if (read_ > 0) {
    buffer_.erase(0, read_);
    read_ = 0;
  }
  buffer_.append(bytes);
  if (buffer_.size() > kBufferedMax) {
    error_ = fmt::format("more than {} bytes sent ahead of a whole frame", kBufferedMax);
  }
}

std::optional<Frame> Http2FrameReader::next() {
  if (!error_.empty()) return std::nullopt;
  const std::string_view unread = std::string_view(buffer_).substr(read_);
  if (!preface_seen_) {
    const size_t n = std::min(unread.size(), kClientPreface.size());
    if (unread.substr(0, n) != kClientPreface.substr(0, n)) {
      error_ = "the connection did not start with HTTP/2's client preface";
      return std::nullopt;
    }
    if (n < kClientPreface.size()) return std::nullopt;
    preface_seen_ = true;
    read_ += kClientPreface.size();
    return next();
  }
  if (unread.size() < kFrameHeaderBytes) return std::nullopt;
  const auto byte = [&](size_t i) {
    return static_cast<uint32_t>(static_cast<uint8_t>(unread[i]));
  };
  const uint32_t length = (byte(0) << 16) | (byte(1) << 8) | byte(2);
  if (length > kDefaultMaxFrameSize) {
    error_ = fmt::format("a frame of {} bytes, above the {} this server allows", length,
                         kDefaultMaxFrameSize);
    return std::nullopt;
  }
  if (unread.size() < kFrameHeaderBytes + length) return std::nullopt;
  Frame frame{.type = static_cast<uint8_t>(byte(3)),
              .flags = static_cast<uint8_t>(byte(4)),
              .stream = read_u32(unread, 5) & 0x7fff'ffffU,
              .payload = std::string(unread.substr(kFrameHeaderBytes, length))};
  read_ += kFrameHeaderBytes + length;
  return frame;
}

std::string encode_frame(FrameType type, uint8_t flags, uint32_t stream, std::string_view payload) {
  LOCKSTEP_CHECK(payload.size() <= kDefaultMaxFrameSize, "a frame above the default maximum");
  LOCKSTEP_CHECK((stream & 0x8000'0000U) == 0, "a stream id uses 31 bits");
  std::string out;
  out.reserve(kFrameHeaderBytes + payload.size());
  const auto length = static_cast<uint32_t>(payload.size());
  out.push_back(static_cast<char>((length >> 16) & 0xff));
  out.push_back(static_cast<char>((length >> 8) & 0xff));
  out.push_back(static_cast<char>(length & 0xff));
  out.push_back(static_cast<char>(type));
  out.push_back(static_cast<char>(flags));
  put_u32(out, stream);
  out.append(payload);
  return out;
}

std::string encode_settings(const std::vector<std::pair<uint16_t, uint32_t>>& settings) {
  std::string payload;
  for (const auto& [id, value] : settings) {
    payload.push_back(static_cast<char>((id >> 8) & 0xff));
    payload.push_back(static_cast<char>(id & 0xff));
    put_u32(payload, value);
  }
  return encode_frame(FrameType::settings, 0, 0, payload);
}

std::string encode_settings_ack() { return encode_frame(FrameType::settings, kAck, 0, ""); }

std::string encode_window_update(uint32_t stream, uint32_t increment) {
  LOCKSTEP_CHECK(increment > 0 && increment <= kWindowSizeMax, "a window increment of 1..2^31-1");
  std::string payload;
  put_u32(payload, increment);
  return encode_frame(FrameType::window_update, 0, stream, payload);
}

std::string encode_rst_stream(uint32_t stream, uint32_t error_code) {
  std::string payload;
  put_u32(payload, error_code);
  return encode_frame(FrameType::rst_stream, 0, stream, payload);
}

std::string encode_goaway(uint32_t last_stream, uint32_t error_code, std::string_view why) {
  std::string payload;
  put_u32(payload, last_stream);
  put_u32(payload, error_code);
  payload.append(why.substr(0, 256));
  return encode_frame(FrameType::goaway, 0, 0, payload);
}

std::optional<std::vector<std::pair<uint16_t, uint32_t>>> decode_settings(
    std::string_view payload) {
  if (payload.size() % 6 != 0) return std::nullopt;
  std::vector<std::pair<uint16_t, uint32_t>> out;
  for (size_t at = 0; at < payload.size(); at += 6) {
    const auto id = static_cast<uint16_t>((static_cast<uint8_t>(payload[at]) << 8) |
                                          static_cast<uint8_t>(payload[at + 1]));
    out.emplace_back(id, read_u32(payload, at + 2));
  }
  return out;
}

std::optional<std::string_view> unpadded(const Frame& frame) {
  std::string_view body = frame.payload;
  size_t pad = 0;
  if ((frame.flags & kPadded) != 0) {
    if (body.empty()) return std::nullopt;
    pad = static_cast<uint8_t>(body[0]);
    body.remove_prefix(1);
  }
  if (frame.type == static_cast<uint8_t>(FrameType::headers) && (frame.flags & kPriority) != 0) {
    if (body.size() < 5) return std::nullopt;
    body.remove_prefix(5);  // stream dependency (4) and weight (1): priorities are not kept
  }
  if (pad > body.size()) return std::nullopt;
  return body.substr(0, body.size() - pad);
}

}  // namespace lockstep::sim::h2
