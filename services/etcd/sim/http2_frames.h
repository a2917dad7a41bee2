#pragma once
// HTTP/2 framing (RFC 9113 section 4) as a server reads a client connection: the client's
// preface, then frames of a 9-byte header (length, type, flags, stream) and a payload. What the
// simulated etcd's gRPC front (etcd_grpc_front.h) needs and no more: it frames what it sends with
// encode_frame and reads what the client sends with Http2FrameReader.
//
// Invariants: a frame is handed out whole, in the order it came, once; a payload longer than the
// maximum this end advertised (SETTINGS_MAX_FRAME_SIZE, 16,384 bytes by default) or a wrong
// preface is an error value, after which the reader hands out nothing more.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::sim::h2 {

enum class FrameType : uint8_t {
  data = 0x0,
  headers = 0x1,
  priority = 0x2,
  rst_stream = 0x3,
  settings = 0x4,
  push_promise = 0x5,
  ping = 0x6,
  goaway = 0x7,
  window_update = 0x8,
  continuation = 0x9,
};

// Flags (by frame type: END_STREAM and ACK share a bit).
inline constexpr uint8_t kEndStream = 0x1;
inline constexpr uint8_t kAck = 0x1;
inline constexpr uint8_t kEndHeaders = 0x4;
inline constexpr uint8_t kPadded = 0x8;
inline constexpr uint8_t kPriority = 0x20;

// Settings identifiers (section 6.5.2).
inline constexpr uint16_t kSettingsHeaderTableSize = 0x1;
inline constexpr uint16_t kSettingsInitialWindowSize = 0x4;
inline constexpr uint16_t kSettingsMaxFrameSize = 0x5;

// Error codes (section 7).
inline constexpr uint32_t kNoError = 0x0;
inline constexpr uint32_t kProtocolError = 0x1;
inline constexpr uint32_t kFlowControlError = 0x3;
inline constexpr uint32_t kCompressionError = 0x9;

inline constexpr std::string_view kClientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
inline constexpr uint32_t kDefaultMaxFrameSize = 16'384;
inline constexpr int64_t kDefaultWindowSize = 65'535;
inline constexpr int64_t kWindowSizeMax = 0x7fff'ffff;

struct Frame {
  uint8_t type = 0;  // a FrameType, or an unknown one (which a receiver ignores)
  uint8_t flags = 0;
  uint32_t stream = 0;  // the reserved high bit cleared
  std::string payload;
};

class Http2FrameReader {
 public:
  void feed(std::string_view bytes);
  // The next whole frame, nullopt when more bytes are needed or after an error.
  std::optional<Frame> next();
  // "" while the connection is well formed, else why not (one line).
  const std::string& error() const { return error_; }

 private:
  std::string buffer_;
  size_t read_ = 0;  // bytes of buffer_ handed out
  bool preface_seen_ = false;
  std::string error_;
};

std::string encode_frame(FrameType type, uint8_t flags, uint32_t stream, std::string_view payload);
// A SETTINGS frame carrying (identifier, value) pairs; an ACK carries none.
std::string encode_settings(const std::vector<std::pair<uint16_t, uint32_t>>& settings);
std::string encode_settings_ack();
std::string encode_window_update(uint32_t stream, uint32_t increment);
std::string encode_rst_stream(uint32_t stream, uint32_t error_code);
std::string encode_goaway(uint32_t last_stream, uint32_t error_code, std::string_view why);

// A SETTINGS payload's pairs; nullopt when its length is not a multiple of 6.
std::optional<std::vector<std::pair<uint16_t, uint32_t>>> decode_settings(std::string_view payload);
// The payload of a DATA or HEADERS frame without its padding (and a HEADERS frame's priority
// fields); nullopt when the padding is longer than the payload.
std::optional<std::string_view> unpadded(const Frame& frame);
// Big-endian 32 bits at `at` (the caller checked the length).
uint32_t read_u32(std::string_view bytes, size_t at);

}  // namespace lockstep::sim::h2
