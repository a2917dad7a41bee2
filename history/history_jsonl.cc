#include "history/history_jsonl.h"

#include <array>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "history/history_rules.h"
#include "history/json_input.h"

namespace lockstep {

namespace {

using nlohmann::json;

template <typename Enum, size_t N>
std::string names_of(const std::array<Enum, N>& values) {
  std::string out;
  for (Enum v : values) out += (out.empty() ? "" : ", ") + std::string(to_string(v));
  return out;
}

template <typename Enum, size_t N>
std::optional<Enum> parse_enum(const std::array<Enum, N>& values, std::string_view name) {
  for (Enum v : values) {
    if (to_string(v) == name) return v;
  }
  return std::nullopt;
}

json event_json(const HistoryEvent& e) {
  json j = {{"time_us", e.time_us}, {"kind", to_string(e.kind)}};
  if (e.client >= 0) j["client"] = e.client;
  if (!e.key.empty()) j["key"] = e.key;
  if (e.op != Op::none) j["op"] = to_string(e.op);
  if (e.outcome != Outcome::none) j["outcome"] = to_string(e.outcome);
  if (e.has_token) j["token"] = e.token;
  if (e.shared) j["shared"] = true;
  if (e.kills_client) j["kills_client"] = true;
  if (!e.server.empty()) j["server"] = e.server;
  if (!e.value.empty()) j["value"] = e.value;
  if (e.ttl_us != 0) j["ttl_us"] = e.ttl_us;
  if (e.lease_since_us != 0) j["lease_since_us"] = e.lease_since_us;
  if (e.counter != 0) j["counter"] = e.counter;
  if (e.end_us != 0) j["end_us"] = e.end_us;
  if (!e.detail.empty()) j["detail"] = e.detail;
  if (e.kind == EventKind::fault) {
    j["fault"] = to_string(e.fault);
    if (e.amount != 0) j["amount"] = e.amount;
  }
  if (e.local_valid_until_us != 0) {
    j["local_now_us"] = e.local_now_us;
    j["local_valid_until_us"] = e.local_valid_until_us;
    if (e.validity_assumed) j["validity_assumed"] = true;
  }
  return j;
}

json envelope_json(const FaultEnvelope& v) {
  json j = {{"client_slow_ppm_max", v.client_slow_ppm_max},
            {"server_fast_ppm_max", v.server_fast_ppm_max},
            {"client_wall_clock", v.client_wall_clock},
            {"server_wall_clock", v.server_wall_clock},
            {"network", v.network},
            {"failover", v.failover},
            {"server_restart", to_string(v.server_restart)},
            {"server_pause", v.server_pause}};
  // Only where it is so: a history of any other lock reads as it did before the field existed.
  if (v.clients_compare_wall_deadlines) j["clients_compare_wall_deadlines"] = true;
  if (!v.connection_resets) j["connection_resets"] = false;
  return j;
}

// Reads one line's object field by field, each with its type checked and named on failure.
class LineReader {
 public:
  LineReader(size_t line, const json& object) : line_(line), object_(object) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw HistoryFormatError(line_, field, what);
  }
  const json* find(const char* field) const {
    const auto it = object_.find(field);
    return it == object_.end() ? nullptr : &*it;
  }
  // Within [min, max]: a number outside is refused, never cut to fit (2^32 is not client 0).
  int64_t integer(const char* field, int64_t min, int64_t fallback, int64_t max = INT64_MAX) const {
    const json* v = find(field);
    if (v == nullptr) return fallback;
    if (!v->is_number_integer()) fail(field, "must be an integer");
    if (v->is_number_unsigned() && v->get<uint64_t>() > INT64_MAX) fail(field, "is too large");
    const int64_t n = v->get<int64_t>();
    if (n < min) fail(field, fmt::format("must be at least {}", min));
    if (n > max) fail(field, fmt::format("must be at most {}", max));
    return n;
  }
  uint64_t unsigned_integer(const char* field) const {
    const json* v = find(field);
    if (v == nullptr || !v->is_number_integer() ||
        (!v->is_number_unsigned() && v->get<int64_t>() < 0))
      fail(field, "must be a non-negative integer");
    return v->get<uint64_t>();
  }
  std::string text(const char* field) const {
    const json* v = find(field);
    if (v == nullptr) return {};
    if (!v->is_string()) fail(field, "must be a string");
    return v->get<std::string>();
  }
  bool flag(const char* field) const {
    const json* v = find(field);
    if (v == nullptr) return false;
    if (!v->is_boolean()) fail(field, "must be true or false");
    return v->get<bool>();
  }
  template <typename Enum, size_t N>
  Enum choice(const char* field, const std::array<Enum, N>& values, Enum fallback) const {
    const json* v = find(field);
    if (v == nullptr) return fallback;
    if (!v->is_string()) fail(field, "must be a string");
    const std::optional<Enum> parsed = parse_enum(values, v->get<std::string>());
    if (!parsed)
      fail(field, fmt::format("is \"{}\"; valid: {}", v->get<std::string>(), names_of(values)));
    return *parsed;
  }
  void only(std::initializer_list<std::string_view> known) const {
    for (const auto& [name, value] : object_.items()) {
      bool ok = false;
      for (std::string_view k : known) ok = ok || k == name;
      if (!ok) fail(name, "is not a field of a history line (docs/history.schema.json)");
    }
  }

