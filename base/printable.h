#pragma once
// Text from a peer (a driver's stderr, a line it wrote) made fit for one line of a message: a
// control byte (newline and escape sequences included) becomes \xNN, so a hostile peer cannot
// spill lines or drive the terminal of whoever reads the output. Other bytes are kept (JSON output
// replaces bytes that are not UTF-8 where it is written). Cut at bytes_max bytes of input.
#include <cstddef>
#include <string>
#include <string_view>

namespace lockstep {

inline std::string printable(std::string_view text, size_t bytes_max = 4096) {
  static constexpr char kHex[] = "0123456789abcdef";
  if (text.size() > bytes_max) text = text.substr(0, bytes_max);
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace lockstep
