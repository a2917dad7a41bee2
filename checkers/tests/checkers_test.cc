// The invariant checkers, on small histories built by hand: each clean history passes, and each
// minimal bad one is reported with the right invariant, time, clients, key and events.
#include <catch2/catch.hpp>

#include <functional>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "checkers/checker_support.h"
#include "checkers/checkers.h"
#include "history/history.h"
#include "lockstep/random.h"

namespace lockstep {
namespace {

using Events = std::vector<size_t>;
using Clients = std::vector<int>;

// Appends events with only the fields each kind uses. Times must not go backwards.
struct Builder {
  History history;

  size_t invoke(TimeUs t_us, int client, const std::string& key, Op op = Op::acquire) {
    HistoryEvent e = base(EventKind::invoke, t_us, client, key);
    e.op = op;
    return history.add(e);
  }
  size_t complete(TimeUs t_us, int client, const std::string& key, Outcome outcome,
                  std::optional<uint64_t> token = std::nullopt, Op op = Op::acquire) {
    HistoryEvent e = base(EventKind::complete, t_us, client, key);
    e.op = op;
    e.outcome = outcome;
    set_token(e, token);
    return history.add(e);
  }
  // A successful acquire (or extend) that told the client which lock value it holds.
  size_t granted(TimeUs t_us, int client, const std::string& key, const std::string& value,
                 std::optional<uint64_t> token = std::nullopt, Op op = Op::acquire) {
    HistoryEvent e = base(EventKind::complete, t_us, client, key);
    e.op = op;
    e.outcome = Outcome::ok;
    e.value = value;
    set_token(e, token);
    return history.add(e);
  }
  // A successful acquire whose lock `value` ("": "v" and the client) reported its validity ending
  // at end_us (true time).
  size_t granted_until(TimeUs t_us, int client, const std::string& key, TimeUs end_us,
                       const std::string& value = "") {
    HistoryEvent e = base(EventKind::complete, t_us, client, key);
    e.op = Op::acquire;
    e.outcome = Outcome::ok;
    e.value = value.empty() ? "v" + std::to_string(client) : value;
    e.end_us = end_us;
    return history.add(e);
  }
  // A background renewal of client's lock `value` on key, valid until end_us (true time).
  size_t renewal(TimeUs t_us, int client, const std::string& key, const std::string& value,
                 TimeUs end_us) {
    HistoryEvent e = base(EventKind::renewal, t_us, client, key);
    e.value = value;
    e.end_us = end_us;
    return history.add(e);
  }
  size_t enter(TimeUs t_us, int client, const std::string& key, bool shared = false) {
    HistoryEvent e = base(EventKind::cs_enter, t_us, client, key);
    e.shared = shared;
    return history.add(e);
  }
  size_t exit(TimeUs t_us, int client, const std::string& key, bool shared = false) {
    HistoryEvent e = base(EventKind::cs_exit, t_us, client, key);
    e.shared = shared;
    return history.add(e);
  }
  size_t access(TimeUs t_us, int client, const std::string& key, Op op, Outcome outcome,
                uint64_t token, int64_t counter) {
    HistoryEvent e = base(EventKind::access, t_us, client, key);
    e.op = op;
    e.outcome = outcome;
    set_token(e, token);
    e.counter = counter;
    return history.add(e);
  }
  size_t grant(TimeUs t_us, const std::string& server, const std::string& key,
               const std::string& value, int client, int64_t ttl_us,
               std::optional<uint64_t> token = std::nullopt) {
    HistoryEvent e = lease(EventKind::grant, t_us, server, key, value, client);
    e.ttl_us = ttl_us;
    set_token(e, token);
    return history.add(e);
  }
  size_t extend(TimeUs t_us, const std::string& server, const std::string& key,
                const std::string& value, int client, int64_t ttl_us) {
    HistoryEvent e = lease(EventKind::extend, t_us, server, key, value, client);
    e.ttl_us = ttl_us;
    return history.add(e);
  }
  size_t revoke(TimeUs t_us, const std::string& server, const std::string& key,
                const std::string& value, int client) {
    return history.add(lease(EventKind::revoke, t_us, server, key, value, client));
  }
  size_t stuck(TimeUs t_us, int client, const std::string& key = "", Op op = Op::none) {
    HistoryEvent e = base(EventKind::stuck, t_us, client, key);
    e.op = op;
    return history.add(e);
  }
  size_t final_value(TimeUs t_us, int64_t counter, const std::string& key = "") {
    HistoryEvent e = base(EventKind::final_value, t_us, -1, key);
    e.counter = counter;
    return history.add(e);
  }

