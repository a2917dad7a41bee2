#include "history/history.h"

#include <iterator>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "base/check.h"

namespace lockstep {

size_t History::add(HistoryEvent&& e) {
  // Checkers sweep in index order and rely on it being true-time order.
  LOCKSTEP_CHECK(events_.empty() || events_.back().time_us <= e.time_us,
                 "history events are appended in true-time order");
  e.index = events_.size();
  e.key_id = key_ids_.id_of(e.key);
  e.server_id = server_ids_.id_of(e.server);
  e.value_id = value_ids_.id_of(e.value);
  events_.push_back(std::move(e));
  return events_.back().index;
}

uint32_t History::Ids::id_of(const std::string& text) {
  const auto look_up = [this](const std::string& s) {
    return ids_.try_emplace(s, static_cast<uint32_t>(ids_.size())).first->second;
  };
  if (text.empty()) {
    if (empty_id_ == UINT32_MAX) empty_id_ = look_up(text);
    return empty_id_;
  }
  if (last_id_ != UINT32_MAX && text == last_) return last_id_;
  last_id_ = look_up(text);
  last_ = text;
  return last_id_;
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
    case EventKind::renewal: return "renewal";
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
    case Outcome::unknown: return "unknown";
  }
  return "?";
}

namespace {

constexpr size_t kValueCharsShown = 8;

// A line is written into one buffer, piece by piece: describe() runs for every history event of a
// run whose trace is read (run, replay, a counterexample), and a string per piece was most of it.
using Line = fmt::memory_buffer;

template <typename... Args>
void put(Line& out, fmt::format_string<Args...> format, Args&&... args) {
  fmt::format_to(std::back_inserter(out), format, std::forward<Args>(args)...);
}

// Owner values are long random strings; a prefix is enough to tell them apart in a trace.
void put_short_value(Line& out, std::string_view value) {
  if (value.size() <= kValueCharsShown) return put(out, "{}", value);
  put(out, "{}..", value.substr(0, kValueCharsShown));
}

// " c1" for a client, "" for none.
void put_client(Line& out, std::string_view label, int client) {
  if (client >= 0) put(out, " {}c{}", label, client);
}

void put_token(Line& out, const HistoryEvent& e) {
  if (e.has_token) put(out, " token={}", e.token);
}

void describe_client_op(Line& out, const HistoryEvent& e) {
  put(out, "c{} {} {}", e.client, to_string(e.kind), to_string(e.op));
  if (e.kind == EventKind::complete) put(out, " {}", to_string(e.outcome));
  put(out, " key={}", e.key);
  put_token(out, e);
  if (e.local_valid_until_us != 0)
    put(out, " valid_left={}us", e.local_valid_until_us - e.local_now_us);
}

void describe_critical_section(Line& out, const HistoryEvent& e) {
  put(out, "c{} {} key={}{}", e.client, to_string(e.kind), e.key, e.shared ? " shared" : "");
}

void describe_access(Line& out, const HistoryEvent& e) {
  put(out, "access {} {}", to_string(e.op), to_string(e.outcome));
  put_client(out, "", e.client);
  put(out, " key={}", e.key);
  put_token(out, e);
  put(out, " counter={}", e.counter);
}

void describe_lease(Line& out, const HistoryEvent& e) {
  put(out, "server={} {} key={}", e.server, to_string(e.kind), e.key);
  // A grant's client is the owner; an extend's or revoke's client is whoever asked for it.
  if (e.kind == EventKind::grant) put_client(out, "owner=", e.client);
  put(out, " value=");
  put_short_value(out, e.value);
  if (e.kind != EventKind::revoke) put(out, " ttl={}us", e.ttl_us);
  if (e.lease_since_us != 0) put(out, " lease_since={}us", e.lease_since_us);
  put_token(out, e);
  if (e.kind != EventKind::grant) put_client(out, "by=", e.client);
}

void describe_fault(Line& out, const HistoryEvent& e) {
  put(out, "fault {}", e.detail);
  if (e.end_us > e.time_us) put(out, " until={}us", e.end_us);
}

void describe_final(Line& out, const HistoryEvent& e) {
  if (e.key.empty()) return put(out, "final_value counter={}", e.counter);
  put(out, "final_value key={} counter={}", e.key, e.counter);
}

void describe_stuck(Line& out, const HistoryEvent& e) {
  put(out, "stuck c{}", e.client);
  if (e.op != Op::none) put(out, " in {}", to_string(e.op));
  if (!e.key.empty()) put(out, " key={}", e.key);
}

void describe_body(Line& out, const HistoryEvent& e) {
  switch (e.kind) {
    case EventKind::invoke:
    case EventKind::complete: return describe_client_op(out, e);
    case EventKind::cs_enter:
    case EventKind::cs_exit: return describe_critical_section(out, e);
    case EventKind::access: return describe_access(out, e);
    case EventKind::grant:
    case EventKind::extend:
    case EventKind::revoke: return describe_lease(out, e);
    case EventKind::fault: return describe_fault(out, e);
    case EventKind::heal: return put(out, "heal");
    case EventKind::final_value: return describe_final(out, e);
    case EventKind::key_state: return put(out, "key_state key={} entries={}", e.key, e.counter);
    case EventKind::stuck: return describe_stuck(out, e);
    case EventKind::token:
      put(out, "server={} token key={}", e.server, e.key);
      put_client(out, "to=", e.client);
      return put_token(out, e);
    case EventKind::renewal:
      put(out, "c{} renewed key={}", e.client, e.key);
      if (e.end_us != 0) put(out, " valid_until={}us", e.end_us);
      return;
  }
  put(out, "?");
}

}  // namespace

std::string describe(const HistoryEvent& e) {
  Line line;
  describe_body(line, e);
  // A fault's detail is its body; for anything else it is an aside (an error's message, say).
  if (e.kind != EventKind::fault && !e.detail.empty()) put(line, " ({})", e.detail);
  return fmt::to_string(line);
}

}  // namespace lockstep
