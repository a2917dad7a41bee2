#include "services/ext/driver/protocol.h"

#include <charconv>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace lockstep::ext {

namespace {

using nlohmann::json;

// Each reader returns the field or sets `error` (the first problem wins) and returns a default.
struct Reader {
  const json& object;
  std::string error;

  const json* field(const char* name, json::value_t type, const char* type_name) {
    auto it = object.find(name);
    if (it == object.end()) return fail(fmt::format("no \"{}\"", name));
    const bool number_ok = type == json::value_t::number_integer && it->is_number_integer();
    if (it->type() != type && !number_ok)
      return fail(fmt::format("\"{}\" is not {}", name, type_name));
    return &*it;
  }
  std::nullptr_t fail(std::string message) {
    if (error.empty()) error = std::move(message);
    return nullptr;
  }
  std::string string(const char* name) {
    const json* v = field(name, json::value_t::string, "a string");
    return v != nullptr ? v->get<std::string>() : std::string();
  }
  std::string optional_string(const char* name) {
    return object.contains(name) ? string(name) : std::string();
  }
  bool boolean(const char* name) {
    const json* v = field(name, json::value_t::boolean, "a boolean");
    return v != nullptr && v->get<bool>();
  }
  int64_t integer(const char* name) {
    const json* v = field(name, json::value_t::number_integer, "an integer");
    return v != nullptr ? v->get<int64_t>() : 0;
  }
  // A CLOCK_MONOTONIC reading: a decimal string of a non-negative integer.
  int64_t nanoseconds(const char* name) {
    const std::string text = string(name);
    if (!error.empty()) return 0;
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < 0 || text.empty()) {
      fail(fmt::format("\"{}\" is not a decimal count of nanoseconds: \"{}\"", name, text));
      return 0;
    }
    return value;
  }
  std::optional<LibraryError> library_error() {
    if (!object.contains("err")) return std::nullopt;
    const json* err = field("err", json::value_t::object, "an object");
    if (err == nullptr) return std::nullopt;
    Reader inner{*err, {}};
    LibraryError out{.name = inner.string("name"), .message = inner.string("message")};
    if (!inner.error.empty()) fail("err: " + inner.error);
    return out;
  }
};

std::optional<TokenKind> token_kind(std::string_view text) {
  if (text == "monotonic") return TokenKind::monotonic;
  if (text == "random") return TokenKind::random;
  if (text == "none") return TokenKind::none;
  return std::nullopt;
}

std::optional<Status> status_of(std::string_view text) {
  for (Status s : {Status::ok, Status::contended, Status::not_owner, Status::unknown,
                   Status::unsupported, Status::error, Status::bad_request}) {
    if (to_string(s) == text) return s;
  }
  return std::nullopt;
}

Line decode_ready(const json& object) {
  Reader r{object, {}};
  Ready ready{.name = r.string("name"),
              .version = r.string("version"),
              .protocol = static_cast<int>(r.integer("protocol")),
              .now_ns = r.nanoseconds("now_ns")};
  if (const json* caps = r.field("capabilities", json::value_t::object, "an object");
      caps != nullptr) {
    Reader c{*caps, {}};
    ready.capabilities.extend = c.boolean("extend");
    ready.capabilities.is_locked = c.boolean("is_locked");
    const std::string token = c.string("token");
    if (c.error.empty()) {
      if (auto kind = token_kind(token)) {
        ready.capabilities.token = *kind;
      } else {
        c.fail(fmt::format("\"token\" is \"{}\", not monotonic, random or none", token));
      }
    }
    if (!c.error.empty()) r.fail("capabilities: " + c.error);
  }
  if (!r.error.empty()) return DecodeError{"ready line: " + r.error};
  return ready;
}