 private:
  size_t line_;
  const json& object_;
};

FaultEnvelope read_envelope(const LineReader& r) {
  r.only({"client_slow_ppm_max", "server_fast_ppm_max", "client_wall_clock", "server_wall_clock",
          "network", "failover", "server_restart", "server_pause", "clients_compare_wall_deadlines",
          "connection_resets"});
  FaultEnvelope v;
  v.client_slow_ppm_max = r.integer("client_slow_ppm_max", 0, 0);
  v.server_fast_ppm_max = r.integer("server_fast_ppm_max", 0, 0);
  v.client_wall_clock = r.flag("client_wall_clock");
  v.server_wall_clock = r.flag("server_wall_clock");
  v.network = r.flag("network");
  v.failover = r.flag("failover");
  v.server_restart = r.choice("server_restart", kRestartRulesAll, RestartRule::never);
  v.server_pause = r.flag("server_pause");
  v.clients_compare_wall_deadlines = r.flag("clients_compare_wall_deadlines");
  v.connection_resets = r.find("connection_resets") == nullptr || r.flag("connection_resets");
  return v;
}

HistoryMeta read_meta(size_t line, const LineReader& r) {
  r.only({"clients", "servers", "quorum", "fencing_on", "monotonic_tokens", "leases_from_clients",
          "end_us", "heal_us", "liveness_bound_us", "keyed", "errors_mean_not_applied",
          "envelope"});
  HistoryMeta meta;
  meta.clients = static_cast<int>(r.integer("clients", 0, 0, kHistoryClientsMax));
  meta.servers = static_cast<int>(r.integer("servers", 0, 1, kHistoryServersMax));
  meta.quorum = static_cast<int>(r.integer("quorum", 1, 1, kHistoryServersMax));
  meta.fencing_on = r.flag("fencing_on");
  meta.monotonic_tokens = r.flag("monotonic_tokens");
  meta.leases_from_clients = r.flag("leases_from_clients");
  meta.end_us = r.integer("end_us", 0, 0);
  meta.heal_us = r.integer("heal_us", 0, 0);
  meta.liveness_bound_us = r.integer("liveness_bound_us", 0, 0);
  meta.keyed = r.flag("keyed");
  meta.errors_mean_not_applied = r.flag("errors_mean_not_applied");
  // Absent: a history that claims no envelope, so no fault is inside one and any may excuse.
  meta.envelope = {.client_wall_clock = false, .network = false, .server_pause = false};
  if (const json* envelope = r.find("envelope")) {
    if (!envelope->is_object()) r.fail("envelope", "must be an object");
    meta.envelope = read_envelope(LineReader(line, *envelope));
  }
  return meta;
}

HistoryEvent read_event(const LineReader& r) {
  r.only({"time_us",         "kind",   "client",         "key",          "op",
          "outcome",         "token",  "shared",         "kills_client", "server",
          "value",           "ttl_us", "lease_since_us", "counter",      "end_us",
          "detail",          "fault",  "amount",         "local_now_us", "local_valid_until_us",
          "validity_assumed"});
  if (r.find("time_us") == nullptr) r.fail("time_us", "is missing");
  if (r.find("kind") == nullptr) r.fail("kind", "is missing");
  HistoryEvent e;
  e.time_us = r.integer("time_us", 0, 0);
  e.kind = r.choice("kind", kEventKindsAll, EventKind::invoke);
  e.client = static_cast<int>(r.integer("client", 0, -1, kHistoryClientsMax - 1));
  e.key = r.text("key");
  e.op = r.choice("op", kOpsAll, Op::none);
  e.outcome = r.choice("outcome", kOutcomesAll, Outcome::none);
  if (r.find("token") != nullptr) {
    e.has_token = true;
    e.token = r.unsigned_integer("token");
  }
  e.shared = r.flag("shared");
  e.kills_client = r.flag("kills_client");
  e.server = r.text("server");
  e.value = r.text("value");
  e.ttl_us = r.integer("ttl_us", 0, 0);
  e.lease_since_us = r.integer("lease_since_us", 0, 0, e.time_us);  // never after the grant
  e.counter = r.integer("counter", INT64_MIN, 0);
  e.end_us = r.integer("end_us", 0, 0);
  e.detail = r.text("detail");
  e.fault = r.choice("fault", kFaultKindsAll, FaultKind::other);
  e.amount = r.integer("amount", INT64_MIN, 0);
  e.local_now_us = r.integer("local_now_us", INT64_MIN, 0);
  e.local_valid_until_us = r.integer("local_valid_until_us", INT64_MIN, 0);
  e.validity_assumed = r.flag("validity_assumed");
  return e;
}

}  // namespace

