#include "scenarios/history/history.h"

#include <utility>

#include <fmt/format.h>

#include "base/check.h"

namespace lockstep {

size_t History::add(HistoryEvent e) {
  // Checkers sweep in index order and rely on it being true-time order.
  LOCKSTEP_CHECK(events_.empty() || events_.back().time_us <= e.time_us,
                 "history events are appended in true-time order");
  e.index = events_.size();
  auto id_of = [](std::unordered_map<std::string, uint32_t>& ids, const std::string& text) {
    return ids.try_emplace(text, static_cast<uint32_t>(ids.size())).first->second;
  };
  e.key_id = id_of(key_ids_, e.key);
  e.server_id = id_of(server_ids_, e.server);
  e.value_id = id_of(value_ids_, e.value);
  events_.push_back(std::move(e));
  return events_.back().index;
}

std::string_view to_string(EventKind kind) {
  switch (kind) {
    case EventKind::invoke: return "invoke";
    case EventKind::complete: return "complete";
    case EventKind::cs_enter: return "cs_enter";
    case EventKind::cs_exit: return "cs_exit";
    case EventKind::access: return "access";
    case EventKind::grant: return "grant";
    case EventKind::extend: return "extend";
    case EventKind::revoke: return "revoke";
    case EventKind::fault: return "fault";
    case EventKind::heal: return "heal";
    case EventKind::final_value: return "final_value";
    case EventKind::key_state: return "key_state";
    case EventKind::stuck: return "stuck";
    case EventKind::token: return "token";
  }
  return "?";
}

std::string_view to_string(Op op) {
  switch (op) {
    case Op::none: return "none";
    case Op::acquire: return "acquire";
    case Op::release: return "release";
    case Op::extend: return "extend";
    case Op::is_locked: return "is_locked";
    case Op::read: return "read";
    case Op::write: return "write";
  }
  return "?";
}

std::string_view to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::none: return "none";
    case Outcome::ok: return "ok";
    case Outcome::fail: return "fail";
    case Outcome::contended: return "contended";
    case Outcome::error: return "error";
    case Outcome::refused: return "refused";
  }
  return "?";
}

namespace {

constexpr size_t kValueCharsShown = 8;

// Owner values are long random strings; a prefix is enough to tell them apart in a trace.
std::string short_value(std::string_view value) {
  if (value.size() <= kValueCharsShown) return std::string(value);
  return fmt::format("{}..", value.substr(0, kValueCharsShown));
}

// " c1" for a client, "" for none.
std::string client_suffix(std::string_view label, int client) {
  if (client < 0) return "";
  return fmt::format(" {}c{}", label, client);
}

std::string token_suffix(const HistoryEvent& e) {
  return e.has_token ? fmt::format(" token={}", e.token) : std::string();
}

std::string describe_client_op(const HistoryEvent& e) {
  std::string line = fmt::format("c{} {} {}", e.client, to_string(e.kind), to_string(e.op));
  if (e.kind == EventKind::complete) line += fmt::format(" {}", to_string(e.outcome));
  line += fmt::format(" key={}{}", e.key, token_suffix(e));
  if (e.local_valid_until_us != 0)
    line += fmt::format(" valid_left={}us", e.local_valid_until_us - e.local_now_us);
  return line;
}

std::string describe_critical_section(const HistoryEvent& e) {
  return fmt::format("c{} {} key={}{}", e.client, to_string(e.kind), e.key,
                     e.shared ? " shared" : "");
}

std::string describe_access(const HistoryEvent& e) {
  return fmt::format("access {} {}{} key={}{} counter={}", to_string(e.op), to_string(e.outcome),
                     client_suffix("", e.client), e.key, token_suffix(e), e.counter);
}

std::string describe_lease(const HistoryEvent& e) {
  std::string line = fmt::format("server={} {} key={}", e.server, to_string(e.kind), e.key);
  // A grant's client is the owner; an extend's or revoke's client is whoever asked for it.
  if (e.kind == EventKind::grant) line += client_suffix("owner=", e.client);
  line += fmt::format(" value={}", short_value(e.value));
  if (e.kind != EventKind::revoke) line += fmt::format(" ttl={}us", e.ttl_us);
  line += token_suffix(e);
  if (e.kind != EventKind::grant) line += client_suffix("by=", e.client);
  return line;
}

std::string describe_fault(const HistoryEvent& e) {
  std::string line = fmt::format("fault {}", e.detail);
  if (e.end_us > e.time_us) line += fmt::format(" until={}us", e.end_us);
  return line;
}

std::string describe_final(const HistoryEvent& e) {
  if (e.key.empty()) return fmt::format("final_value counter={}", e.counter);
  return fmt::format("final_value key={} counter={}", e.key, e.counter);
}

std::string describe_stuck(const HistoryEvent& e) {
  std::string line = fmt::format("stuck c{}", e.client);
  if (e.op != Op::none) line += fmt::format(" in {}", to_string(e.op));
  if (!e.key.empty()) line += fmt::format(" key={}", e.key);
  return line;
}

std::string describe_body(const HistoryEvent& e) {
  switch (e.kind) {
    case EventKind::invoke:
    case EventKind::complete: return describe_client_op(e);
    case EventKind::cs_enter:
    case EventKind::cs_exit: return describe_critical_section(e);
    case EventKind::access: return describe_access(e);
    case EventKind::grant:
    case EventKind::extend:
    case EventKind::revoke: return describe_lease(e);
    case EventKind::fault: return describe_fault(e);
    case EventKind::heal: return "heal";
    case EventKind::final_value: return describe_final(e);
    case EventKind::key_state: return fmt::format("key_state key={} entries={}", e.key, e.counter);
    case EventKind::stuck: return describe_stuck(e);
    case EventKind::token:
      return fmt::format("server={} token key={}{}{}", e.server, e.key,
                         client_suffix("to=", e.client), token_suffix(e));
  }
  return "?";
}

}  // namespace

std::string describe(const HistoryEvent& e) {
  std::string line = describe_body(e);
  // A fault's detail is its body; for anything else it is an aside (an error's message, say).
  if (e.kind != EventKind::fault && !e.detail.empty()) line += fmt::format(" ({})", e.detail);
  return line;
}

}  // namespace lockstep