Line decode_response(const json& object) {
  Reader r{object, {}};
  Response response{.id = r.integer("id")};
  const std::string status = r.string("status");
  const bool ok = r.boolean("ok");
  response.token = r.optional_string("token");
  response.err = r.library_error();
  response.t0_ns = r.nanoseconds("t0_ns");
  response.t1_ns = r.nanoseconds("t1_ns");
  if (object.contains("valid_until_ms")) response.valid_until_ms = r.integer("valid_until_ms");
  if (r.error.empty()) {
    if (auto s = status_of(status)) {
      response.status = *s;
      if (ok != (*s == Status::ok))
        r.fail(fmt::format("\"ok\" is {} but \"status\" is \"{}\"", ok, status));
    } else {
      r.fail(fmt::format("unknown status \"{}\"", status));
    }
  }
  if (r.error.empty() && response.t1_ns < response.t0_ns) r.fail("t1_ns is before t0_ns");
  if (r.error.empty() && object.contains("bench")) {
    if (const json* bench = r.field("bench", json::value_t::object, "an object");
        bench != nullptr) {
      Reader b{*bench, {}};
      response.bench = BenchCounts{.successes = b.integer("successes"),
                                   .attempts = b.integer("attempts"),
                                   .releases = b.integer("releases"),
                                   .release_not_owner = b.integer("release_not_owner"),
                                   .loops = b.integer("loops"),
                                   .start_ns = b.nanoseconds("start_ns"),
                                   .end_ns = b.nanoseconds("end_ns")};
      if (bench->contains("commands")) response.bench->commands = b.integer("commands");
      if (b.error.empty() && response.bench->end_ns < response.bench->start_ns)
        b.fail("end_ns is before start_ns");
      if (!b.error.empty()) r.fail("bench: " + b.error);
    }
  }
  if (!r.error.empty()) return DecodeError{"response: " + r.error};
  return response;
}

Line decode_event(const json& object) {
  Reader r{object, {}};
  Event event{.event = r.string("event"),
              .handle = r.optional_string("handle"),
              .key = r.optional_string("key"),
              .t_ns = r.nanoseconds("t_ns"),
              .err = r.library_error()};
  if (r.error.empty() && event.event != "lock_lost")
    r.fail(fmt::format("unknown event \"{}\"", event.event));
  if (!r.error.empty()) return DecodeError{"event: " + r.error};
  return event;
}

}  // namespace

std::string_view to_string(TokenKind kind) {
  switch (kind) {
    case TokenKind::monotonic: return "monotonic";
    case TokenKind::random: return "random";
    case TokenKind::none: return "none";
  }
  return "none";
}

std::string_view to_string(Status status) {
  switch (status) {
    case Status::ok: return "ok";
    case Status::contended: return "contended";
    case Status::not_owner: return "not_owner";
    case Status::unknown: return "unknown";
    case Status::unsupported: return "unsupported";
    case Status::error: return "error";
    case Status::bad_request: return "bad_request";
  }
  return "error";
}

std::string_view to_string(Op op) {
  switch (op) {
    case Op::acquire: return "acquire";
    case Op::release: return "release";
    case Op::extend: return "extend";
    case Op::is_locked: return "is_locked";
    case Op::pause: return "pause";
    case Op::shutdown: return "shutdown";
    case Op::ping: return "ping";
    case Op::bench: return "bench";
  }
  return "shutdown";
}

Line decode_line(std::string_view line) {
  if (line.size() > kLineMaxBytes)
    return DecodeError{fmt::format("a line of {} bytes (max {})", line.size(), kLineMaxBytes)};
  const json object = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return DecodeError{"not JSON"};
  if (!object.is_object()) return DecodeError{"not a JSON object"};
  if (object.contains("ready")) return decode_ready(object);
  if (object.contains("event")) return decode_event(object);
  if (object.contains("id")) return decode_response(object);
  return DecodeError{"neither a ready line, a response nor an event"};
}

std::string encode(const Request& request) {
  json out = {{"id", request.id}, {"op", to_string(request.op)}};
  if (request.client >= 0) out["client"] = request.client;
  switch (request.op) {
    case Op::acquire:
      out["handle"] = request.handle;
      out["key"] = request.key;
      out["ttl_ms"] = request.ttl_ms;
      break;
    case Op::extend:
      out["handle"] = request.handle;
      out["ttl_ms"] = request.ttl_ms;
      break;
    case Op::release:
    case Op::is_locked: out["handle"] = request.handle; break;
    case Op::pause: out["duration_ms"] = request.duration_ms; break;
    case Op::shutdown:
    case Op::ping: break;
    case Op::bench:
      out["key"] = request.key;
      out["ttl_ms"] = request.ttl_ms;
      out["hold_ms"] = request.hold_ms;
      out["loops"] = request.loops;
      if (request.retry_max_ms > 0) out["retry_max_ms"] = request.retry_max_ms;
      if (request.start_ns > 0) out["start_ns"] = std::to_string(request.start_ns);
      if (request.stop_ns > 0) {
        out["stop_ns"] = std::to_string(request.stop_ns);
      } else {
        out["duration_ms"] = request.duration_ms;
      }
      break;
  }
  // Replace invalid UTF-8 rather than throw: handles are ours, but a key could be anything.
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace lockstep::ext