HistoryFormatError::HistoryFormatError(size_t line, const std::string& field,
                                       const std::string& what)
    : std::invalid_argument(field.empty() ? fmt::format("line {}: {}", line, what)
                                          : fmt::format("line {}: \"{}\" {}", line, field, what)),
      line_(line) {}

void write_history_jsonl(const History& history, std::ostream& out) {
  const HistoryMeta& m = history.meta;
  const json meta = {{"meta",
                      {{"clients", m.clients},
                       {"servers", m.servers},
                       {"quorum", m.quorum},
                       {"fencing_on", m.fencing_on},
                       {"monotonic_tokens", m.monotonic_tokens},
                       {"leases_from_clients", m.leases_from_clients},
                       {"end_us", m.end_us},
                       {"heal_us", m.heal_us},
                       {"liveness_bound_us", m.liveness_bound_us},
                       {"keyed", m.keyed},
                       {"errors_mean_not_applied", m.errors_mean_not_applied},
                       {"envelope", envelope_json(m.envelope)}}}};
  out << json_text(meta, -1) << "\n";
  for (const HistoryEvent& e : history.events()) out << json_text(event_json(e), -1) << "\n";
}

History read_history_jsonl(std::istream& in, size_t events_max) {
  History history;
  std::string text;
  size_t line = 0;
  bool have_meta = false;
  TimeUs last_us = 0;
  std::vector<size_t> line_of;  // each event's line, to name it when a rule is broken
  for (;;) {
    try {
      if (!read_bounded_line(in, text, kHistoryLineBytesMax)) break;
    } catch (const InputError& e) {
      throw HistoryFormatError(line + 1, "", e.what());
    }
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines
    json j;
    try {
      j = parse_json_bounded(text);
    } catch (const json::parse_error& e) {
      throw HistoryFormatError(line, "", fmt::format("is not JSON ({})", e.what()));
    } catch (const InputError& e) {
      throw HistoryFormatError(line, "", e.what());
    }
    if (!j.is_object()) throw HistoryFormatError(line, "", "is not a JSON object");
    if (!have_meta) {
      if (!j.contains("meta") || j.size() != 1 || !j["meta"].is_object()) {
        throw HistoryFormatError(line, "meta", "must come first, alone: {\"meta\": {...}}");
      }
      history.meta = read_meta(line, LineReader(line, j["meta"]));
      have_meta = true;
      continue;
    }
    if (history.size() >= events_max) {
      throw HistoryFormatError(line, "", fmt::format("more than {} events", events_max));
    }
    HistoryEvent e = read_event(LineReader(line, j));
    if (e.time_us < last_us) {
      throw HistoryFormatError(line, "time_us",
                               fmt::format("goes back in time ({} after {})", e.time_us, last_us));
    }
    last_us = e.time_us;
    history.add(std::move(e));
    line_of.push_back(line);
  }
  if (in.bad()) throw HistoryFormatError(line, "", "could not be read");
  if (!have_meta) throw HistoryFormatError(line, "meta", "is missing: the file has no lines");
  if (history.meta.end_us < last_us) history.meta.end_us = last_us;
  // The schema's rules across lines: what a recorder cannot have written, refused rather than
  // judged (a history that breaks them would be judged wrongly, in either direction).
  if (const std::optional<HistoryRuleBreak> broken = first_rule_break(history)) {
    const size_t at = broken->event < line_of.size() ? line_of[broken->event] : 1;
    throw HistoryFormatError(at, "", broken->rule);
  }
  return history;
}

}  // namespace lockstep