 private:
  static HistoryEvent base(EventKind kind, TimeUs t_us, int client, const std::string& key) {
    HistoryEvent e;
    e.kind = kind;
    e.time_us = t_us;
    e.client = client;
    e.key = key;
    return e;
  }
  static HistoryEvent lease(EventKind kind, TimeUs t_us, const std::string& server,
                            const std::string& key, const std::string& value, int client) {
    HistoryEvent e = base(kind, t_us, client, key);
    e.server = server;
    e.value = value;
    return e;
  }
  static void set_token(HistoryEvent& e, std::optional<uint64_t> token) {
    e.has_token = token.has_value();
    e.token = token.value_or(0);
  }
};

void require_violation(const Violation& v, Invariant invariant, TimeUs time_us,
                       const Clients& clients, const std::string& key, const Events& events) {
  CHECK(v.invariant == invariant);
  CHECK(v.time_us == time_us);
  CHECK(v.clients == clients);
  CHECK(v.key == key);
  CHECK(v.events == events);
  CHECK_FALSE(v.detail.empty());
}

// ---------------------------------------------------------------------------------------------

TEST_CASE("History::add numbers events in order", "[history]") {
  Builder b;
  CHECK(b.enter(0, 0, "k") == 0);
  CHECK(b.exit(5, 0, "k") == 1);
  REQUIRE(b.history.size() == 2);
  CHECK(b.history[1].index == 1);
  CHECK(b.history.events()[0].kind == EventKind::cs_enter);
  HistoryEvent earlier;
  earlier.time_us = 4;
  CHECK_THROWS_AS(b.history.add(earlier), std::logic_error);
  CHECK(b.history.size() == 2);
}

TEST_CASE("History::add numbers keys, servers and values densely, equal strings alike",
          "[history]") {
  History h;
  auto add = [&h](const char* key, const char* server, const char* value) {
    return h[h.add({.key = key, .server = server, .value = value})];
  };
  const HistoryEvent& a = add("k1", "", "");
  CHECK((a.key_id == 0 && a.server_id == 0 && a.value_id == 0));
  const HistoryEvent& b = add("k2", "s1", "v1");
  CHECK((b.key_id == 1 && b.server_id == 1 && b.value_id == 1));
  const HistoryEvent& c = add("k1", "s1", "v2");
  CHECK((c.key_id == 0 && c.server_id == 1 && c.value_id == 2));
  const HistoryEvent& d = add("v1", "k1", "v1");  // each kind of string numbered on its own
  CHECK((d.key_id == 2 && d.server_id == 2 && d.value_id == 1));
  CHECK(server_value_id(c) != server_value_id(b));
  // The empty string is numbered where it first appears, as any other, and keeps its number.
  const HistoryEvent& e = add("k1", "", "v3");
  CHECK((e.key_id == 0 && e.server_id == 0 && e.value_id == 3));
  const HistoryEvent& f = add("", "s1", "");
  CHECK((f.key_id == 3 && f.server_id == 1 && f.value_id == 0));
  const HistoryEvent& g = add("", "", "v3");
  CHECK((g.key_id == 3 && g.server_id == 0 && g.value_id == 3));
}

TEST_CASE("describe prints one compact line per event", "[history]") {
  Builder b;
  b.invoke(0, 1, "k");
  b.complete(1, 1, "k", Outcome::ok, 3);
  b.enter(2, 0, "k");
  b.grant(3, "memory", "k", "ab12cd34ef56", 0, 10'000'000, 3);
  b.access(4, 1, "k", Op::write, Outcome::ok, 4, 2);
  b.exit(5, 0, "k", true);
  b.revoke(6, "memory", "k", "ab12", 1);
  b.final_value(7, 5);
  HistoryEvent fault;
  fault.kind = EventKind::fault;
  fault.time_us = 8;
  fault.end_us = 100;
  fault.detail = "crash node=c0";
  b.history.add(fault);
  const History& h = b.history;
  CHECK(describe(h[0]) == "c1 invoke acquire key=k");
  CHECK(describe(h[1]) == "c1 complete acquire ok key=k token=3");
  CHECK(describe(h[2]) == "c0 cs_enter key=k");
  CHECK(describe(h[3]) ==
        "server=memory grant key=k owner=c0 value=ab12cd34.. ttl=10000000us token=3");
  CHECK(describe(h[4]) == "access write ok c1 key=k token=4 counter=2");
  CHECK(describe(h[5]) == "c0 cs_exit key=k shared");
  CHECK(describe(h[6]) == "server=memory revoke key=k value=ab12 by=c1");
  CHECK(describe(h[7]) == "final_value counter=5");
  CHECK(describe(h[8]) == "fault crash node=c0 until=100us");
  b.stuck(9, 2, "k", Op::acquire);
  b.stuck(9, 3);
  CHECK(describe(h[9]) == "stuck c2 in acquire key=k");
  CHECK(describe(h[10]) == "stuck c3");
  CHECK(to_string(EventKind::stuck) == "stuck");
}

TEST_CASE("names of enums and invariants", "[history][checkers]") {
  CHECK(to_string(EventKind::final_value) == "final_value");
  CHECK(to_string(Op::is_locked) == "is_locked");
  CHECK(to_string(Outcome::refused) == "refused");
  // docs/DESIGN.md's six lease invariants, valid_on_return, validity_within_lease, the
  // in-process locks' three, and error_not_applied
  REQUIRE(all_invariants().size() == 12);
  for (Invariant invariant : all_invariants()) {
    CHECK(invariant_from_string(to_string(invariant)) == invariant);
  }
  CHECK(to_string(Invariant::no_lost_update) == "no_lost_update");
  CHECK(invariant_from_string("fifo") == Invariant::fifo);
  CHECK_FALSE(invariant_from_string("fairness").has_value());
}

// ---------------------------------------------------------------------------------------------

TEST_CASE("mutual_exclusion", "[checkers]") {
  Builder b;
  b.history.meta.end_us = 100'000;

  SECTION("sequential holds pass") {
    b.enter(0, 0, "k");
    b.exit(100, 0, "k");
    b.enter(200, 1, "k");
    b.exit(300, 1, "k");
    CHECK(check_mutual_exclusion(b.history).empty());
  }
  SECTION("an exit and an enter at the same time, exit first, touch without overlap") {
    b.enter(0, 0, "k");
    b.exit(100, 0, "k");
    b.enter(100, 1, "k");
    CHECK(check_mutual_exclusion(b.history).empty());
  }
  // Whose event comes first within one instant is the simulator's order. A holder told its
  // validity ended by then, leaving at that instant without touching the key after the entry,
  // only touches the entrant's stay (memory, seed 46929: a lease granted anew as the last
  // holder's validity ended, that holder's exit run after the grant).
  // c0 holds k from 0, told its validity ends at valid_until_us; c1 enters at 100.
  const auto entry_at_100 = [&b](TimeUs valid_until_us) {
    b.granted_until(0, 0, "k", valid_until_us);
    b.enter(0, 0, "k");
    b.enter(100, 1, "k");
  };
  SECTION("an entry at the instant the holder's validity ended, the holder leaving then, touches") {
    entry_at_100(100);
    b.access(100, 1, "k", Op::write, Outcome::ok, 2, 1);
    b.exit(100, 0, "k");
    CHECK(check_mutual_exclusion(b.history).empty());
  }
  SECTION("an enter before an exit at the same time overlaps while the holder's validity runs") {
    entry_at_100(101);
    b.exit(100, 0, "k");
    auto found = check_mutual_exclusion(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::mutual_exclusion, 100, {0, 1}, "k", {1, 2, 3});
  }
  SECTION("a renewal that moved the holder's validity past the entry makes it an overlap") {
    b.granted_until(0, 0, "k", 100);
    b.enter(0, 0, "k");
    b.renewal(50, 0, "k", "v0", 150);
    b.enter(100, 1, "k");
    b.exit(100, 0, "k");
    REQUIRE(check_mutual_exclusion(b.history).size() == 1);
  }
  SECTION("an enter before an exit at the same time overlaps for a lock without expiry") {
    // A FIFO lock admitting the next waiter before the holder released: no validity reported.
    b.granted(0, 0, "k", "v0");
    b.enter(0, 0, "k");
    b.enter(100, 1, "k");
    b.exit(100, 0, "k");
    auto found = check_mutual_exclusion(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::mutual_exclusion, 100, {0, 1}, "k", {1, 2, 3});
  }
  SECTION("a holder whose validity ended, accessing after the entry at that instant, overlaps") {
    entry_at_100(100);
    b.access(100, 0, "k", Op::write, Outcome::ok, 1, 1);
    b.exit(100, 0, "k");
    auto found = check_mutual_exclusion(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::mutual_exclusion, 100, {0, 1}, "k", {1, 2, 4});
  }
  SECTION("an entrant that leaves at the instant it entered, inside a hold, overlaps") {
    entry_at_100(100);
    b.exit(100, 1, "k");
    b.exit(200, 0, "k");
    auto found = check_mutual_exclusion(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::mutual_exclusion, 100, {0, 1}, "k", {1, 2, 4});
  }
  SECTION("an overlap is reported at the later entry with both enters and the exit") {
    b.enter(0, 0, "k");
    b.enter(10'100, 1, "k");
    b.exit(15'000, 0, "k");
    b.exit(16'000, 1, "k");
    auto found = check_mutual_exclusion(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::mutual_exclusion, 10'100, {0, 1}, "k", {0, 1, 2});
    CHECK(found[0].detail ==
          "c0 and c1 were both inside the critical section for key k from 10100us (c0 entered "
          "at 0us and left at 15000us)");
  }
  SECTION("an overlap lasts until either of the two leaves") {
    b.enter(0, 0, "k");
    b.enter(10'000, 1, "k");
    b.exit(12'000, 1, "k");  // the entrant leaves first
    b.exit(90'000, 0, "k");
    b.enter(95'000, 2, "k");
    b.enter(96'000, 3, "k");
    b.exit(99'000, 2, "k");  // the holder leaves first, the entrant stays to the end
    auto found = check_mutual_exclusion(b.history);
    REQUIRE(found.size() == 2);
    CHECK(found[0].excess_us == 2'000);  // not 80,000: c1 was gone at 12 ms
    CHECK(found[1].excess_us == 3'000);
  }
  SECTION("a holder that never exits is inside until the end") {
    b.grant(0, "memory", "k", "v0", 0, 1000);  // unrelated events are skipped
    b.enter(0, 0, "k");
    b.enter(50'000, 1, "k");
    auto found = check_mutual_exclusion(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::mutual_exclusion, 50'000, {0, 1}, "k", {1, 2});
    CHECK_THAT(found[0].detail, Catch::Contains("still inside at the end, 100000us"));
  }
  SECTION("shared readers overlap legally") {
    b.enter(0, 0, "k", true);
    b.enter(10, 1, "k", true);
    b.exit(20, 0, "k", true);
    b.exit(30, 1, "k", true);
    CHECK(check_mutual_exclusion(b.history).empty());
  }
  SECTION("a writer entering while a reader is inside is flagged") {
    b.enter(0, 0, "k", true);
    b.enter(10, 1, "k", true);
    b.enter(20, 2, "k");
    auto found = check_mutual_exclusion(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::mutual_exclusion, 20, {0, 2}, "k", {0, 2});
    CHECK_THAT(found[0].detail, Catch::Contains("c0 (shared) and c2"));
  }
  SECTION("a reader entering while a writer is inside is flagged against the writer") {
    b.enter(0, 1, "k", true);
    b.enter(5, 0, "k");  // flagged: c1 reads
    b.exit(6, 1, "k", true);
    b.enter(10, 2, "k", true);  // flagged: c0 writes
    auto found = check_mutual_exclusion(b.history);
    REQUIRE(found.size() == 2);
    require_violation(found[1], Invariant::mutual_exclusion, 10, {0, 2}, "k", {1, 3});
  }
  SECTION("different keys do not conflict") {
    b.enter(0, 0, "a");
    b.enter(10, 1, "b");
    CHECK(check_mutual_exclusion(b.history).empty());
  }
  SECTION("a second enter without exit continues the hold") {
    b.enter(0, 0, "k");
    b.enter(10, 0, "k");
    b.exit(20, 0, "k");
    b.enter(30, 1, "k");
    CHECK(check_mutual_exclusion(b.history).empty());
  }
  SECTION("each entry is reported once, against the earliest holder") {
    b.enter(0, 0, "k");
    b.enter(10, 1, "k");
    b.enter(20, 2, "k");
    b.exit(30, 0, "k");
    auto found = check_mutual_exclusion(b.history);
    REQUIRE(found.size() == 2);
    require_violation(found[0], Invariant::mutual_exclusion, 10, {0, 1}, "k", {0, 1, 3});
    require_violation(found[1], Invariant::mutual_exclusion, 20, {0, 2}, "k", {0, 2, 3});
  }
  SECTION("at most per_invariant_max, the earliest") {
    b.enter(0, 0, "k");
    for (int i = 1; i <= 15; ++i) {
      b.enter(i * 10, i, "k");
      b.exit(i * 10 + 5, i, "k");
    }
    auto found = check_mutual_exclusion(b.history);
    REQUIRE(found.size() == 10);
    CHECK(found.front().time_us == 10);
    CHECK(found.back().time_us == 100);
    auto three = check_mutual_exclusion(b.history, CheckOptions{3});
    REQUIRE(three.size() == 3);
    CHECK(three[2].time_us == 30);
  }
}

// ---------------------------------------------------------------------------------------------

TEST_CASE("lease_exclusion", "[checkers]") {
  Builder b;
  b.history.meta.quorum = 1;

  SECTION("a lease revoked before the next grant passes") {
    b.grant(0, "memory", "k", "A", 0, 1000);
    b.revoke(500, "memory", "k", "A", 0);
    b.grant(600, "memory", "k", "B", 1, 1000);
    CHECK(check_lease_exclusion(b.history).empty());
  }
  SECTION("a grant at the instant the previous lease expires passes") {
    b.grant(0, "memory", "k", "A", 0, 1000);
    b.grant(1000, "memory", "k", "B", 1, 1000);
    CHECK(check_lease_exclusion(b.history).empty());
  }
  SECTION("a grant one microsecond early is flagged") {
    b.grant(0, "memory", "k", "A", 0, 1000);
    b.grant(999, "memory", "k", "B", 1, 1000);
    auto found = check_lease_exclusion(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::lease_exclusion, 999, {0, 1}, "k", {0, 1});
  }
  SECTION("a fast-clock server granting inside a promised lease still owes the promise") {
    b.grant(0, "memory", "k", "A", 0, 10'000);
    b.grant(5000, "memory", "k", "B", 1, 10'000);  // the server thought A had expired
    auto found = check_lease_exclusion(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::lease_exclusion, 5000, {0, 1}, "k", {0, 1});
    CHECK_THAT(found[0].detail, Catch::Contains("c0 (value A) and c1 (value B)"));
  }
  SECTION("a lease whose owner is unknown names only the known client") {
    b.extend(0, "memory", "k", "A", -1, 1000);  // no grant seen for A
    b.grant(10, "memory", "k", "B", 1, 1000);
    auto found = check_lease_exclusion(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::lease_exclusion, 10, {1}, "k", {0, 1});
    CHECK_THAT(found[0].detail, Catch::StartsWith("value A and c1 (value B)"));
  }
  SECTION("the owner is the client of the latest grant of that value") {
    b.grant(0, "memory", "k", "A", 0, 100);
    b.grant(200, "memory", "k", "A", 2, 1000);
    b.grant(300, "memory", "k", "B", 1, 1000);
    auto found = check_lease_exclusion(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::lease_exclusion, 300, {1, 2}, "k", {1, 2});
  }
  SECTION("different keys do not conflict") {
    b.grant(0, "memory", "a", "A", 0, 1000);
    b.grant(10, "memory", "b", "B", 1, 1000);
    CHECK(check_lease_exclusion(b.history).empty());
  }
  SECTION("an extend moves the end; its event proves the lease live") {
    b.grant(0, "memory", "k", "A", 0, 1000);
    b.extend(800, "memory", "k", "A", 0, 1000);
    SECTION("a grant after the extended end passes") {
      b.grant(1800, "memory", "k", "B", 1, 1000);
      CHECK(check_lease_exclusion(b.history).empty());
    }
    SECTION("a grant before it is flagged") {
      b.grant(1500, "memory", "k", "B", 1, 1000);
      auto found = check_lease_exclusion(b.history);
      REQUIRE(found.size() == 1);
      require_violation(found[0], Invariant::lease_exclusion, 1500, {0, 1}, "k", {1, 2});
    }
  }
  SECTION("an extend after expiry revives the lease from the extend") {
    b.grant(0, "memory", "k", "A", 0, 100);
    b.grant(200, "memory", "k", "B", 1, 1000);
    b.extend(300, "memory", "k", "A", 0, 1000);
    auto found = check_lease_exclusion(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::lease_exclusion, 300, {0, 1}, "k", {1, 2});
  }
  SECTION("extending a clashing lease does not report the clash again") {
    b.grant(0, "memory", "k", "A", 0, 1000);
    b.grant(100, "memory", "k", "B", 1, 1000);
    b.extend(200, "memory", "k", "A", 0, 1000);
    b.extend(300, "memory", "k", "B", 1, 1000);
    auto found = check_lease_exclusion(b.history);
    REQUIRE(found.size() == 1);
    CHECK(found[0].time_us == 100);
  }
  SECTION("quorum 3 of 5") {
    b.history.meta.servers = 5;
    b.history.meta.quorum = 3;
    b.grant(0, "s1", "k", "A", 0, 10'000);
    b.grant(1, "s2", "k", "A", 0, 10'000);
    b.grant(2, "s3", "k", "A", 0, 10'000);
    SECTION("two majorities at once are flagged when the second completes") {
      b.grant(2000, "s3", "k", "B", 1, 10'000);  // s3's clock jumped past A's ttl
      b.grant(2001, "s4", "k", "B", 1, 10'000);
      b.grant(2002, "s5", "k", "B", 1, 10'000);
      auto found = check_lease_exclusion(b.history);
      REQUIRE(found.size() == 1);
      require_violation(found[0], Invariant::lease_exclusion, 2002, {0, 1}, "k",
                        {0, 1, 2, 3, 4, 5});
    }
    SECTION("a minority beside a majority passes") {
      b.grant(2001, "s4", "k", "B", 1, 10'000);
      b.grant(2002, "s5", "k", "B", 1, 10'000);
      CHECK(check_lease_exclusion(b.history).empty());
    }
    SECTION("sequential majorities pass") {
      b.grant(10'000, "s3", "k", "B", 1, 10'000);
      b.grant(10'001, "s4", "k", "B", 1, 10'000);
      b.grant(10'002, "s5", "k", "B", 1, 10'000);
      CHECK(check_lease_exclusion(b.history).empty());
    }
    SECTION("a server granting the same value twice counts once") {
      b.grant(10, "s4", "k", "B", 1, 10'000);
      b.grant(11, "s4", "k", "B", 1, 10'000);
      b.grant(12, "s5", "k", "B", 1, 10'000);
      CHECK(check_lease_exclusion(b.history).empty());
    }
  }
  SECTION("at most per_invariant_max over keys, the earliest") {
    b.grant(0, "memory", "b", "A", 0, 1000);
    b.grant(0, "memory", "a", "C", 2, 1000);
    b.grant(5, "memory", "b", "B", 1, 1000);
    b.grant(9, "memory", "a", "D", 3, 1000);
    auto found = check_lease_exclusion(b.history, CheckOptions{1});
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::lease_exclusion, 5, {0, 1}, "b", {0, 2});
  }
}

// ---------------------------------------------------------------------------------------------

TEST_CASE("ownership", "[checkers]") {
  Builder b;
  b.grant(0, "memory", "k", "A", 0, 1000);

  SECTION("the owner's revoke and extend pass") {
    b.extend(100, "memory", "k", "A", 0, 1000);
    b.revoke(200, "memory", "k", "A", 0);
    CHECK(check_ownership(b.history).empty());
  }
  SECTION("a revoke by another client is flagged") {
    b.revoke(900, "memory", "k", "A", 1);
    auto found = check_ownership(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::ownership, 900, {0, 1}, "k", {0, 1});
    CHECK(found[0].detail ==
          "c1 removed the lease of c0 (value A) on key k at server memory at 900us");
  }
  SECTION("an extend by another client is flagged") {
    b.grant(2000, "memory", "k", "B", 1, 1000);
    b.extend(2100, "memory", "k", "B", 0, 1000);
    auto found = check_ownership(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::ownership, 2100, {0, 1}, "k", {1, 2});
  }
  SECTION("the owner is the latest grant of that value on that server") {
    b.grant(2000, "memory", "k", "A", 1, 1000);  // the same value, granted again, to c1
    b.revoke(2100, "memory", "k", "A", 1);
    CHECK(check_ownership(b.history).empty());
  }
  SECTION("unknown owners and server-side revokes are not judged") {
    b.revoke(100, "memory", "k", "never-granted", 1);
    b.revoke(200, "other", "k", "A", 1);
    b.revoke(300, "memory", "k", "A", -1);
    CHECK(check_ownership(b.history).empty());
  }
}

// ---------------------------------------------------------------------------------------------

TEST_CASE("fencing: tokens in the order the servers granted", "[checkers]") {
  Builder b;
  b.history.meta.monotonic_tokens = true;
  // c0 asks first and is granted first; c1 is granted after c0's lease ended.
  const auto two_grants = [&b](uint64_t first_token, uint64_t second_token, TimeUs first_learns,
                               const std::string& key_at_server, const std::string& stored) {
    b.invoke(0, 0, "k");
    b.grant(100, "redis", key_at_server, stored + "A", 0, 1000);
    if (first_learns < 1200) b.granted(first_learns, 0, "k", "A", first_token);
    b.invoke(1200, 1, "k");
    b.grant(1300, "redis", key_at_server, stored + "B", 1, 1000);
    b.granted(1400, 1, "k", "B", second_token);
    if (first_learns >= 1200) b.granted(first_learns, 0, "k", "A", first_token);
  };
  SECTION("increasing in grant order passes, whenever the replies arrive") {
    two_grants(1, 2, 150, "k", "");
    CHECK(check_fencing(b.history).empty());
  }
  SECTION("a client that learns its token late is not taken for one that got an older one") {
    two_grants(1, 2, 5000, "k", "");  // c0's reply was held up past c1's
    CHECK(check_fencing(b.history).empty());
  }
  SECTION("a token not greater than one granted before it is flagged") {
    two_grants(2, 2, 150, "k", "");
    auto found = check_fencing(b.history);
    REQUIRE(found.size() == 1);
    CHECK(found[0].invariant == Invariant::fencing);
    CHECK(found[0].time_us == 1400);
    CHECK(found[0].clients == Clients{0, 1});
    CHECK(found[0].holder == 0);
    CHECK(found[0].entrant == 1);
  }
  SECTION("whatever the lock calls its keys and stores in them") {
    // The servers' key and value are the lock's own ("mylock:k", "deadline=...:A"): the grant
    // is the one the servers recorded for that client while its acquire was in flight.
    two_grants(1, 2, 5000, "mylock:k", "deadline=1100:");
    CHECK(check_fencing(b.history).empty());
  }
  SECTION("tokens going backwards under foreign names are still caught") {
    two_grants(2, 1, 5000, "mylock:k", "deadline=1100:");
    auto found = check_fencing(b.history);
    REQUIRE(found.size() == 1);
    CHECK(found[0].time_us == 1400);
  }
  SECTION("tokens are per key") {
    b.invoke(0, 0, "k");
    b.grant(10, "redis", "k", "A", 0, 1000);
    b.granted(20, 0, "k", "A", 5);
    b.invoke(30, 1, "j");
    b.grant(40, "redis", "j", "B", 1, 1000);
    b.granted(50, 1, "j", "B", 1);
    CHECK(check_fencing(b.history).empty());
  }
  SECTION("without the monotonic claim nothing is judged") {
    b.history.meta.monotonic_tokens = false;
    two_grants(2, 1, 150, "k", "");
    CHECK(check_fencing(b.history).empty());
  }
}

TEST_CASE("fencing: without the servers' grants, only what the clients saw orders them",
          "[checkers]") {
  Builder b;
  b.history.meta.monotonic_tokens = true;
  b.history.meta.leases_from_clients = true;
  SECTION("an acquire that completed before another was invoked must have the smaller token") {
    b.invoke(0, 0, "k");
    b.granted(50, 0, "k", "A", 5);
    b.invoke(100, 1, "k");
    b.granted(150, 1, "k", "B", 3);
    auto found = check_fencing(b.history);
    REQUIRE(found.size() == 1);
    CHECK(found[0].time_us == 150);
  }
  SECTION("acquires in flight together are not ordered by when they returned") {
    b.invoke(0, 0, "k");
    b.invoke(10, 1, "k");
    b.granted(50, 1, "k", "B", 3);
    b.granted(60, 0, "k", "A", 5);  // c0 may have been granted first
    CHECK(check_fencing(b.history).empty());
  }
}

// c0's acquire of k, invoked at 0: the server grants value A at 100 for 1000 us (until 1100), and
// the acquire returns at 150 reporting a validity that ends at valid_until_us.
Builder acquired_for_1000us(TimeUs valid_until_us) {
  Builder h;
  h.invoke(0, 0, "k");
  h.grant(100, "redis", "lock:k", "A", 0, 1000);
  h.granted_until(150, 0, "k", valid_until_us, "A");
  return h;
}

TEST_CASE("validity_within_lease: a reported validity ends no later than the leases behind it",
          "[checkers]") {
  // c0's acquire: granted at 100 for 1000 us (until 1100), returned at 150.
  const auto run = [](TimeUs valid_until_us, const std::function<void(Builder&)>& after) {
    Builder h = acquired_for_1000us(valid_until_us);
    if (after) after(h);
    return check_validity_within_lease(h.history);
  };
  SECTION("a validity inside the lease passes") { CHECK(run(1100, {}).empty()); }
  SECTION("a validity past the lease's promised end is flagged, by how much") {
    const auto found = run(1300, {});
    REQUIRE(found.size() == 1);
    CHECK(found[0].invariant == Invariant::validity_within_lease);
    CHECK(found[0].time_us == 1100);  // where the lease ended under a client relying on it
    CHECK(found[0].clients == Clients{0});
    CHECK(found[0].excess_us == 200);
  }
  SECTION("a validity the client stopped relying on before the lease ended passes") {
    CHECK(run(1300, [](Builder& h) { h.exit(1050, 0, "k"); }).empty());
  }
  SECTION("a revoke by the server itself while the validity runs is flagged") {
    const auto found = run(1000, [](Builder& h) { h.revoke(500, "redis", "lock:k", "A", -1); });
    REQUIRE(found.size() == 1);
    CHECK(found[0].excess_us == 500);
  }
  SECTION("a revoke by another client is ownership's to report, not this") {
    CHECK(run(1000, [](Builder& h) { h.revoke(500, "redis", "lock:k", "A", 1); }).empty());
  }
  SECTION("an extend that keeps the lease held covers the validity") {
    CHECK(run(1300, [](Builder& h) { h.extend(1000, "redis", "lock:k", "A", 0, 1000); }).empty());
  }
  SECTION("where leases were derived from the clients nothing is judged") {
    Builder h;
    h.history.meta.leases_from_clients = true;
    h.invoke(0, 0, "k");
    h.grant(100, "redis", "k", "A", 0, 10);
    h.granted(150, 0, "k", "A");
    CHECK(check_validity_within_lease(h.history).empty());
  }
}

// A background renewal (an auto-extension) reports a validity too: it is judged against the
// leases of the lock it renews, which its acquire linked.
TEST_CASE("validity_within_lease: a renewal's validity ends no later than the renewed lease",
          "[checkers]") {
  // c0's acquire: granted at 100 for 1000 us (until 1100), returned at 150, valid until 1100; the
  // server extends the lease at 900 for 1000 us more (until 1900), and the renewal returns at 950.
  const auto run = [](TimeUs renewed_until_us, const std::function<void(Builder&)>& before) {
    Builder h = acquired_for_1000us(1100);
    h.enter(150, 0, "k");
    h.extend(900, "redis", "lock:k", "A", 0, 1000);
    if (before) before(h);
    h.renewal(950, 0, "k", "A", renewed_until_us);
    return check_validity_within_lease(h.history);
  };
  SECTION("a renewal's validity inside the extended lease passes") { CHECK(run(1900, {}).empty()); }
  SECTION("a renewal's validity past the extended lease is flagged, by how much") {
    const auto found = run(2100, {});
    REQUIRE(found.size() == 1);
    CHECK(found[0].time_us == 1900);
    CHECK(found[0].excess_us == 200);
    CHECK_THAT(found[0].detail, Catch::Contains("c0's renewal of key k at 950us"));
  }
  SECTION("a renewal the server never applied is flagged where the acquire's lease ended") {
    Builder h = acquired_for_1000us(1100);
    h.enter(150, 0, "k");
    h.renewal(950, 0, "k", "A", 1900);
    const auto found = check_validity_within_lease(h.history);
    REQUIRE(found.size() == 1);
    CHECK(found[0].time_us == 1100);
    CHECK(found[0].excess_us == 800);
  }
  SECTION("a renewal after the client left relies on nothing") {
    CHECK(run(2100, [](Builder& h) { h.exit(920, 0, "k"); }).empty());
  }
}

TEST_CASE("validity_within_lease: a quorum of the servers' leases must last", "[checkers]") {
  Builder h;
  h.history.meta.quorum = 2;
  h.history.meta.servers = 3;
  h.invoke(0, 0, "k");
  h.grant(100, "n0", "k", "A", 0, 1000);
  h.grant(100, "n1", "k", "A", 0, 500);  // a node whose lease ends early
  h.grant(100, "n2", "k", "A", 0, 1000);
  h.granted_until(150, 0, "k", 1050, "A");
  CHECK(check_validity_within_lease(h.history).empty());  // n0 and n2 last
  h.revoke(700, "n2", "k", "A", -1);  // n2 lost it on its own (an eviction, a restart)
  const auto found = check_validity_within_lease(h.history);
  REQUIRE(found.size() == 1);
  CHECK(found[0].excess_us == 1050 - 700);  // the 2nd-latest end is n2's revoke, at 700
}

TEST_CASE("fencing: guarded accesses", "[checkers]") {
  Builder b;
  b.history.meta.fencing_on = true;
  b.access(0, 1, "k", Op::read, Outcome::ok, 34, 0);
  b.access(10, 1, "k", Op::write, Outcome::ok, 34, 1);  // the same token again is fine

  SECTION("a refused stale access passes") {
    b.access(20, 0, "k", Op::write, Outcome::refused, 33, 1);
    CHECK(check_fencing(b.history).empty());
  }
  SECTION("a served stale access is flagged") {
    b.access(20, 0, "k", Op::write, Outcome::ok, 33, 1);
    auto found = check_fencing(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::fencing, 20, {0, 1}, "k", {0, 2});
    CHECK(found[0].detail ==
          "the resource served c0's write on key k with token 33 at 20us after it had seen token "
          "34 (c1's read at 0us)");
  }
  SECTION("a served stale access passes when fencing is off") {
    b.history.meta.fencing_on = false;
    b.access(20, 0, "k", Op::write, Outcome::ok, 33, 1);
    CHECK(check_fencing(b.history).empty());
  }
  SECTION("the highest token seen includes refused accesses") {
    b.access(20, 2, "k", Op::write, Outcome::refused, 50, 1);
    b.access(30, 1, "k", Op::write, Outcome::ok, 40, 2);
    auto found = check_fencing(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::fencing, 30, {1, 2}, "k", {2, 3});
  }
  SECTION("accesses on another key do not raise this key's highest token") {
    b.access(20, 0, "j", Op::write, Outcome::ok, 1, 1);
    CHECK(check_fencing(b.history).empty());
  }
}

// ---------------------------------------------------------------------------------------------

TEST_CASE("no_lost_update", "[checkers]") {
  Builder b;

  SECTION("every accepted write counted passes") {
    b.access(0, 0, "k", Op::write, Outcome::ok, 1, 1);
    b.access(10, 1, "k", Op::write, Outcome::ok, 2, 2);
    b.access(20, 0, "k", Op::write, Outcome::refused, 1, 2);  // refused: not counted
    b.final_value(30, 2);
    CHECK(check_no_lost_update(b.history).empty());
  }
  SECTION("without a final value nothing is judged") {
    b.access(0, 0, "k", Op::write, Outcome::ok, 1, 1);
    b.access(10, 1, "k", Op::write, Outcome::ok, 2, 1);
    CHECK(check_no_lost_update(b.history).empty());
  }
  SECTION("the report points at the first write that did not raise the counter") {
    b.access(0, 1, "k", Op::write, Outcome::ok, 34, 1);
    b.access(10, 0, "k", Op::read, Outcome::ok, 33, 1);  // reads are not writes
    b.access(20, 0, "k", Op::write, Outcome::ok, 33, 1);
    b.access(30, 1, "k", Op::write, Outcome::ok, 34, 1);
    b.final_value(40, 1);
    auto found = check_no_lost_update(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::no_lost_update, 20, {0, 1}, "k", {0, 2, 4});
    CHECK(found[0].detail ==
          "c0's write of 1 on key k at 20us did not raise the counter (c1 had written 1 at 0us); "
          "the final counter is 1 but the resource accepted 3 write(s)");
  }
  SECTION("a mismatch without a flat write points at the final value") {
    b.access(0, 0, "k", Op::write, Outcome::ok, 1, 1);
    b.access(10, 1, "k", Op::write, Outcome::ok, 2, 2);
    b.final_value(20, 5);
    auto found = check_no_lost_update(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::no_lost_update, 20, {}, "", {2});
  }
  SECTION("a final value with a key judges that key's counter only") {
    b.access(0, 0, "a", Op::write, Outcome::ok, 1, 1);
    b.access(10, 1, "b", Op::write, Outcome::ok, 1, 1);
    b.access(20, 0, "b", Op::write, Outcome::ok, 1, 1);
    b.final_value(30, 1, "a");
    b.final_value(30, 1, "b");
    auto found = check_no_lost_update(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::no_lost_update, 20, {0, 1}, "b", {1, 2, 4});
  }
}

// ---------------------------------------------------------------------------------------------

TEST_CASE("liveness", "[checkers]") {
  Builder b;
  b.history.meta.end_us = 100'000;
  b.history.meta.liveness_bound_us = 20'000;

  SECTION("an acquire that succeeds within the bound passes, also exactly at it") {
    b.invoke(0, 0, "k");
    b.complete(20'000, 0, "k", Outcome::ok, 1);
    b.invoke(30'000, 1, "k");
    b.complete(31'000, 1, "k", Outcome::ok, 2);
    CHECK(check_liveness(b.history).empty());
  }
  SECTION("an acquire that succeeds late is flagged at its completion") {
    b.invoke(1000, 1, "k");
    b.complete(21'001, 1, "k", Outcome::ok, 1);
    auto found = check_liveness(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::liveness, 21'001, {1}, "k", {0, 1});
    CHECK(found[0].detail ==
          "c1's acquire of key k succeeded only at 21001us, 20001us after its "
          "wait began at 1000us (bound 20000us)");
  }
  SECTION("a quick failure passes; a failure after the bound is flagged") {
    b.invoke(0, 0, "k");
    b.complete(10, 0, "k", Outcome::contended);
    b.invoke(100, 0, "k");
    b.complete(20'100, 0, "k", Outcome::fail);
    auto found = check_liveness(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::liveness, 20'100, {0}, "k", {2, 3});
  }
  SECTION("an acquire still pending at the end is flagged when the bound ran out") {
    b.invoke(50'000, 2, "k");
    b.invoke(80'000, 4, "j");  // pending for exactly the bound
    b.invoke(90'000, 3, "k");  // pending too, but not for the bound
    auto found = check_liveness(b.history);
    REQUIRE(found.size() == 2);
    require_violation(found[0], Invariant::liveness, 70'000, {2}, "k", {0});
    CHECK_THAT(found[0].detail, Catch::Contains("still pending at the end of the run"));
    require_violation(found[1], Invariant::liveness, 100'000, {4}, "j", {1});
  }
  SECTION("the wait starts when the faults heal") {
    b.history.meta.heal_us = 40'000;
    b.invoke(0, 0, "k");
    b.complete(55'000, 0, "k", Outcome::ok, 1);
    CHECK(check_liveness(b.history).empty());
    b.invoke(56'000, 1, "k");
    b.complete(80'000, 1, "k", Outcome::ok, 2);
    REQUIRE(check_liveness(b.history).size() == 1);
  }
  SECTION("completions match the same client's invocation on the same key") {
    b.invoke(0, 0, "a");
    b.invoke(0, 1, "b");
    b.complete(30'000, 1, "a", Outcome::ok, 1);  // c1 never invoked on a
    b.complete(30'000, 0, "b", Outcome::ok, 1);
    b.complete(30'001, 1, "b", Outcome::ok, 1, Op::release);  // not an acquire
    auto found = check_liveness(b.history);
    REQUIRE(found.size() == 2);
    require_violation(found[0], Invariant::liveness, 20'000, {0}, "a", {0});
    require_violation(found[1], Invariant::liveness, 20'000, {1}, "b", {1});
  }
  SECTION("no bound, no judgement") {
    b.history.meta.liveness_bound_us = 0;
    b.invoke(0, 0, "k");
    CHECK(check_liveness(b.history).empty());
  }
  SECTION("at most per_invariant_max, the earliest") {
    for (int c = 0; c < 5; ++c) b.invoke(c * 10, c, "k");
    auto found = check_liveness(b.history, CheckOptions{2});
    REQUIRE(found.size() == 2);
    CHECK(found[0].clients == Clients{0});
    CHECK(found[1].clients == Clients{1});
  }
}

TEST_CASE("liveness: a client stuck at the end of the run is a violation, bound or none",
          "[checkers][stuck]") {
  Builder b;
  b.history.meta.end_us = 500;
  SECTION("parked in an acquire: named with its key and the operation's invocation") {
    b.invoke(10, 2, "k");
    b.invoke(20, 1, "k");
    b.complete(30, 1, "k", Outcome::ok);
    b.stuck(500, 2, "k", Op::acquire);
    auto found = check_liveness(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::liveness, 500, {2}, "k", {0, 3});
    CHECK(found[0].detail ==
          "c2 was still waiting in acquire on key k, invoked at 10us, when the run ended at 500us "
          "(nothing will ever wake it)");
  }
  SECTION("parked outside any operation") {
    b.stuck(500, 0);
    auto found = check_liveness(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::liveness, 500, {0}, "", {0});
    CHECK(found[0].detail ==
          "c0 was still parked outside any lock operation when the run ended at 500us (nothing "
          "will ever wake it)");
  }
  SECTION("with a bound, a stuck acquire is reported once, as stuck") {
    b.history.meta.liveness_bound_us = 100;
    b.invoke(10, 0, "k");
    b.invoke(20, 1, "k");  // pending past the bound, not stuck (a fault killed it, say)
    b.stuck(500, 0, "k", Op::acquire);
    auto found = check_liveness(b.history);
    REQUIRE(found.size() == 2);
    require_violation(found[0], Invariant::liveness, 120, {1}, "k", {1});
    require_violation(found[1], Invariant::liveness, 500, {0}, "k", {0, 2});
    CHECK_THAT(found[1].detail, Catch::Contains("nothing will ever wake it"));
  }
  SECTION("no stuck event, no bound: nothing to judge") {
    b.invoke(10, 0, "k");
    CHECK(check_liveness(b.history).empty());
  }
}

// ---------------------------------------------------------------------------------------------

// A holder pauses past its lease (gc-pause): its lease and hold overlap the next holder's, and
// with fencing off its stale write is accepted and lost.
History gc_pause_history() {
  Builder b;
  HistoryMeta& meta = b.history.meta;
  meta.clients = 2;
  meta.monotonic_tokens = true;
  meta.end_us = 100'000;
  meta.liveness_bound_us = 30'000;
  b.invoke(0, 0, "k");
  b.grant(100, "memory", "k", "A", 0, 10'000, 33);
  b.complete(200, 0, "k", Outcome::ok, 33);
  b.enter(200, 0, "k");
  b.access(300, 0, "k", Op::read, Outcome::ok, 33, 0);
  b.invoke(5000, 1, "k");
  b.grant(9000, "memory", "k", "B", 1, 10'000, 33);  // a reused token
  b.complete(9100, 1, "k", Outcome::ok, 33);
  b.enter(9100, 1, "k");
  b.access(9200, 1, "k", Op::read, Outcome::ok, 33, 0);
  b.access(9300, 1, "k", Op::write, Outcome::ok, 33, 1);
  b.access(15'300, 0, "k", Op::write, Outcome::ok, 33, 1);
  b.revoke(16'000, "memory", "k", "B", 0);  // A's release removes B's lease
  b.exit(16'000, 0, "k");
  b.invoke(17'000, 0, "k");
  b.final_value(99'000, 1);
  return b.history;
}

TEST_CASE("check_all reports by invariant, each by time", "[checkers]") {
  const History history = gc_pause_history();
  auto found = check_all(history);
  std::vector<Invariant> order;
  for (const Violation& v : found) order.push_back(v.invariant);
  CHECK(order == std::vector<Invariant>{Invariant::mutual_exclusion, Invariant::lease_exclusion,
                                        Invariant::ownership, Invariant::fencing,
                                        Invariant::no_lost_update, Invariant::liveness});
  for (size_t i = 1; i < found.size(); ++i) {
    if (found[i].invariant == found[i - 1].invariant) {
      CHECK(found[i - 1].time_us <= found[i].time_us);
    }
  }
  REQUIRE(found.size() == 6);
  CHECK(found[0].time_us == 9100);
  CHECK(found[1].time_us == 9000);
  CHECK(found[2].time_us == 16'000);
  CHECK(found[3].time_us == 9100);  // B learned the reused token
  CHECK(found[4].time_us == 15'300);
  CHECK(found[5].time_us == 47'000);
}

TEST_CASE("check_all caps each invariant separately", "[checkers]") {
  Builder b;
  b.history.meta.end_us = 1000;
  b.history.meta.liveness_bound_us = 10;
  b.enter(0, 0, "k");
  for (int c = 1; c <= 4; ++c) b.enter(c, c, "k");
  for (int c = 0; c <= 4; ++c) b.invoke(10 + c, c, "j");
  auto found = check_all(b.history, CheckOptions{3});
  REQUIRE(found.size() == 6);
  for (size_t i = 0; i < 3; ++i) CHECK(found[i].invariant == Invariant::mutual_exclusion);
  for (size_t i = 3; i < 6; ++i) CHECK(found[i].invariant == Invariant::liveness);
  CHECK(found[0].time_us == 1);
  CHECK(found[5].time_us == 22);
  CHECK(check_all(b.history, CheckOptions{0}).empty());
}

// A fixed sequence for the messy histories below (no std:: distributions).
class Draws {
 public:
  explicit Draws(uint64_t seed) : prng_(seed) {}
  int below(int n) { return static_cast<int>(prng_.below(static_cast<uint64_t>(n))); }

 private:
  Prng prng_;
};

// A history of anything at all: few clients, keys, servers and values, so leases, holds and
// tokens collide, values recur on other keys and servers, and every checker finds something.
History messy_history(uint64_t seed) {
  Draws draw(seed);
  Builder b;
  const char* keys[] = {"k", "j"};
  const char* servers[] = {"a", "b", "c"};
  const char* values[] = {"A", "B", "C", "D"};
  const Op ops[] = {Op::acquire, Op::release, Op::extend};
  const Outcome outcomes[] = {Outcome::ok, Outcome::fail, Outcome::contended};
  TimeUs t_us = 0;
  for (int step = 0; step < 60; ++step) {
    t_us += draw.below(3) * 100;
    const int client = draw.below(4);
    const std::string key = keys[draw.below(2)];
    const std::string server = servers[draw.below(3)];
    const std::string value = values[draw.below(4)];
    const uint64_t token = static_cast<uint64_t>(draw.below(6) + 1);
    switch (draw.below(11)) {
      case 0: b.invoke(t_us, client, key, ops[draw.below(3)]); break;
      case 1:
        b.complete(t_us, client, key, outcomes[draw.below(3)], token, ops[draw.below(3)]);
        break;
      case 2: b.enter(t_us, client, key, draw.below(3) == 0); break;
      case 3: b.exit(t_us, client, key); break;
      case 4:
        b.access(t_us, client, key, draw.below(2) == 0 ? Op::read : Op::write, Outcome::ok, token,
                 draw.below(8));
        break;
      case 5: b.grant(t_us, server, key, value, client, 100 * (draw.below(20) + 1), token); break;
      case 6: b.extend(t_us, server, key, value, client, 100 * (draw.below(20) + 1)); break;
      case 7: b.revoke(t_us, server, key, value, draw.below(5) - 1); break;
      case 8: b.stuck(t_us, client, key, Op::acquire); break;
      case 9: b.final_value(t_us, draw.below(8), draw.below(3) == 0 ? "" : key); break;
      default:  // a successful acquire that reports its lease, valid or not by its own clock
        b.history.add({.time_us = t_us,
                       .kind = EventKind::complete,
                       .client = client,
                       .key = key,
                       .op = Op::acquire,
                       .outcome = Outcome::ok,
                       .value = value,
                       .local_now_us = 1000,
                       .local_valid_until_us = 500 * draw.below(4)});
        break;
    }
  }
  HistoryMeta& meta = b.history.meta;
  meta.quorum = draw.below(2) + 1;
  meta.servers = 3;
  meta.fencing_on = draw.below(2) == 0;
  meta.monotonic_tokens = draw.below(2) == 0;
  meta.end_us = t_us + 100;
  meta.liveness_bound_us = draw.below(2) * 500;
  return std::move(b.history);
}

void require_same(const std::vector<Violation>& got, const std::vector<Violation>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].invariant == want[i].invariant);
    CHECK(got[i].time_us == want[i].time_us);
    CHECK(got[i].key == want[i].key);
    CHECK(got[i].clients == want[i].clients);
    CHECK(got[i].events == want[i].events);
    CHECK(got[i].detail == want[i].detail);
  }
}

TEST_CASE("check_all's one walk gives what each checker gives alone", "[checkers]") {
  using Checker = std::vector<Violation> (*)(const History&, const CheckOptions&);
  const Checker each[] = {check_mutual_exclusion,
                          check_lease_exclusion,
                          check_ownership,
                          check_fencing,
                          check_no_lost_update,
                          check_liveness,
                          check_fifo,
                          check_writer_preference,
                          check_no_leak,
                          check_valid_on_return,
                          check_error_not_applied};
  std::set<Invariant> seen;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const History history = messy_history(seed);
    for (size_t max : {size_t{0}, size_t{1}, size_t{3}, size_t{64}}) {
      INFO("seed " << seed << ", at most " << max << " per invariant");
      const CheckOptions options{max};
      std::vector<Violation> alone;
      for (Checker checker : each) {
        for (Violation& v : checker(history, options)) alone.push_back(std::move(v));
      }
      const std::vector<Violation> together = check_all(history, options);
      require_same(together, alone);
      for (const Violation& v : together) seen.insert(v.invariant);
    }
  }
  // Not vacuous: every checker that walks the history found something in some history.
  CHECK(seen == std::set<Invariant>{Invariant::mutual_exclusion, Invariant::lease_exclusion,
                                    Invariant::ownership, Invariant::fencing,
                                    Invariant::no_lost_update, Invariant::liveness,
                                    Invariant::valid_on_return});
}

// lease_exclusion by brute force, from its definition: a lease event opens a stretch [t, t + ttl)
// of its (key, server, value), cut short by that lease's next event; a revoke opens none. Two
// values of one key each holding a quorum of live stretches at one instant is a clash.
bool has_quorum_clash(const History& history) {
  struct Stretch {
    const HistoryEvent* event;
    TimeUs end_us;
  };
  std::vector<Stretch> stretches;
  for (size_t i = 0; i < history.size(); ++i) {
    const HistoryEvent& e = history[i];
    if (e.kind != EventKind::grant && e.kind != EventKind::extend) continue;
    TimeUs end_us = e.time_us + e.ttl_us;
    for (size_t j = i + 1; j < history.size(); ++j) {
      const HistoryEvent& next = history[j];
      const bool lease_event = next.kind == EventKind::grant || next.kind == EventKind::extend ||
                               next.kind == EventKind::revoke;
      if (lease_event && next.key == e.key && next.server == e.server && next.value == e.value) {
        end_us = std::min(end_us, next.time_us);
        break;
      }
    }
    stretches.push_back(Stretch{&e, end_us});
  }
  const size_t quorum = static_cast<size_t>(history.meta.quorum);
  for (const Stretch& at : stretches) {
    const TimeUs t_us = at.event->time_us;
    std::map<std::string, size_t> live;  // value -> live stretches on at's key at t
    for (const Stretch& s : stretches) {
      if (s.event->key == at.event->key && s.event->time_us <= t_us && t_us < s.end_us) {
        ++live[s.event->value];
      }
    }
    size_t holding = 0;
    for (const auto& [value, count] : live) holding += count >= quorum ? 1 : 0;
    if (holding >= 2) return true;
  }
  return false;
}

TEST_CASE("lease_exclusion finds a clash exactly when brute force does", "[checkers]") {
  int clashing = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    INFO("seed " << seed);
    const History history = messy_history(seed);
    const bool clash = has_quorum_clash(history);
    CHECK(!check_lease_exclusion(history, CheckOptions{64}).empty() == clash);
    clashing += clash ? 1 : 0;
  }
  // Both answers occur: the comparison is not vacuous either way.
  CHECK(clashing > 30);
  CHECK(clashing < 270);
}

TEST_CASE("LeaseTable: a lease is its key, server and value, or its key and value per owner",
          "[checkers]") {
  History history;
  auto add = [&](const std::string& key, const std::string& server, const std::string& value) {
    HistoryEvent e;
    e.kind = EventKind::grant;
    e.key = key;
    e.server = server;
    e.value = value;
    return history.add(e);
  };
  const size_t k_a_v = add("k", "a", "v");
  const size_t k_b_v = add("k", "b", "v");  // the value on another server
  const size_t j_a_v = add("j", "a", "v");  // ... and on another key
  const size_t k_a_w = add("k", "a", "w");  // another value
  checker_support::LeaseTable<int> table;
  CHECK(table.find(history[k_a_v]) == nullptr);
  table[history[k_a_v]] = 1;
  table[history[k_b_v]] = 2;
  table[history[j_a_v]] = 3;
  CHECK(table.find(history[k_a_w]) == nullptr);
  table[history[k_a_w]] = 4;
  table[history[k_a_v]] += 10;  // found again, not made anew
  CHECK(*table.find(history[k_a_v]) == 11);
  CHECK(*table.find(history[k_b_v]) == 2);
  CHECK(*table.find(history[j_a_v]) == 3);
  CHECK(*table.find(history[k_a_w]) == 4);

  SECTION("per owner: one slot for the value on every server, found without a server") {
    const size_t k_none_v = add("k", "", "v");  // a completion names no server
    checker_support::LeaseTable<int, checker_support::LeaseScope::per_owner> owners;
    owners[history[k_a_v]] = 1;
    owners[history[k_b_v]] += 1;  // the same owner's lease on another server: the same slot
    owners[history[j_a_v]] = 7;   // another key: another owner
    CHECK(*owners.find(history[k_none_v]) == 2);
    CHECK(*owners.find(history[j_a_v]) == 7);
    CHECK(owners.find(history[k_a_w]) == nullptr);
    CHECK(table.find(history[k_none_v]) == nullptr);  // per server: no server, no lease
  }
}

TEST_CASE("ownership: a value on two servers or two keys is two leases", "[checkers]") {
  Builder b;
  b.grant(0, "a", "k", "V", 0, 1000);
  b.grant(10, "b", "k", "V", 1, 1000);  // the same value to c1 on another server
  b.grant(20, "a", "j", "V", 2, 1000);  // ... and on another key
  b.revoke(30, "b", "k", "V", 1);       // c1's own
  b.revoke(40, "a", "j", "V", 2);       // c2's own
  CHECK(check_ownership(b.history).empty());
  b.revoke(50, "a", "k", "V", 2);  // c0's lease, by c2
  auto found = check_ownership(b.history);
  REQUIRE(found.size() == 1);
  require_violation(found[0], Invariant::ownership, 50, {0, 2}, "k", {0, 5});
}

TEST_CASE("a clean history passes every checker", "[checkers]") {
  Builder b;
  HistoryMeta& meta = b.history.meta;
  meta.fencing_on = true;
  meta.monotonic_tokens = true;
  meta.end_us = 10'000;
  meta.liveness_bound_us = 5000;
  for (int c = 0; c < 3; ++c) {
    const TimeUs t0 = c * 1000;
    const uint64_t token = static_cast<uint64_t>(c + 1);
    const std::string value = "v" + std::to_string(c);
    b.invoke(t0, c, "k");
    b.grant(t0 + 10, "memory", "k", value, c, 5000, token);
    b.complete(t0 + 20, c, "k", Outcome::ok, token);
    b.enter(t0 + 20, c, "k");
    b.access(t0 + 30, c, "k", Op::read, Outcome::ok, token, c);
    b.access(t0 + 40, c, "k", Op::write, Outcome::ok, token, c + 1);
    b.exit(t0 + 50, c, "k");
    b.revoke(t0 + 60, "memory", "k", value, c);
  }
  b.final_value(9000, 3);
  CHECK(check_all(b.history).empty());
}

}  // namespace
TEST_CASE("fencing judges the tokens clients received in the servers' grant order", "[checkers]") {
  Builder b;
  b.history.meta.monotonic_tokens = true;
  b.history.meta.end_us = 10'000;
  SECTION("a reply seen late (completion order differs from grant order) is no violation") {
    b.invoke(0, 0, "k");
    b.grant(100, "redis-0", "k", "A", 0, 1'000, 1);
    b.invoke(1200, 1, "k");
    b.grant(1300, "redis-0", "k", "B", 1, 1'000, 2);
    b.complete(1400, 1, "k", Outcome::ok, 2);
    b.complete(2000, 0, "k", Outcome::ok, 1);  // A was paused with its reply in hand
    CHECK(check_fencing(b.history).empty());
  }
  SECTION("a grant given up because it arrived after its TTL does not count as received") {
    b.invoke(0, 0, "k");
    b.grant(100, "redis-0", "k", "A", 0, 50, 2);  // A paused: this reply comes too late
    b.invoke(200, 1, "k");
    b.grant(300, "redis-0", "k", "B", 1, 1'000, 3);
    b.complete(400, 1, "k", Outcome::ok, 3);
    b.grant(2000, "redis-0", "k", "A", 0, 1'000, 4);  // A's retry
    b.complete(2100, 0, "k", Outcome::ok, 4);
    CHECK(check_fencing(b.history).empty());
  }
  SECTION("a client handed a token the server did not issue is caught") {
    b.invoke(0, 0, "k");
    b.grant(100, "redis-0", "k", "A", 0, 1'000, 1);
    b.complete(200, 0, "k", Outcome::ok, 900);  // e.g. a random token
    b.invoke(1200, 1, "k");
    b.grant(1300, "redis-0", "k", "B", 1, 1'000, 2);
    b.complete(1400, 1, "k", Outcome::ok, 17);
    auto found = check_fencing(b.history);
    REQUIRE(found.size() == 1);
    CHECK(found[0].clients == Clients{0, 1});
    CHECK(found[0].time_us == 1400);
  }
}

}  // namespace lockstep

namespace lockstep {

TEST_CASE("valid_on_return: by the client's own clock, and by the servers' leases",
          "[checkers][valid_on_return]") {
  auto returned = [](int64_t local_now_us, int64_t local_valid_until_us) {
    History h;
    h.meta.clients = 1;
    h.add({.time_us = 100,
           .kind = EventKind::grant,
           .client = 0,
           .key = "k",
           .server = "s",
           .value = "v",
           .ttl_us = 1'000});
    h.add({.time_us = 600,
           .kind = EventKind::complete,
           .client = 0,
           .key = "k",
           .op = Op::acquire,
           .outcome = Outcome::ok,
           .value = "v",
           .local_now_us = local_now_us,
           .local_valid_until_us = local_valid_until_us});
    return h;
  };
  CHECK(check_valid_on_return(returned(5'000, 5'400)).empty());
  const std::vector<Violation> own = check_valid_on_return(returned(5'000, 4'900));
  REQUIRE(own.size() == 1);
  CHECK(own[0].detail.find("100us ago by its own clock") != std::string::npos);
  CHECK(check_valid_on_return(returned(5'000, 5'000)).size() == 1);  // ends as it returns

  // The servers: the lease granted at 100 for 1000 us ended at 1100; returning at 1200 reports a
  // lock no server holds, whatever the client's clock says. A revoke ends it too.
  History late = returned(5'000, 5'400);
  late.add({.time_us = 1'200,
            .kind = EventKind::complete,
            .client = 0,
            .key = "k",
            .op = Op::extend,
            .outcome = Outcome::ok,
            .value = "v",
            .local_now_us = 5'600,
            .local_valid_until_us = 6'600});
  const std::vector<Violation> servers = check_valid_on_return(late);
  REQUIRE(servers.size() == 1);
  CHECK(servers[0].time_us == 1'200);
  CHECK(servers[0].detail.find("only 0 server(s)") != std::string::npos);
}

// A library that reports no validity (etcd3: its lease kept alive from the grant) is not held to
// the TTL the harness counts from its call (validity_assumed): only the servers' leases judge it.
// And a lock that stores its value under a key of its own naming ("mutex:k" for the caller's "k",
// redis-semaphore) is judged by that lease: before, (b) found nothing under "k" and said nothing.
TEST_CASE(
    "valid_on_return: an assumed validity is not the lock's word, and its lease under its own key "
    "is",
    "[checkers][valid_on_return]") {
  auto history = [](const char* lease_key, bool assumed, TimeUs returned_us) {
    History h;
    h.meta.clients = 1;
    h.add({.time_us = 100,
           .kind = EventKind::grant,
           .client = 0,
           .key = lease_key,
           .server = "s",
           .value = "v",
           .ttl_us = 1'000});
    h.add({.time_us = returned_us,
           .kind = EventKind::complete,
           .client = 0,
           .key = "k",
           .op = Op::acquire,
           .outcome = Outcome::ok,
           .value = "v",
           .local_now_us = 5'000,
           .local_valid_until_us = 4'000,  // the TTL from the call: over by 1 ms
           .validity_assumed = assumed});
    return h;
  };
  // The lease is live at 600: an assumed validity that ran out says nothing; a reported one does.
  CHECK(check_valid_on_return(history("k", /*assumed=*/true, 600)).empty());
  CHECK(check_valid_on_return(history("k", /*assumed=*/false, 600)).size() == 1);
  CHECK(check_valid_on_return(history("mutex:k", /*assumed=*/true, 600)).empty());
  // Returned at 1'200, after the lease ended at 1'100: the servers' word, under either key.
  for (const char* lease_key : {"k", "mutex:k"}) {
    INFO(lease_key);
    const std::vector<Violation> late = check_valid_on_return(history(lease_key, true, 1'200));
    REQUIRE(late.size() == 1);
    CHECK(late[0].detail.find("only 0 server(s)") != std::string::npos);
  }
}

TEST_CASE("valid_on_return: a value used on two keys is two owners",
          "[checkers][valid_on_return]") {
  // k1's lease with value v lives long; k2's lease with the same value is revoked at once. k2's
  // acquire returning later reports a lock no server holds for k2, whatever k1's lease says.
  History h;
  h.meta.clients = 2;
  auto lease = [&h](TimeUs t_us, EventKind kind, int client, const char* key, int64_t ttl_us) {
    h.add({.time_us = t_us,
           .kind = kind,
           .client = client,
           .key = key,
           .server = "s",
           .value = "v",
           .ttl_us = ttl_us});
  };
  auto returned = [&h](TimeUs t_us, int client, const char* key) {
    h.add({.time_us = t_us,
           .kind = EventKind::complete,
           .client = client,
           .key = key,
           .op = Op::acquire,
           .outcome = Outcome::ok,
           .value = "v"});
  };
  lease(100, EventKind::grant, 0, "k1", 1'000'000);
  lease(110, EventKind::grant, 1, "k2", 1'000'000);
  lease(120, EventKind::revoke, 1, "k2", 0);
  returned(200, 0, "k1");
  returned(210, 1, "k2");
  const std::vector<Violation> found = check_valid_on_return(h);
  REQUIRE(found.size() == 1);
  CHECK(found[0].key == "k2");
  CHECK(found[0].time_us == 210);
  CHECK(found[0].events == std::vector<size_t>{2, 4});
}

// ---------------------------------------------------------------------------------------------

// A failed operation, as the harness records it: its outcome and the lock value it used.
size_t failed(Builder& b, TimeUs t_us, int client, const std::string& key, Op op, Outcome outcome,
              const std::string& value) {
  HistoryEvent e;
  e.kind = EventKind::complete;
  e.time_us = t_us;
  e.client = client;
  e.key = key;
  e.op = op;
  e.outcome = outcome;
  e.value = value;
  return b.history.add(e);
}

TEST_CASE("error_not_applied: an error must leave nothing behind",
          "[checkers][error_not_applied]") {
  auto contract = [](Builder& b, int quorum = 1) {
    b.history.meta.errors_mean_not_applied = true;
    b.history.meta.servers = 3;
    b.history.meta.quorum = quorum;
  };
  SECTION("an acquire that failed while its grant is live") {
    Builder b;
    contract(b);
    b.invoke(0, 0, "k");
    const size_t grant = b.grant(100, "s0", "k", "v", 0, 1'000);
    const size_t done = failed(b, 600, 0, "k", Op::acquire, Outcome::error, "v");
    const std::vector<Violation> found = check_error_not_applied(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::error_not_applied, 600, {0}, "k", {0, grant, done});
  }
  SECTION("the same said as an unknown outcome, or by a lock that makes no such claim") {
    for (const bool claims : {true, false}) {
      Builder b;
      contract(b);
      b.history.meta.errors_mean_not_applied = claims;
      b.invoke(0, 0, "k");
      b.grant(100, "s0", "k", "v", 0, 1'000);
      failed(b, 600, 0, "k", Op::acquire, claims ? Outcome::unknown : Outcome::error, "v");
      CHECK(check_error_not_applied(b.history).empty());
    }
  }
  SECTION("a grant that ended before the call returned left nothing behind") {
    Builder b;
    contract(b);
    b.invoke(0, 0, "k");
    b.grant(100, "s0", "k", "v", 0, 400);
    failed(b, 600, 0, "k", Op::acquire, Outcome::error, "v");
    CHECK(check_error_not_applied(b.history).empty());
    b.invoke(700, 0, "k");  // the next acquire: the window closes
    b.grant(800, "s0", "k", "v", 0, 1'000);
    CHECK(check_error_not_applied(b.history).empty());
  }
  SECTION("a request delivered after the error sets up a lease nobody knows it holds") {
    Builder b;
    contract(b);
    b.invoke(0, 0, "k");
    failed(b, 600, 0, "k", Op::acquire, Outcome::error, "v");
    const size_t late = b.grant(900, "s0", "k", "v", 0, 1'000);
    const std::vector<Violation> found = check_error_not_applied(b.history);
    REQUIRE(found.size() == 1);
    CHECK(found[0].time_us == 900);
    CHECK(found[0].events == Events{0, 1, late});
  }
  SECTION("a quorum lock: a minority's grants are no lock taken") {
    Builder b;
    contract(b, 2);
    b.invoke(0, 0, "k");
    b.grant(100, "s0", "k", "v", 0, 1'000);
    b.grant(110, "s0", "k", "v", 0, 1'000);  // the same server again
    failed(b, 600, 0, "k", Op::acquire, Outcome::error, "v");
    CHECK(check_error_not_applied(b.history).empty());
    b.grant(650, "s1", "k", "v", 0, 1'000);  // late, on a second server
    CHECK(check_error_not_applied(b.history).size() == 1);
  }
  SECTION("a release that failed though the server removed the lease") {
    Builder b;
    contract(b);
    b.invoke(0, 0, "k", Op::release);
    const size_t revoke = b.revoke(100, "s0", "k", "v", 0);
    const size_t done = failed(b, 600, 0, "k", Op::release, Outcome::error, "v");
    const std::vector<Violation> found = check_error_not_applied(b.history);
    REQUIRE(found.size() == 1);
    require_violation(found[0], Invariant::error_not_applied, 600, {0}, "k", {0, revoke, done});
  }
  SECTION("an extend: only what came before its completion is its own") {
    Builder b;
    contract(b);
    b.invoke(0, 0, "k", Op::extend);
    failed(b, 600, 0, "k", Op::extend, Outcome::error, "v");
    b.extend(700, "s0", "k", "v", 0, 1'000);  // an auto-extension has no invocation of its own
    CHECK(check_error_not_applied(b.history).empty());
    b.invoke(800, 0, "k", Op::extend);
    b.extend(850, "s0", "k", "v", 0, 1'000);
    failed(b, 900, 0, "k", Op::extend, Outcome::error, "v");
    CHECK(check_error_not_applied(b.history).size() == 1);
  }
  SECTION("another key's lease with the same value is not this operation's") {
    Builder b;
    contract(b);
    b.invoke(0, 0, "k");
    b.grant(100, "s0", "other", "v", 0, 1'000);
    failed(b, 600, 0, "k", Op::acquire, Outcome::error, "v");
    CHECK(check_error_not_applied(b.history).empty());
  }
}

}  // namespace lockstep
