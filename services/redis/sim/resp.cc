#include "services/redis/sim/resp.h"

#include <charconv>

#include <fmt/format.h>

namespace lockstep::sim {

namespace {

// A RESP length: decimal digits, an optional leading '-' (only -1 is meaningful, for nil).
bool parse_length(std::string_view text, int64_t& out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

void RespParser::feed(std::string_view bytes) {
  if (!error_.empty()) return;
  buffer_.erase(0, consumed_);  // what was parsed already is gone: the buffer holds the rest
  consumed_ = 0;
  if (buffer_.size() - consumed_ + bytes.size() > kRespBufferMaxBytes) {
    fail("too big request");
    return;
  }
  buffer_.append(bytes);
}

std::optional<std::string_view> RespParser::line_at(size_t pos) const {
  const size_t end = buffer_.find("\r\n", pos);
  if (end == std::string::npos) return std::nullopt;
  return std::string_view(buffer_).substr(pos, end - pos);
}

std::optional<std::vector<std::string>> RespParser::fail(std::string what) {
  error_ = "Protocol error: " + what;
  buffer_.clear();
  consumed_ = 0;
  return std::nullopt;
}

std::optional<std::vector<std::string>> RespParser::next() {
  // Every loop here is bounded by the buffer: each step consumes bytes or returns.
  while (error_.empty() && consumed_ < buffer_.size()) {
    size_t pos = consumed_;
    if (buffer_[pos] != '*') {
      // An inline command ("PING\r\n"): words separated by spaces.
      const std::optional<std::string_view> line = line_at(pos);
      if (!line) return std::nullopt;
      consumed_ = pos + line->size() + 2;
      std::vector<std::string> argv;
      size_t at = 0;
      while (at < line->size()) {
        const size_t space = line->find(' ', at);
        const size_t stop = space == std::string_view::npos ? line->size() : space;
        if (stop > at) argv.emplace_back(line->substr(at, stop - at));
        at = stop + 1;
      }
      if (argv.empty()) continue;  // an empty line: Redis ignores it
      return argv;
    }
    const std::optional<std::string_view> header = line_at(pos + 1);
    if (!header) return std::nullopt;
    int64_t count = 0;
    if (!parse_length(*header, count) || count > static_cast<int64_t>(kRespArgsMax)) {
      return fail("invalid multibulk length");
    }
    pos += 1 + header->size() + 2;
    std::vector<std::string> argv;
    for (int64_t i = 0; i < count; ++i) {
      if (pos >= buffer_.size()) return std::nullopt;
      if (buffer_[pos] != '$') {
        return fail(fmt::format("expected '$', got '{}'", buffer_[pos]));
      }
      const std::optional<std::string_view> size_line = line_at(pos + 1);
      if (!size_line) return std::nullopt;
      int64_t size = 0;
      if (!parse_length(*size_line, size) || size < 0 ||
          size > static_cast<int64_t>(kRespBufferMaxBytes)) {
        return fail("invalid bulk length");
      }
      pos += 1 + size_line->size() + 2;
      const size_t bytes = static_cast<size_t>(size);
      if (buffer_.size() < pos + bytes + 2) return std::nullopt;
      if (buffer_.compare(pos + bytes, 2, "\r\n") != 0) return fail("invalid bulk terminator");
      argv.emplace_back(buffer_, pos, bytes);
      pos += bytes + 2;
    }
    consumed_ = pos;
    if (argv.empty()) continue;  // "*0\r\n": Redis ignores it
    return argv;
  }
  return std::nullopt;
}

std::string encode_reply(const RedisReply& reply) {
  switch (reply.type) {
    case RedisReply::Type::status: return "+" + reply.str + "\r\n";
    case RedisReply::Type::error: return "-" + reply.str + "\r\n";
    case RedisReply::Type::integer: return fmt::format(":{}\r\n", reply.integer);
    case RedisReply::Type::nil: return "$-1\r\n";
    case RedisReply::Type::string: return fmt::format("${}\r\n{}\r\n", reply.str.size(), reply.str);
    case RedisReply::Type::array: {
      std::string out = fmt::format("*{}\r\n", reply.elements.size());
      for (const RedisReply& element : reply.elements) out += encode_reply(element);
      return out;
    }
  }
  return "$-1\r\n";
}

std::string encode_command(const std::vector<std::string>& argv) {
  std::string out = fmt::format("*{}\r\n", argv.size());
  for (const std::string& arg : argv) out += fmt::format("${}\r\n{}\r\n", arg.size(), arg);
  return out;
}

}  // namespace lockstep::sim
