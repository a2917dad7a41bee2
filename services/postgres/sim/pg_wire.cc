#include "services/postgres/sim/pg_wire.h"

#include <fmt/format.h>

#include "services/postgres/sim/pg_statement.h"

namespace lockstep::sim {

namespace {

constexpr int32_t kProtocol30 = 196608;  // 3 << 16
constexpr int32_t kSslRequest = 80877103;
constexpr int32_t kGssEncRequest = 80877104;
constexpr int32_t kCancelRequest = 80877102;
constexpr size_t kParamsMax = 64;  // a bound on a startup packet's parameters

int32_t read_i32(std::string_view bytes, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(bytes[i])); };
  return static_cast<int32_t>(byte(at) << 24 | byte(at + 1) << 16 | byte(at + 2) << 8 |
                              byte(at + 3));
}

void put_i32(std::string& out, int32_t value) {
  const auto v = static_cast<uint32_t>(value);
  out += static_cast<char>(v >> 24);
  out += static_cast<char>(v >> 16);
  out += static_cast<char>(v >> 8);
  out += static_cast<char>(v);
}

void put_i16(std::string& out, int16_t value) {
  const auto v = static_cast<uint16_t>(value);
  out += static_cast<char>(v >> 8);
  out += static_cast<char>(v);
}

void put_cstring(std::string& out, std::string_view text) {
  out += text;
  out += '\0';
}

// A typed message: its type byte, then its length (counting itself) and body.
std::string message(char type, const std::string& body) {
  std::string out(1, type);
  put_i32(out, static_cast<int32_t>(body.size() + 4));
  return out + body;
}

int32_t type_of(PgFunction function) {
  switch (function) {
    case PgFunction::try_advisory_lock:
    case PgFunction::advisory_unlock:
    case PgFunction::try_advisory_xact_lock:
    case PgFunction::terminate_backend: return 16;  // bool
    case PgFunction::advisory_lock:
    case PgFunction::advisory_unlock_all:
    case PgFunction::advisory_xact_lock: return 2278;  // void
    case PgFunction::backend_pid: return 23;           // int4
    case PgFunction::nextval: return 20;               // int8
  }
  return 25;
}

}  // namespace

void PgWireParser::feed(std::string_view bytes) {
  if (!error_.empty()) return;
  if (consumed_ > 0) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  buffer_ += bytes;
}

std::optional<PgFrontendMessage> PgWireParser::fail(std::string why) {
  error_ = std::move(why);
  return std::nullopt;
}

std::optional<PgFrontendMessage> PgWireParser::next() {
  if (!error_.empty()) return std::nullopt;
  return started_ ? next_typed() : next_untyped();
}

std::optional<PgFrontendMessage> PgWireParser::next_untyped() {
  const std::string_view rest = std::string_view(buffer_).substr(consumed_);
  if (rest.size() < 8) return std::nullopt;
  const int32_t length = read_i32(rest, 0);
  if (length < 8 || static_cast<size_t>(length) > kPgMessageBytesMax) {
    return fail(fmt::format("invalid length of startup packet: {}", length));
  }
  if (rest.size() < static_cast<size_t>(length)) return std::nullopt;
  const int32_t code = read_i32(rest, 4);
  const std::string_view body = rest.substr(8, static_cast<size_t>(length) - 8);
  consumed_ += static_cast<size_t>(length);
  PgFrontendMessage m;
  if (code == kSslRequest) {
    m.kind = PgFrontendMessage::Kind::ssl_request;
    return m;
  }
  if (code == kGssEncRequest) {
    m.kind = PgFrontendMessage::Kind::gss_request;
    return m;
  }
  if (code == kCancelRequest) {
    m.kind = PgFrontendMessage::Kind::cancel;
    return m;
  }
  if (code != kProtocol30) {
    return fail(fmt::format("unsupported frontend protocol {}.{}: the server supports 3.0",
                            code >> 16, code & 0xffff));
  }
  // name\0value\0 ... \0
  size_t at = 0;
  while (at < body.size() && body[at] != '\0') {
    const size_t name_end = body.find('\0', at);
    if (name_end == std::string_view::npos) return fail("startup packet has no terminator");
    const size_t value_end = body.find('\0', name_end + 1);
    if (value_end == std::string_view::npos) return fail("startup packet has no terminator");
    if (m.params.size() >= kParamsMax) return fail("startup packet has too many parameters");
    m.params.emplace(std::string(body.substr(at, name_end - at)),
                     std::string(body.substr(name_end + 1, value_end - name_end - 1)));
    at = value_end + 1;
  }
  m.kind = PgFrontendMessage::Kind::startup;
  started_ = true;
  return m;
}

