#include "services/etcd/client/etcd_json.h"

#include <array>
#include <charconv>

#include <fmt/format.h>

namespace lockstep {

int64_t EtcdResult::error_code() const {
  if (!refused()) return 0;
  return etcd::int_field(body, "code").value_or(0);
}

std::string EtcdResult::error_text() const {
  if (!refused()) return {};
  const EtcdJson& error = body["error"];
  return error.is_string() ? error.get<std::string>() : error.dump();
}

std::string describe(const EtcdResult& result) {
  constexpr size_t kBytesMax = 160;
  if (!result.ok()) return fmt::format("{}: {}", to_string(result.status), result.message);
  std::string text = result.body.dump();
  if (text.size() > kBytesMax) text = text.substr(0, kBytesMax) + "..";
  return result.http_status == 200 ? text : fmt::format("HTTP {} {}", result.http_status, text);
}

namespace etcd {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

template <typename Int>
std::optional<Int> parse_int(std::string_view text) {
  Int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t n = (static_cast<uint8_t>(bytes[i]) << 16) |
                       (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t n = static_cast<uint8_t>(bytes[i]) << 16;
    if (rest == 2) n |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += rest == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    int s[4];
    int padding = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = text[i + j];
      if (c == '=' && last && j >= 2) {
        s[j] = 0;
        ++padding;
        continue;
      }
      if (padding > 0) return std::nullopt;  // data after padding
      s[j] = sextet(c);
      if (s[j] < 0) return std::nullopt;
    }
    const uint32_t n = (s[0] << 18) | (s[1] << 12) | (s[2] << 6) | s[3];
    out += static_cast<char>((n >> 16) & 0xff);
    if (padding < 2) out += static_cast<char>((n >> 8) & 0xff);
    if (padding < 1) out += static_cast<char>(n & 0xff);
  }
  return out;
}

std::optional<int64_t> int_field(const EtcdJson& object, std::string_view name, int64_t fallback) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) return fallback;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) return parse_int<int64_t>(it->get_ref<const std::string&>());
  return std::nullopt;
}

std::optional<uint64_t> uint_field(const EtcdJson& object, std::string_view name,
                                   uint64_t fallback) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) return fallback;
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (it->is_number_integer()) return std::nullopt;  // negative
  if (it->is_string()) return parse_int<uint64_t>(it->get_ref<const std::string&>());
  return std::nullopt;
}

std::optional<std::string> bytes_field(const EtcdJson& object, std::string_view name) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) return std::nullopt;
  return base64_decode(it->get_ref<const std::string&>());
}

std::string prefix_range_end(std::string_view prefix) {
  std::string end(prefix);
  for (size_t i = end.size(); i-- > 0;) {
    if (static_cast<uint8_t>(end[i]) < 0xff) {
      end[i] = static_cast<char>(static_cast<uint8_t>(end[i]) + 1);
      end.resize(i + 1);
      return end;
    }
  }
  return std::string(1, '\0');
}

std::string lock_key(std::string_view name, int64_t lease_id) {
  return fmt::format("{}/{:x}", name, lease_id);
}

}  // namespace etcd
}  // namespace lockstep
