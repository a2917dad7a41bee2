// Histories as JSON Lines: written and read back, they judge the same; bad lines are refused
// with the line and the field named.
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "checkers/checkers.h"
#include "history/history_jsonl.h"
#include "history/json_input.h"

namespace lockstep {
namespace {

HistoryEvent at(TimeUs t, EventKind kind, int client, std::string key = "k") {
  return {.time_us = t, .kind = kind, .client = client, .key = std::move(key)};
}

// Two clients inside at once, a stolen lease extended by the wrong owner, and a stale write.
History overlapping() {
  History h;
  h.meta = {.clients = 2, .fencing_on = true, .monotonic_tokens = true, .end_us = 100};
  h.add({.time_us = 1,
         .kind = EventKind::grant,
         .client = 0,
         .key = "k",
         .has_token = true,
         .token = 1,
         .server = "s",
         .value = "a",
         .ttl_us = 10});
  h.add(at(2, EventKind::cs_enter, 0));
  h.add({.time_us = 20,
         .kind = EventKind::grant,
         .client = 1,
         .key = "k",
         .has_token = true,
         .token = 2,
         .server = "s",
         .value = "b",
         .ttl_us = 50,
         .lease_since_us = 15});
  h.add(at(21, EventKind::cs_enter, 1));
  h.add({.time_us = 25,
         .kind = EventKind::access,
         .client = 1,
         .key = "k",
         .op = Op::write,
         .outcome = Outcome::ok,
         .has_token = true,
         .token = 2,
         .counter = 1});
  h.add({.time_us = 30,
         .kind = EventKind::extend,
         .client = 0,
         .key = "k",
         .server = "s",
         .value = "b",
         .ttl_us = 50});
  h.add({.time_us = 31,
         .kind = EventKind::access,
         .client = 0,
         .key = "k",
         .op = Op::write,
         .outcome = Outcome::ok,
         .has_token = true,
         .token = 1,
         .counter = 1,
         .detail = "a \"quoted\" word"});
  h.add(at(40, EventKind::cs_exit, 0));
  h.add(at(41, EventKind::cs_exit, 1));
  h.add({.time_us = 50, .kind = EventKind::final_value, .key = "k", .counter = 1});
  return h;
}

History round_trip(const History& h) {
  std::stringstream text;
  write_history_jsonl(h, text);
  return read_history_jsonl(text);
}

std::string error_of(const std::string& text) {
  std::istringstream in(text);
  try {
    read_history_jsonl(in);
  } catch (const HistoryFormatError& e) {
    return e.what();
  }
  return "no error";
}

TEST_CASE("a history written as JSON Lines reads back whole and judges the same",
          "[history-jsonl]") {
  const History original = overlapping();
  const History copy = round_trip(original);
  REQUIRE(copy.size() == original.size());
  for (size_t i = 0; i < copy.size(); ++i) CHECK(describe(copy[i]) == describe(original[i]));
  CHECK(copy.meta.fencing_on);
  CHECK(copy.meta.monotonic_tokens);
  const std::vector<Violation> before = check_all(original);
  const std::vector<Violation> after = check_all(copy);
  REQUIRE(before.size() >= 3);  // mutual_exclusion, ownership, fencing
  REQUIRE(after.size() == before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    CHECK(after[i].invariant == before[i].invariant);
    CHECK(after[i].time_us == before[i].time_us);
    CHECK(after[i].clients == before[i].clients);
    CHECK(after[i].events == before[i].events);
  }
}

TEST_CASE("a renewal reads back with its validity", "[history-jsonl]") {
  History h;
  h.meta = {.clients = 1, .end_us = 100};
  h.add({.time_us = 1, .kind = EventKind::invoke, .client = 0, .key = "k", .op = Op::acquire});
  h.add({.time_us = 2,
         .kind = EventKind::complete,
         .client = 0,
         .key = "k",
         .op = Op::acquire,
         .outcome = Outcome::ok,
         .value = "a",
         .end_us = 40});
  h.add({.time_us = 30,
         .kind = EventKind::renewal,
         .client = 0,
         .key = "k",
         .value = "a",
         .end_us = 70,
         .local_now_us = 3'600'000'030,
         .local_valid_until_us = 3'600'000'070});
  const History copy = round_trip(h);
  REQUIRE(copy.size() == 3);
  const HistoryEvent& renewal = copy[2];
  CHECK(renewal.kind == EventKind::renewal);
  CHECK(renewal.value == "a");
  CHECK(renewal.end_us == 70);
  CHECK(renewal.local_valid_until_us == 3'600'000'070);
  CHECK(describe(renewal) == "c0 renewed key=k valid_until=70us");
}

// A validity the harness only assumed (a library that reports none) reads back as such, so a
// judge run on the file holds the lock to what it said, as the run's own judge did.
TEST_CASE("an assumed validity reads back as assumed", "[history-jsonl]") {
  History h;
  h.meta = {.clients = 1, .end_us = 100};
  auto returned = [&h](TimeUs t_us, bool assumed) {
    h.add({.time_us = t_us, .kind = EventKind::invoke, .client = 0, .key = "k", .op = Op::acquire});
    h.add({.time_us = t_us,
           .kind = EventKind::complete,
           .client = 0,
           .key = "k",
           .op = Op::acquire,
           .outcome = Outcome::ok,
           .value = "a",
           .local_now_us = 5'000,
           .local_valid_until_us = 4'000,
           .validity_assumed = assumed});
  };
  returned(2, true);
  returned(3, false);
  const History copy = round_trip(h);
  REQUIRE(copy.size() == 4);
  CHECK(copy[1].validity_assumed);
  CHECK_FALSE(copy[3].validity_assumed);
}

TEST_CASE("bad history lines are refused with the line and the field", "[history-jsonl]") {
  const std::string meta = R"({"meta": {"clients": 1}})"
                           "\n";
  CHECK(error_of("") == "line 0: \"meta\" is missing: the file has no lines");
  CHECK(error_of(R"({"time_us": 1, "kind": "invoke"})") ==
        "line 1: \"meta\" must come first, alone: {\"meta\": {...}}");
  CHECK(error_of(meta + "not json\n").rfind("line 2: is not JSON", 0) == 0);
  CHECK(error_of(meta + R"({"time_us": 1})") == "line 2: \"kind\" is missing");
  CHECK(error_of(meta + R"({"time_us": 1, "kind": "grab"})") ==
        "line 2: \"kind\" is \"grab\"; valid: invoke, complete, cs_enter, cs_exit, access, grant, "
        "extend, revoke, fault, heal, final_value, key_state, stuck, token, renewal");
  CHECK(error_of(meta + R"({"time_us": 1.5, "kind": "invoke"})") ==
        "line 2: \"time_us\" must be an integer");
  CHECK(error_of(meta + R"({"time_us": 1, "kind": "invoke", "colour": "red"})") ==
        "line 2: \"colour\" is not a field of a history line (docs/history.schema.json)");
  CHECK(error_of(meta +
                 R"({"time_us": 5, "kind": "invoke"})"
                 "\n" +
                 R"({"time_us": 4, "kind": "invoke"})") ==
        "line 3: \"time_us\" goes back in time (4 after 5)");
  CHECK(error_of(meta + R"({"time_us": 1, "kind": "invoke", "token": -3})") ==
        "line 2: \"token\" must be a non-negative integer");
  CHECK(error_of(R"({"meta": {"quorum": 0}})") == "line 1: \"quorum\" must be at least 1");
  CHECK(error_of(meta + R"({"time_us": 1, "kind": "cs_enter", "shared": "yes"})") ==
        "line 2: \"shared\" must be true or false");
  CHECK(error_of(meta + R"({"time_us": 5, "kind": "grant", "lease_since_us": 9})") ==
        "line 2: \"lease_since_us\" must be at most 5");
}

// Issue 34: numbers outside an identity's range were cut to fit (client 2^32 became client 0, so
// two clients inside at once became "every invariant held"; quorum 2^32 became 0 and tripped an
// internal check; client 2^31-1 allocated more than 4 GiB), and histories no recorder writes were
// judged as if they made sense. Each is refused, naming the line and the rule.
TEST_CASE("identities out of range are refused, never folded into others", "[history-jsonl]") {
  const std::string two = R"({"meta": {"clients": 2}})"
                          "\n";
  CHECK(error_of(R"({"meta": {"quorum": 4294967296}})") ==
        "line 1: \"quorum\" must be at most 1000");
  CHECK(error_of(R"({"meta": {"clients": 4294967296}})") ==
        "line 1: \"clients\" must be at most 100000");
  CHECK(error_of(two + R"({"time_us": 1, "kind": "cs_enter", "client": 0, "key": "k"})"
                       "\n"
                       R"({"time_us": 2, "kind": "cs_enter", "client": 4294967296, "key": "k"})") ==
        "line 3: \"client\" must be at most 99999");
  // Past every history's bound: refused at the reader, before anything is sized by it.
  CHECK(error_of(two + R"({"time_us": 1, "kind": "cs_enter", "client": 2147483647, "key": "k"})") ==
        "line 2: \"client\" must be at most 99999");
  // Within the bound but not one of this history's clients: refused by the ids rule.
  CHECK(error_of(two + R"({"time_us": 1, "kind": "cs_enter", "client": 5, "key": "k"})") ==
        "line 2: client 5 is not one of the history's 2 clients (meta \"clients\")");
  CHECK(error_of(R"({"meta": {"servers": 1, "quorum": 99}})"
                 "\n"
                 R"({"time_us": 1, "kind": "heal"})") ==
        "line 1: meta \"quorum\" 99 is more than the 1 server(s)");
}

TEST_CASE("histories that break the schema's rules are refused with the line and the rule",
          "[history-jsonl]") {
  const std::string meta = R"({"meta": {"clients": 2}})"
                           "\n";
  CHECK(error_of(meta +
                 R"({"time_us": 1, "kind": "invoke", "client": 0, "key": "k", "op": "release"})") ==
        "line 2: c0 invokes release of key k before it ever acquired it");
  CHECK(error_of(meta + R"({"time_us": 1, "kind": "cs_exit", "client": 0, "key": "k"})") ==
        "line 2: c0 leaves key k without having entered it");
  CHECK(error_of(meta +
                 R"({"time_us": 1, "kind": "renewal", "client": 0, "key": "k", "end_us": 9})") ==
        "line 2: c0 renews key k before it ever acquired it");
  CHECK(error_of(meta + R"({"time_us": 1, "kind": "cs_enter", "client": 0, "key": "k"})"
                        "\n"
                        R"({"time_us": 2, "kind": "cs_enter", "client": 0, "key": "k"})") ==
        "line 3: c0 enters key k while it is inside it already");
  CHECK(
      error_of(
          meta +
          R"({"time_us": 1, "kind": "complete", "client": 1, "key": "k", "op": "acquire", "outcome": "ok"})") ==
      "line 2: c1's acquire completes without an invocation pending");
  CHECK(
      error_of(meta +
               R"({"time_us": 9, "kind": "fault", "fault": "pause", "client": 0, "end_us": 4})") ==
      "line 2: a fault that ends (4us) before it starts (9us)");
  CHECK(
      error_of(meta +
               R"({"time_us": 1, "kind": "fault", "fault": "pause", "client": 0, "amount": -5})") ==
      "line 2: a pause fault with a negative amount (-5)");
  // Two clients each read 0 and wrote 1: without the final counter, no_lost_update would judge
  // nothing and call it clean.
  const std::string writes =
      R"({"time_us": 1, "kind": "access", "client": 0, "key": "k", "op": "read", "outcome": "ok"})"
      "\n"
      R"({"time_us": 2, "kind": "access", "client": 1, "key": "k", "op": "read", "outcome": "ok"})"
      "\n"
      R"({"time_us": 3, "kind": "access", "client": 0, "key": "k", "op": "write", "outcome": "ok", "counter": 1})"
      "\n"
      R"({"time_us": 4, "kind": "access", "client": 1, "key": "k", "op": "write", "outcome": "ok", "counter": 1})"
      "\n";
  CHECK(error_of(meta + writes) ==
        "line 4: the resource accepted writes on key k but the history has no final_value for it "
        "(no_lost_update is judged against it)");
  // With it, the lost update is judged.
  std::istringstream whole(meta + writes +
                           R"({"time_us": 5, "kind": "final_value", "key": "k", "counter": 1})");
  const History judged = read_history_jsonl(whole);
  bool lost = false;
  for (const Violation& v : check_all(judged))
    lost = lost || v.invariant == Invariant::no_lost_update;
  CHECK(lost);
}

TEST_CASE("a line longer than its bound, or nested deeper, is refused", "[history-jsonl]") {
  const std::string meta = R"({"meta": {"clients": 1}})"
                           "\n";
  CHECK(error_of(meta + std::string(kHistoryLineBytesMax + 10, ' ') + "\n") ==
        "line 2: a line is longer than 1048576 bytes");
  CHECK(error_of(meta + std::string(100'000, '[') + std::string(100'000, ']')) ==
        "line 2: JSON nested deeper than 64 levels");
}

TEST_CASE("a history file holds no more events than its bound", "[history-jsonl]") {
  std::stringstream text;
  write_history_jsonl(overlapping(), text);
  CHECK_THROWS_AS(read_history_jsonl(text, 3), HistoryFormatError);
}

}  // namespace
}  // namespace lockstep