std::optional<PgFrontendMessage> PgWireParser::next_typed() {
  const std::string_view rest = std::string_view(buffer_).substr(consumed_);
  if (rest.size() < 5) return std::nullopt;
  const char type = rest[0];
  const int32_t length = read_i32(rest, 1);
  if (length < 4 || static_cast<size_t>(length) > kPgMessageBytesMax) {
    return fail(fmt::format("invalid message length {} for message type \"{}\"", length, type));
  }
  if (rest.size() < static_cast<size_t>(length) + 1) return std::nullopt;
  const std::string_view body = rest.substr(5, static_cast<size_t>(length) - 4);
  consumed_ += static_cast<size_t>(length) + 1;
  PgFrontendMessage m{.type = type};
  if (type == 'Q') {
    if (body.empty() || body.back() != '\0') return fail("query message has no terminator");
    m.kind = PgFrontendMessage::Kind::query;
    m.sql = std::string(body.substr(0, body.size() - 1));
  } else if (type == 'X') {
    m.kind = PgFrontendMessage::Kind::terminate;
  }
  return m;
}

PgSettings settings_of_startup(const std::map<std::string, std::string>& params) {
  PgSettings settings;
  auto it = params.find("options");
  if (it == params.end()) return settings;
  std::vector<std::string> words;
  std::string word;
  for (const char ch : it->second + " ") {
    if (ch == ' ') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      word += ch;
    }
  }
  const auto add = [&settings](std::string_view assignment) {
    const size_t eq = assignment.find('=');
    if (eq == std::string_view::npos || eq == 0) return;
    settings.emplace_back(std::string(assignment.substr(0, eq)),
                          std::string(assignment.substr(eq + 1)));
  };
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string_view w = words[i];
    if (w == "-c" && i + 1 < words.size()) {
      add(words[++i]);
    } else if (w.starts_with("-c")) {
      add(w.substr(2));
    } else if (w.starts_with("--")) {
      add(w.substr(2));
    }
  }
  return settings;
}

std::optional<PgColumn> result_column(const std::string& sql) {
  const PgParse parse = parse_statement(sql);
  if (!parse.statement || parse.statement->kind != PgStatement::Kind::select) return std::nullopt;
  const PgStatement& s = *parse.statement;
  switch (s.shape) {
    case PgStatement::Shape::call:
      return PgColumn{std::string(sql_name(s.first.function)), type_of(s.first.function)};
    case PgStatement::Shape::case_when: return PgColumn{"case", type_of(s.second.function)};
    case PgStatement::Shape::from:
      return PgColumn{std::string(sql_name(s.second.function)), type_of(s.second.function)};
  }
  return std::nullopt;
}

namespace pg_wire {

std::string authentication_ok() {
  std::string body;
  put_i32(body, 0);
  return message('R', body);
}

std::string parameter_status(std::string_view name, std::string_view value) {
  std::string body;
  put_cstring(body, name);
  put_cstring(body, value);
  return message('S', body);
}

std::string backend_key_data(int32_t pid, int32_t secret) {
  std::string body;
  put_i32(body, pid);
  put_i32(body, secret);
  return message('K', body);
}

std::string ready_for_query(char status) { return message('Z', std::string(1, status)); }

std::string row_description(const std::vector<PgColumn>& columns) {
  std::string body;
  put_i16(body, static_cast<int16_t>(columns.size()));
  for (const PgColumn& column : columns) {
    put_cstring(body, column.name);
    put_i32(body, 0);  // not a table's column
    put_i16(body, 0);
    put_i32(body, column.type_oid);
    put_i16(body, static_cast<int16_t>(column.type_oid == 20 ? 8 : column.type_oid == 16 ? 1 : 4));
    put_i32(body, -1);  // no type modifier
    put_i16(body, 0);   // text format
  }
  return message('T', body);
}

std::string data_row(const std::vector<std::optional<std::string>>& values) {
  std::string body;
  put_i16(body, static_cast<int16_t>(values.size()));
  for (const std::optional<std::string>& value : values) {
    if (!value) {
      put_i32(body, -1);
      continue;
    }
    put_i32(body, static_cast<int32_t>(value->size()));
    body += *value;
  }
  return message('D', body);
}

std::string command_complete(std::string_view tag) {
  std::string body;
  put_cstring(body, tag);
  return message('C', body);
}

std::string error_response(std::string_view severity, std::string_view sqlstate,
                           std::string_view message_text, bool notice) {
  std::string body;
  body += 'S';
  put_cstring(body, severity);
  body += 'V';
  put_cstring(body, severity);
  body += 'C';
  put_cstring(body, sqlstate);
  body += 'M';
  put_cstring(body, message_text);
  body += '\0';
  return message(notice ? 'N' : 'E', body);
}

}  // namespace pg_wire

}  // namespace lockstep::sim
