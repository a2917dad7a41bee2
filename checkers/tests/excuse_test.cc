// Which violations a fault excuses (checkers/excuse.h), on small hand-built histories:
// only a fault outside the envelope, of a kind that can break the invariant, that touched the
// clients and the window involved; a pause only as the holder's overrun; never globally.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "checkers/excuse.h"
#include "history/history_jsonl.h"

namespace lockstep {
namespace {

// Two clients on key k: c0 acquires at 100 and holds until `c0_exit_us`; c1 acquires at 1000 and
// holds until 2000. So they overlap from 1000 (a mutual_exclusion violation at 1000).
struct Overlap {
  History history;

  explicit Overlap(TimeUs c0_exit_us = 3000) {
    history.meta.clients = 2;
    hold(0, 100, c0_exit_us);
    hold(1, 1000, 2000);
    sort();
  }
  void hold(int client, TimeUs from_us, TimeUs to_us) {
    add({.time_us = from_us - 10,
         .kind = EventKind::invoke,
         .client = client,
         .key = "k",
         .op = Op::acquire});
    add({.time_us = from_us,
         .kind = EventKind::complete,
         .client = client,
         .key = "k",
         .op = Op::acquire,
         .outcome = Outcome::ok});
    add({.time_us = from_us, .kind = EventKind::cs_enter, .client = client, .key = "k"});
    add({.time_us = to_us, .kind = EventKind::cs_exit, .client = client, .key = "k"});
  }
  void fault(FaultKind kind, TimeUs at_us, TimeUs end_us, int client = -1, int64_t amount = 0) {
    add({.time_us = at_us,
         .kind = EventKind::fault,
         .client = client,
         .end_us = end_us,
         .fault = kind,
         .amount = amount,
         .detail = std::string(to_string(kind))});
    sort();
  }
  void add(HistoryEvent e) { pending_.push_back(std::move(e)); }
  // A server's grant of `value` to `client`, and that client's acquire returning it.
  void granted(int client, TimeUs at_us, std::string server, std::string value, TimeUs ttl_us) {
    add({.time_us = at_us,
         .kind = EventKind::grant,
         .client = client,
         .key = "k",
         .server = std::move(server),
         .value = std::move(value),
         .ttl_us = ttl_us});
  }
  void acquired(int client, TimeUs at_us, std::string value) {
    add({.time_us = at_us,
         .kind = EventKind::complete,
         .client = client,
         .key = "k",
         .op = Op::acquire,
         .outcome = Outcome::ok,
         .value = std::move(value)});
  }
  // Events in time order (a fault at the same instant as an entry comes first), indices renumbered.
  void sort() {
    std::vector<HistoryEvent> all = history.events();
    all.insert(all.end(), pending_.begin(), pending_.end());
    pending_.clear();
    std::stable_sort(all.begin(), all.end(), [](const HistoryEvent& a, const HistoryEvent& b) {
      return a.time_us < b.time_us;
    });
    const HistoryMeta meta = history.meta;
    history = History();
    history.meta = meta;
    for (HistoryEvent& e : all) history.add(e);
  }
  Violation judged(Invariant invariant = Invariant::mutual_exclusion) {
    return judged_as({.invariant = invariant, .time_us = 1000, .clients = {0, 1}, .key = "k"});
  }
  // As a checker measures it: c0 held first (claimed at 100), c1 came in at 1000, and the two
  // overlapped for excess_us.
  Violation measured(TimeUs excess_us, Invariant invariant = Invariant::mutual_exclusion) {
    return judged_as({.invariant = invariant,
                      .time_us = 1000,
                      .clients = {0, 1},
                      .key = "k",
                      .holder = 0,
                      .entrant = 1,
                      .claim_since_us = 100,
                      .excess_us = excess_us});
  }
  Violation judged_as(Violation v) {
    std::vector<Violation> vs = {std::move(v)};
    excuse_violations(history, vs);
    return vs.front();
  }

 private:
  std::vector<HistoryEvent> pending_;
};

TEST_CASE("no fault: a violation is not excused, and says so", "[excuse]") {
  Overlap o;
  const Violation v = o.judged();
  CHECK_FALSE(v.excused());
  CHECK(v.excuse == "not excused");
}

TEST_CASE("a pause of the holder while inside, the other entering meanwhile, is an overrun",
          "[excuse]") {
  Overlap o;
  o.fault(FaultKind::pause, 500, 1500, 0);
  const Violation v = o.judged();
  REQUIRE(v.excused());
  CHECK(o.history[*v.excused_by].fault == FaultKind::pause);
  CHECK(v.excuse.find("holder overrun: c0") != std::string::npos);
}

TEST_CASE("a pause excuses nothing when it ended before the other got in", "[excuse]") {
  Overlap o;
  o.fault(FaultKind::pause, 500, 900, 0);  // c0 woke with validity it could check
  CHECK_FALSE(o.judged().excused());
}

TEST_CASE("a pause of a client not involved excuses nothing", "[excuse]") {
  Overlap o;
  o.history.meta.clients = 3;
  o.fault(FaultKind::pause, 500, 1500, 2);
  CHECK_FALSE(o.judged().excused());
}

TEST_CASE("a pause before the holder was inside excuses nothing (a slow acquire's job)",
          "[excuse]") {
  Overlap o;
  o.fault(FaultKind::pause, 95, 1500, 0);  // while its acquire was in flight
  CHECK_FALSE(o.judged().excused());
}

TEST_CASE("a pause never excuses what a server does, nor ownership or liveness", "[excuse]") {
  for (Invariant i : {Invariant::lease_exclusion, Invariant::ownership, Invariant::liveness,
                      Invariant::fencing}) {
    Overlap o;
    o.fault(FaultKind::pause, 500, 1500, 0);
    CHECK_FALSE(o.judged(i).excused());
  }
}

TEST_CASE("a pause excuses a lost update only where fencing could not refuse it", "[excuse]") {
  Overlap unprotected;
  unprotected.fault(FaultKind::pause, 500, 1500, 0);
  CHECK(unprotected.judged(Invariant::no_lost_update).excused());

  Overlap fenced;
  fenced.history.meta.fencing_on = true;
  fenced.history.meta.monotonic_tokens = true;
  fenced.fault(FaultKind::pause, 500, 1500, 0);
  CHECK_FALSE(fenced.judged(Invariant::no_lost_update).excused());
}

TEST_CASE("server drift: slow or within the envelope excuses nothing, faster does", "[excuse]") {
  Overlap slow;
  slow.fault(FaultKind::server_drift, 200, 5000, -1, -300'000);
  CHECK_FALSE(slow.judged(Invariant::lease_exclusion).excused());
  CHECK_FALSE(slow.judged().excused());

  Overlap tolerated;
  tolerated.history.meta.envelope.server_fast_ppm_max = 10'000;
  tolerated.fault(FaultKind::server_drift, 200, 5000, -1, 10'000);
  CHECK_FALSE(tolerated.judged(Invariant::lease_exclusion).excused());

  Overlap fast;
  fast.history.meta.envelope.server_fast_ppm_max = 10'000;
  fast.fault(FaultKind::server_drift, 200, 5000, -1, 10'001);
  const Violation v = fast.judged(Invariant::lease_exclusion);
  CHECK(v.excused());
  CHECK(v.excuse.find("outside the adapter's fault envelope") != std::string::npos);
}

TEST_CASE("an entrant granted by fewer servers than the quorum entered on no lease: no excuse",
          "[excuse]") {
  // Three nodes, a quorum of 2. c1's acquire (value v1) was granted by one node only, and a fast
  // server clock is outside the envelope: it may excuse the overlap of an entrant that held a
  // quorum, never one that did not.
  const auto with_grants = [](int servers_granting_c1) {
    Overlap o;
    o.history.meta.quorum = 2;
    o.fault(FaultKind::server_drift, 0, 5000, -1, 1'000'000);
    for (int s = 0; s < servers_granting_c1; ++s)
      o.granted(1, 990, "redis-" + std::to_string(s), "v1", 10'000);
    o.acquired(1, 995, "v1");
    o.sort();
    return o;
  };
  Overlap half = with_grants(1);
  const Violation alone = half.measured(1'000);
  CHECK_FALSE(alone.excused());
  CHECK(alone.excuse ==
        "not excused: c1 entered on grants from 1 server(s), fewer than the quorum of 2");
  Overlap majority = with_grants(2);
  CHECK(majority.measured(1'000).excused());
}

TEST_CASE("a server clock fault excuses an entrant only where it ended the holder's lease early",
          "[excuse]") {
  // c0 holds v0 (acquired at 100), c1 enters on v1 at 1000, both by the grants below; every
  // server's clock runs twice as fast from 0, far outside the envelope, and the overlap's 1 ms is
  // well within what that drift explains by size. It explains it only if it made a server end
  // c0's live lease before granting c1.
  const auto with_leases = [](int quorum, std::vector<std::string> c0_servers,
                              std::vector<std::string> c1_servers, TimeUs c0_ttl_us,
                              int64_t drift_ppm = 1'000'000) {
    Overlap o;
    o.history.meta.quorum = quorum;
    if (drift_ppm != 0) o.fault(FaultKind::server_drift, 0, 5000, -1, drift_ppm);
    for (const std::string& server : c0_servers) o.granted(0, 95, server, "v0", c0_ttl_us);
    o.acquired(0, 100, "v0");
    for (const std::string& server : c1_servers) o.granted(1, 990, server, "v1", 10'000);
    o.acquired(1, 995, "v1");
    o.sort();
    return o;
  };
  SECTION("independent servers: a majority won where the holder never held ended nothing") {
    // Redlock over five nodes counting two as a quorum (bad-redlock-half-quorum).
    Overlap disjoint = with_leases(3, {"r0", "r1"}, {"r2", "r3", "r4"}, 1'000);
    CHECK_FALSE(disjoint.measured(1'000).excused());
    // The same drift over a majority that shares r1 with the holder, whose lease there (1 ms from
    // 95us) the doubled clock ended by 990us: it did let c1 in.
    Overlap shared = with_leases(3, {"r0", "r1"}, {"r1", "r2", "r3"}, 1'000);
    CHECK(shared.measured(1'000).excused());
    // A 10 ms lease had 9.1 ms left at c1's grant; the drift had gained 0.9 ms of it.
    Overlap live = with_leases(3, {"r0", "r1"}, {"r1", "r2", "r3"}, 10'000);
    CHECK_FALSE(live.measured(1'000).excused());
  }
  SECTION("one service: a grant beside a live lease the clock did not end is the lock's own") {
    // A second document for a locked key (bad-mongo-no-unique): 9.1 ms of c0's lease were left.
    Overlap beside = with_leases(1, {"mongod-0"}, {"mongod-0"}, 10'000);
    CHECK_FALSE(beside.measured(1'000).excused());
    Overlap ended = with_leases(1, {"mongod-0"}, {"mongod-1"}, 1'000);
    CHECK(ended.measured(1'000).excused());
  }
  SECTION("a double grant is judged by the values its lease facts name") {
    // The servers' view (lease_exclusion), found at c1's grant, before its acquire returned.
    const auto double_grant = [](Overlap& o) {
      std::vector<size_t> grants;
      for (const HistoryEvent& e : o.history.events()) {
        if (e.kind == EventKind::grant) grants.push_back(e.index);
      }
      return o.judged_as({.invariant = Invariant::lease_exclusion,
                          .time_us = 990,
                          .clients = {0, 1},
                          .key = "k",
                          .events = grants,
                          .holder = 0,
                          .entrant = 1,
                          .claim_since_us = 95,
                          .excess_us = 1'000});
    };
    Overlap beside = with_leases(1, {"mongod-0"}, {"mongod-0"}, 10'000);
    CHECK_FALSE(double_grant(beside).excused());
    Overlap ended = with_leases(1, {"mongod-0"}, {"mongod-0"}, 1'000);
    CHECK(double_grant(ended).excused());
  }
  SECTION("a jump forward ends a live lease by its size") {
    Overlap o = with_leases(1, {"redis"}, {"redis"}, 10'000, 0);
    o.fault(FaultKind::server_clock_jump, 500, 500, -1, 20'000);
    const Violation v = o.measured(1'000);
    REQUIRE(v.excused());
    CHECK(o.history[*v.excused_by].fault == FaultKind::server_clock_jump);
    Overlap small = with_leases(1, {"redis"}, {"redis"}, 10'000, 0);
    small.fault(FaultKind::server_clock_jump, 500, 500, -1, 5'000);  // 9.1 ms were left
    CHECK_FALSE(small.measured(1'000).excused());
  }
  SECTION("the lease cut short may be the entrant's: its grant came first, its reply late") {
    // c1 is granted v1 (10 ms) at 50, the server then grants c0 v0 at 95 beside it, c0 enters at
    // 100, and c1, its reply late, enters at 1000 on v1: the server had ended c1's lease, not
    // c0's. A 20 ms jump after c1's grant explains it; a 5 ms one leaves 5 ms of it; one before
    // c1's grant ended nothing.
    const auto reversed = [](TimeUs jump_at_us, int64_t jump_us) {
      Overlap o;
      o.history.meta.quorum = 1;
      o.granted(1, 50, "redis", "v1", 10'000);
      o.granted(0, 95, "redis", "v0", 10'000);
      o.acquired(0, 100, "v0");
      o.acquired(1, 995, "v1");
      o.fault(FaultKind::server_clock_jump, jump_at_us, jump_at_us, -1, jump_us);
      return o;
    };
    Overlap ended = reversed(60, 20'000);
    const Violation v = ended.measured(1'000);
    REQUIRE(v.excused());
    CHECK(ended.history[*v.excused_by].fault == FaultKind::server_clock_jump);
    Overlap small = reversed(60, 5'000);
    CHECK_FALSE(small.measured(1'000).excused());
    Overlap before = reversed(20, 20'000);
    CHECK_FALSE(before.measured(1'000).excused());
  }
  SECTION("clock faults that each gained too little together ended the lease") {
    // 4.1 ms of a 5 ms lease were left at c1's grant: the doubled clock gained 0.9 ms of it, a
    // second drift (4x from 500us) 1.5 ms more, with 2 ms of slack that covers it, neither alone.
    Overlap alone = with_leases(1, {"redis"}, {"redis"}, 5'000);
    CHECK_FALSE(alone.measured(1'000).excused());
    Overlap both = with_leases(1, {"redis"}, {"redis"}, 5'000);
    both.fault(FaultKind::server_drift, 500, 1500, -1, 3'000'000);
    CHECK(both.measured(1'000).excused());
  }
}

TEST_CASE("a server clock fault excuses an entrant where it made the server's timer end a session",
          "[excuse]") {
  // A PostgreSQL session lock: no expiry (a lease as long as the session), ended by the server's
  // keepalive timer (a revoke no client asked for) at 900us; c1 is granted at 990us while c0
  // works on. A clock running twice as fast fired that timer early: had it run true, the session
  // would have lasted past c1's grant. A client's own release ends nothing early.
  const auto session = [](int revoker, int64_t drift_ppm) {
    Overlap o;
    if (drift_ppm != 0) o.fault(FaultKind::server_drift, 0, 5000, -1, drift_ppm);
    o.granted(0, 95, "postgres", "v0", 1'000'000'000);
    o.acquired(0, 100, "v0");
    o.add({.time_us = 900,
           .kind = EventKind::revoke,
           .client = revoker,
           .key = "k",
           .server = "postgres",
           .value = "v0"});
    o.granted(1, 990, "postgres", "v1", 1'000'000'000);
    o.acquired(1, 995, "v1");
    o.sort();
    return o;
  };
  CHECK(session(-1, 1'000'000).measured(1'000).excused());
  CHECK_FALSE(session(-1, 0).measured(1'000).excused());         // no fault to excuse it
  CHECK_FALSE(session(0, 1'000'000).measured(1'000).excused());  // c0's own release
  // Slower: it ended nothing early.
  CHECK_FALSE(session(-1, -300'000).measured(1'000).excused());
}

TEST_CASE("a grant that promised nothing needs no explanation beside the holder's lease",
          "[excuse]") {
  // etcd's Lock RPC told c1 it holds a key already gone (a grant with ttl 0, etcd-io/etcd#11456)
  // while c0's lease was live; c1 entered later on a real grant, after a server clock running
  // twice as fast expired c0's lease early (a revoke by the server's timer). The phantom grant
  // promised no lease: the drift alone let c1 in (etcd-lock sweep seed 1511).
  const auto story = [](bool phantom) {
    Overlap o;
    o.fault(FaultKind::server_drift, 0, 5000, -1, 1'000'000);
    o.granted(0, 95, "etcd", "v0", 1'000'000);
    o.acquired(0, 100, "v0");
    if (phantom) o.granted(1, 300, "etcd", "v1", 0);
    o.add({.time_us = 900,
           .kind = EventKind::revoke,
           .client = -1,
           .key = "k",
           .server = "etcd",
           .value = "v0"});
    o.granted(1, 990, "etcd", "v1", 1'000'000);
    o.acquired(1, 995, "v1");
    o.sort();
    return o;
  };
  CHECK(story(false).measured(1'000).excused());
  CHECK(story(true).measured(1'000).excused());
}

TEST_CASE("a fault that ended before the window excuses nothing, nor lost state before the lease",
          "[excuse]") {
  Overlap early_drift;
  early_drift.fault(FaultKind::server_drift, 10, 50, -1, 400'000);  // before either acquire
  CHECK_FALSE(early_drift.judged(Invariant::lease_exclusion).excused());

  // A failover before the first holder's lease existed lost nothing of it.
  Overlap early_failover;
  early_failover.fault(FaultKind::failover, 10, 10, -1, 3);
  CHECK_FALSE(early_failover.measured(1000, Invariant::fencing).excused());

  Overlap during_lease;
  during_lease.fault(FaultKind::failover, 500, 500, -1, 3);  // lost 3 acknowledged writes
  const Violation v = during_lease.measured(1000, Invariant::fencing);
  CHECK(v.excused());
  CHECK(v.excuse.find("lost 3 acknowledged write(s)") != std::string::npos);
}

TEST_CASE("a failover that lost no acknowledged write excuses nothing", "[excuse]") {
  Overlap nothing_lost;
  nothing_lost.fault(FaultKind::failover, 500, 500, -1, 0);
  CHECK_FALSE(nothing_lost.measured(1000, Invariant::fencing).excused());
  CHECK_FALSE(nothing_lost.measured(1000).excused());
  Overlap unknown;  // a real server: what the replica lacked is not known
  unknown.fault(FaultKind::failover, 500, 500, -1, -1);
  CHECK(unknown.measured(1000, Invariant::fencing).excused());
}

TEST_CASE("a clock fault excuses no more than its size can explain", "[excuse]") {
  // A server jump of +1ms cannot explain a second of overlap; one of 2 s can.
  Overlap small_jump;
  small_jump.fault(FaultKind::server_clock_jump, 500, 500, -1, 1'000);
  CHECK_FALSE(small_jump.measured(1'000'000).excused());
  Overlap big_jump;
  big_jump.fault(FaultKind::server_clock_jump, 500, 500, -1, 2'000'000);
  CHECK(big_jump.measured(1'000'000).excused());
  // A jump before the holder's lease began ends nothing of it.
  Overlap jump_before;
  jump_before.fault(FaultKind::server_clock_jump, 50, 50, -1, 2'000'000);
  CHECK_FALSE(jump_before.measured(1'000).excused());

  // A client clock 1 ppm slower than the lock allows for, over under a second, explains
  // microseconds, not 193 ms.
  Overlap barely;
  barely.history.meta.envelope.client_slow_ppm_max = 500;
  barely.fault(FaultKind::clock_drift, 0, 5000, 0, -501);
  CHECK_FALSE(barely.measured(193'000).excused());
  Overlap far;
  far.history.meta.envelope.client_slow_ppm_max = 500;
  far.fault(FaultKind::clock_drift, 0, 5000, 0, -300'000);  // 30% slow over 900 us: 270 us
  CHECK(far.measured(200).excused());
  CHECK_FALSE(far.measured(193'000).excused());
}

TEST_CASE("a wall clock ahead excuses only its own client's early entry", "[excuse]") {
  // A forward jump lets the jumping client take the lock early: it must be the one that came in,
  // not the holder, and by no more than the jump.
  Overlap holder_ahead;
  holder_ahead.history.meta.envelope.client_wall_clock = false;  // it sends wall times
  holder_ahead.fault(FaultKind::clock_jump, 500, 500, 0, 5'000);
  CHECK_FALSE(holder_ahead.measured(1'000).excused());
  Overlap entrant_ahead;
  entrant_ahead.history.meta.envelope.client_wall_clock = false;
  entrant_ahead.fault(FaultKind::clock_jump, 500, 500, 1, 5'000);
  CHECK(entrant_ahead.measured(1'000).excused());
  CHECK_FALSE(entrant_ahead.measured(1'000'000).excused());  // a +5 ms jump, a second of overlap
}

TEST_CASE(
    "where clients read each other's wall deadlines, a drifting clock excuses what it "
    "gained or lost",
    "[excuse]") {
  // c1's clock runs 30% fast from 0: by its entry at 1000 it has gained 300 us, so it read c0's
  // deadline as past up to 300 us early: lease_exclusion (and the overlap) up to that is its.
  const auto drifting = [](int client, bool compare_deadlines, int64_t ppm) {
    Overlap o;
    o.history.meta.envelope.client_wall_clock = false;
    o.history.meta.envelope.clients_compare_wall_deadlines = compare_deadlines;
    o.fault(FaultKind::clock_drift, 0, 5000, client, ppm);
    return o;
  };
  const auto fast = [&drifting](int client, bool compare_deadlines) {
    return drifting(client, compare_deadlines, 300'000);
  };
  CHECK(fast(1, true).measured(250, Invariant::lease_exclusion).excused());
  CHECK(fast(1, true).measured(250).excused());
  CHECK_FALSE(fast(1, true).measured(10'000, Invariant::lease_exclusion).excused());  // > gained
  CHECK_FALSE(fast(0, true).measured(250, Invariant::lease_exclusion).excused());  // the holder's
  // A lock that times on its own clocks only: a fast clock only makes a client leave early.
  CHECK_FALSE(fast(1, false).measured(250, Invariant::lease_exclusion).excused());
  CHECK_FALSE(fast(1, false).measured(250).excused());
  // c0's clock runs 30% slow from 0, inside a lock's slow allowance or not: by the overlap's end
  // (1000 + 250) it has lost 375 us, so the deadlines it wrote ended that early by c1's clock.
  Overlap slow_holder = drifting(0, true, -300'000);
  slow_holder.history.meta.envelope.client_slow_ppm_max = 500'000;
  CHECK(slow_holder.measured(250, Invariant::lease_exclusion).excused());
  CHECK_FALSE(slow_holder.measured(10'000, Invariant::lease_exclusion).excused());
  // ... also as the overlap's entrant (its reply came late, after the other's entry), not as a
  // bystander.
  CHECK(drifting(1, true, -300'000).measured(250).excused());
  CHECK_FALSE(drifting(2, true, -300'000).measured(250).excused());
}

TEST_CASE(
    "where clients read each other's wall deadlines, an entry after an excused takeover of "
    "the same lease is excused with it",
    "[excuse]") {
  // c1's clock is 5 ms ahead: it takes c0's lease over at 1000 (excused) and releases; c2 then
  // finds the key free at 1500 while c0's deadline still runs.
  const auto judged = [](bool compare_deadlines) {
    Overlap o;
    o.history.meta.clients = 3;
    o.history.meta.envelope.client_wall_clock = false;
    o.history.meta.envelope.clients_compare_wall_deadlines = compare_deadlines;
    o.fault(FaultKind::clock_jump, 500, 500, 1, 5'000);
    const auto overlap = [](int entrant, TimeUs at_us) {
      return Violation{.invariant = Invariant::lease_exclusion,
                       .time_us = at_us,
                       .clients = {0, entrant},
                       .key = "k",
                       .holder = 0,
                       .entrant = entrant,
                       .claim_since_us = 100,
                       .excess_us = 1'000};
    };
    std::vector<Violation> vs = {overlap(1, 1000), overlap(2, 1500)};
    excuse_violations(o.history, vs);
    return vs;
  };
  const std::vector<Violation> chained = judged(true);
  CHECK(chained[0].excused());
  CHECK(chained[1].excused());
  CHECK(chained[1].excuse.find("follows from the excused takeover") != std::string::npos);
  // Elsewhere a takeover erases nothing: the key's TTL still holds the holder's claim.
  const std::vector<Violation> alone = judged(false);
  CHECK(alone[0].excused());
  CHECK_FALSE(alone[1].excused());
}

TEST_CASE("a paused holder's overrun is the pause's, whatever it does on waking", "[excuse]") {
  // Refusing its stale write is fencing's job; a validity that told it to go on is
  // validity_within_lease's.
  Overlap careless;
  careless.fault(FaultKind::pause, 500, 1500, 0);
  careless.add({.time_us = 1600,
                .kind = EventKind::access,
                .client = 0,
                .key = "k",
                .op = Op::write,
                .outcome = Outcome::ok});
  careless.sort();
  CHECK(careless.judged().excused());
}

TEST_CASE(
    "faults that each explain a part of an overlap excuse it together, never a late pause "
    "alone",
    "[excuse]") {
  // A server clock 100000 ppm fast beyond the allowance from the claim (100) to the overlap's start
  // (1000) explains 90us; c0 then paused from 1500 to 2500 prolongs the overlap by 1000us.
  Overlap both;
  both.fault(FaultKind::server_drift, 0, 1000, -1, 100'000);
  both.fault(FaultKind::pause, 1500, 2500, 0);
  const Violation v = both.measured(1'000 + 90 + 2'000);
  REQUIRE(v.excused());
  CHECK(v.excuse.find("together") != std::string::npos);
  CHECK_FALSE(both.measured(10'000).excused());  // more than both explain, with the slack
  Overlap late_pause_only;
  late_pause_only.fault(FaultKind::pause, 1500, 2500, 0);
  CHECK_FALSE(late_pause_only.measured(1'000).excused());  // nothing began the overlap
}

TEST_CASE("the entrant paused inside prolongs an overlap another fault began, by the pause",
          "[excuse]") {
  // c1 enters at 1000 (on a lease a fast server clock cut short: 90us of the overlap) and is
  // paused inside from 1000 to 21000, so the two stay together 20000us longer.
  const auto overlap = [](bool drift) {
    Overlap o;
    if (drift) o.fault(FaultKind::server_drift, 0, 1000, -1, 100'000);
    o.fault(FaultKind::pause, 1000, 21'000, 1);
    o.add({.time_us = 999, .kind = EventKind::cs_enter, .client = 1, .key = "k"});
    o.sort();
    return o;
  };
  Overlap o = overlap(true);
  const Violation v = o.measured(90 + 20'000);
  INFO(v.excuse);
  REQUIRE(v.excused());
  CHECK(v.excuse.find("together") != std::string::npos);
  CHECK(v.excuse.find("holder overrun: c1") != std::string::npos);
  CHECK_FALSE(o.measured(90 + 20'000 + 5'000).excused());  // the pause explains only its length
  Overlap alone = overlap(false);  // nothing began the overlap: the entrant's pause excuses nothing
  const Violation unexcused = alone.measured(20'000);
  INFO(unexcused.excuse);
  CHECK_FALSE(unexcused.excused());
}

TEST_CASE("a pause excuses nothing for an in-process keyed lock: it has no lease to overrun",
          "[excuse]") {
  Overlap keyed;
  keyed.history.meta.keyed = true;
  keyed.fault(FaultKind::pause, 500, 1500, 0);
  CHECK_FALSE(keyed.judged().excused());
}

TEST_CASE("the window reaches back to the earliest event that shows the violation", "[excuse]") {
  // One client's two leases clash on the server: the first was cut short by a fast server clock
  // before the client's second acquire, which alone would start the window too late.
  History h;
  h.meta.clients = 1;
  h.add({.time_us = 0,
         .kind = EventKind::grant,
         .client = 0,
         .key = "k",
         .server = "s",
         .value = "v1",
         .ttl_us = 380'000});
  h.add({.time_us = 0,
         .kind = EventKind::fault,
         .end_us = 1'000,
         .fault = FaultKind::server_drift,
         .amount = 268'000,
         .detail = "server drift"});
  h.add(
      {.time_us = 379'999, .kind = EventKind::invoke, .client = 0, .key = "k", .op = Op::acquire});
  h.add({.time_us = 379'999,
         .kind = EventKind::grant,
         .client = 0,
         .key = "k",
         .server = "s",
         .value = "v2",
         .ttl_us = 380'000});
  h.add({.time_us = 379'999,
         .kind = EventKind::complete,
         .client = 0,
         .key = "k",
         .op = Op::acquire,
         .outcome = Outcome::ok});
  std::vector<Violation> vs = {{.invariant = Invariant::lease_exclusion,
                                .time_us = 379'999,
                                .clients = {0},
                                .key = "k",
                                .events = {0, 3}}};
  excuse_violations(h, vs);
  CHECK(vs.front().excused());
}

TEST_CASE("a failover excuses tokens only outside the envelope (a majority write concern)",
          "[excuse]") {
  Overlap async;
  async.fault(FaultKind::failover, 500, 500, -1, 1);
  CHECK(async.judged(Invariant::fencing).excused());
  CHECK(async.judged(Invariant::lease_exclusion).excused());

  Overlap majority;
  majority.history.meta.envelope.failover = true;
  majority.fault(FaultKind::failover, 500, 500, -1, 1);
  CHECK_FALSE(majority.judged(Invariant::fencing).excused());
  CHECK_FALSE(majority.judged().excused());
}

TEST_CASE("client clocks: a slow drift beyond the allowance excuses that client's exclusion only",
          "[excuse]") {
  Overlap within;
  within.history.meta.envelope.client_slow_ppm_max = 5'000;
  within.fault(FaultKind::clock_drift, 0, 0, 0, -5'000);
  CHECK_FALSE(within.judged().excused());

  Overlap beyond;
  beyond.history.meta.envelope.client_slow_ppm_max = 5'000;
  beyond.fault(FaultKind::clock_drift, 0, 0, 0, -5'001);
  CHECK(beyond.judged().excused());
  CHECK_FALSE(beyond.judged(Invariant::lease_exclusion).excused());  // servers do not read it

  Overlap fast;  // a fast client leaves early
  fast.fault(FaultKind::clock_drift, 0, 0, 0, 300'000);
  CHECK_FALSE(fast.judged().excused());
}

TEST_CASE("wall-clock jumps excuse nothing for a lock that times on the monotonic clock",
          "[excuse]") {
  Overlap monotonic;
  monotonic.fault(FaultKind::clock_jump, 500, 500, 0, -5'000'000);
  CHECK_FALSE(monotonic.judged().excused());

  Overlap wall;
  wall.history.meta.envelope.client_wall_clock = false;
  wall.fault(FaultKind::clock_jump, 500, 500, 0, -5'000'000);
  CHECK(wall.judged().excused());
  CHECK(wall.judged(Invariant::lease_exclusion).excused());  // it sends its wall times
}

TEST_CASE("a server restart is inside the envelope only after the longest lease", "[excuse]") {
  for (const auto& [down_us, excused] : {std::pair{999, true}, std::pair{1000, false}}) {
    Overlap o;
    o.history.meta.envelope.server_restart = RestartRule::after_ttl;
    o.add({.time_us = 100,
           .kind = EventKind::grant,
           .client = 0,
           .key = "k",
           .server = "s",
           .value = "v",
           .ttl_us = 1000});
    o.fault(FaultKind::server_restart, 600, 600, -1, down_us);
    CHECK(o.judged(Invariant::lease_exclusion).excused() == excused);
  }
}

TEST_CASE("crashes and network faults are inside a lease lock's envelope", "[excuse]") {
  for (FaultKind kind : {FaultKind::crash, FaultKind::latency, FaultKind::loss,
                         FaultKind::partition, FaultKind::other}) {
    Overlap o;
    o.fault(kind, 500, 1500, kind == FaultKind::partition || kind == FaultKind::crash ? 0 : -1);
    CHECK_FALSE(o.judged().excused());
  }
}

TEST_CASE("a recorded history carries its envelope and fault kinds: judged the same when read back",
          "[excuse][jsonl]") {
  Overlap o;
  o.history.meta.envelope = {.client_slow_ppm_max = 7,
                             .server_fast_ppm_max = 9,
                             .client_wall_clock = false,
                             .failover = true,
                             .server_restart = RestartRule::after_ttl};
  o.fault(FaultKind::clock_jump, 500, 500, 0, -5'000'000);
  std::stringstream file;
  write_history_jsonl(o.history, file);
  const History back = read_history_jsonl(file);
  CHECK(back.meta.envelope.client_slow_ppm_max == 7);
  CHECK(back.meta.envelope.server_fast_ppm_max == 9);
  CHECK_FALSE(back.meta.envelope.client_wall_clock);
  CHECK(back.meta.envelope.failover);
  CHECK(back.meta.envelope.server_restart == RestartRule::after_ttl);
  CHECK_FALSE(back.meta.envelope.clients_compare_wall_deadlines);
  std::vector<Violation> vs = {
      {.invariant = Invariant::mutual_exclusion, .time_us = 1000, .clients = {0, 1}, .key = "k"}};
  excuse_violations(back, vs);
  REQUIRE(vs.front().excused());
  CHECK(back[*vs.front().excused_by].fault == FaultKind::clock_jump);
  CHECK(back[*vs.front().excused_by].amount == -5'000'000);
}

TEST_CASE("a history whose clients read each other's wall deadlines says so when read back",
          "[excuse][jsonl]") {
  Overlap o;
  o.history.meta.envelope.clients_compare_wall_deadlines = true;
  std::stringstream file;
  write_history_jsonl(o.history, file);
  CHECK(file.str().find("clients_compare_wall_deadlines") != std::string::npos);
  CHECK(read_history_jsonl(file).meta.envelope.clients_compare_wall_deadlines);
}

TEST_CASE("a reset is outside a session lock's envelope: it excuses the lease the reset ended",
          "[excuse]") {
  const auto after_reset = [](bool resets_inside, Invariant invariant) {
    Overlap o;
    o.history.meta.envelope.connection_resets = resets_inside;
    o.fault(FaultKind::reset, 500, 500, 0, 0);
    return o.measured(1000, invariant);
  };
  CHECK(after_reset(false, Invariant::validity_within_lease).excused());
  CHECK(after_reset(false, Invariant::mutual_exclusion).excused());
  CHECK_FALSE(after_reset(true, Invariant::validity_within_lease).excused());
  CHECK_FALSE(after_reset(true, Invariant::mutual_exclusion).excused());
}

TEST_CASE("a history whose lock does not survive resets says so when read back, absent it does",
          "[excuse][jsonl]") {
  Overlap session;
  session.history.meta.envelope.connection_resets = false;
  std::stringstream file;
  write_history_jsonl(session.history, file);
  CHECK(file.str().find("\"connection_resets\":false") != std::string::npos);
  CHECK_FALSE(read_history_jsonl(file).meta.envelope.connection_resets);
  Overlap lease;
  std::stringstream other;
  write_history_jsonl(lease.history, other);
  CHECK(other.str().find("connection_resets") == std::string::npos);
  CHECK(read_history_jsonl(other).meta.envelope.connection_resets);
}

TEST_CASE("excused violations early in a run cannot hide a later unexcused one", "[excuse]") {
  History h;
  h.meta.clients = 2;
  const int rounds = 2 * static_cast<int>(CheckOptions{}.per_invariant_max);
  for (int i = 0; i < rounds; ++i) {
    const TimeUs base_us = static_cast<TimeUs>(i) * 10'000;
    const bool paused = i + 1 < rounds;  // the last round's overlap has no excuse
    h.add({.time_us = base_us, .kind = EventKind::cs_enter, .client = 0, .key = "k"});
    if (paused) {
      h.add({.time_us = base_us + 100,
             .kind = EventKind::fault,
             .client = 0,
             .end_us = base_us + 5'000,
             .fault = FaultKind::pause,
             .detail = "pause c0"});
    }
    h.add({.time_us = base_us + 1'000, .kind = EventKind::cs_enter, .client = 1, .key = "k"});
    h.add({.time_us = base_us + 2'000, .kind = EventKind::cs_exit, .client = 1, .key = "k"});
    h.add({.time_us = base_us + 6'000, .kind = EventKind::cs_exit, .client = 0, .key = "k"});
  }
  const std::vector<Violation> kept = check_and_excuse(h);
  REQUIRE(kept.size() == CheckOptions{}.per_invariant_max);
  int unexcused = 0;
  for (const Violation& v : kept) unexcused += v.excused() ? 0 : 1;
  CHECK(unexcused == 1);
  CHECK(std::is_sorted(kept.begin(), kept.end(), [](const Violation& a, const Violation& b) {
    return a.time_us < b.time_us;
  }));
}

}  // namespace
}  // namespace lockstep

namespace lockstep {

// c1's acquire is invoked at 10, granted by the server at 12 for ttl_us, and its reply reaches c1
// at 1000, when it enters beside c0 (who holds from 100 to 3000): c1 entered after its own lease
// had ended in true time, which a clock slow enough hid from its late-grant check.
struct LateEntrant : Overlap {
  explicit LateEntrant(int64_t ttl_us) : Overlap(3000) {
    history = History();  // c0 as Overlap has it; c1's acquire told here
    history.meta.clients = 2;
    hold(0, 100, 3000);
    add({.time_us = 1000, .kind = EventKind::cs_enter, .client = 1, .key = "k"});
    add({.time_us = 2000, .kind = EventKind::cs_exit, .client = 1, .key = "k"});
    granted(1, 12, "s", "v1", ttl_us);
    acquired(1, 1000, "v1");
    add({.time_us = 10, .kind = EventKind::invoke, .client = 1, .key = "k", .op = Op::acquire});
    history.meta.envelope.client_slow_ppm_max = 500;
    sort();
  }
};

TEST_CASE("an entrant's slow clock excuses its entry only when it hid the end of its own lease",
          "[excuse]") {
  // 30% slow from 0 over its 990 us acquire: it lost 297 us. Its lease (888 us from 12) ended at
  // 900, 100 us before it entered: hidden, so the whole 2 ms overlap follows from that entry.
  LateEntrant hidden(888);
  hidden.fault(FaultKind::clock_drift, 0, 5000, 1, -300'500);
  const Violation excused = hidden.measured(2'000);
  CHECK(excused.excused());
  CHECK_THAT(excused.excuse, Catch::Contains("entered 100us after its lease ended"));
  // Its lease ended 600 us before it entered: 297 us lost cannot hide that.
  LateEntrant too_late(388);
  too_late.fault(FaultKind::clock_drift, 0, 5000, 1, -300'500);
  CHECK_FALSE(too_late.measured(2'000).excused());
  // Its lease still ran when it entered: a clock cannot explain entering on a live lease of its
  // own beside another holder (the lock granted twice).
  LateEntrant live(5'000);
  live.fault(FaultKind::clock_drift, 0, 5000, 1, -300'500);
  CHECK_FALSE(live.measured(2'000).excused());
  // Within the envelope: nothing.
  LateEntrant within(888);
  within.fault(FaultKind::clock_drift, 0, 5000, 1, -500);
  CHECK_FALSE(within.measured(2'000).excused());
}

}  // namespace lockstep

namespace lockstep {

TEST_CASE("a restart that lost the entrant's earlier lease excuses its late entry", "[excuse]") {
  // c1's lease was granted at 12; the server came back empty at 50 (down 30 us); c0 acquired at
  // 90 and entered at 100; c1's reply, late, let it in at 1000 on the lease the server had lost.
  LateEntrant lost(5'000);
  lost.fault(FaultKind::server_restart, 50, 50, -1, 30);
  const Violation v = lost.measured(2'000);
  CHECK(v.excused());
  CHECK_THAT(v.excuse, Catch::Contains("came back empty"));
  // A restart before the entrant's lease was granted lost nothing of it, nor of the holder's.
  LateEntrant before(5'000);
  before.fault(FaultKind::server_restart, 11, 11, -1, 5);
  CHECK_FALSE(before.measured(2'000).excused());
}

}  // namespace lockstep

namespace lockstep {

TEST_CASE("an overlap inside an excused double grant of the same two clients is excused with it",
          "[excuse]") {
  // c0's lease is granted at 12 (its reply is late); a server clock jump at 500 ends it early on
  // the server, which grants c1 at 900; c1 enters at 950, and c0, its reply arriving, at 1000.
  // Where the acquires returned their values, the jump is judged against the leases directly (it
  // ended c0's, the earlier one); where they did not, the overlap follows from the double grant.
  for (const bool values_returned : {true, false}) {
    Overlap o;
    o.history = History();
    o.history.meta.clients = 2;
    for (const auto& [client, value, invoke_us, grant_us, enter_us] :
         {std::tuple{0, "v0", 10, 12, 1000}, std::tuple{1, "v1", 890, 900, 950}}) {
      o.add({.time_us = invoke_us,
             .kind = EventKind::invoke,
             .client = client,
             .key = "k",
             .op = Op::acquire});
      o.add({.time_us = grant_us,
             .kind = EventKind::grant,
             .client = client,
             .key = "k",
             .server = "s",
             .value = value,
             .ttl_us = 5'000});
      o.add({.time_us = enter_us,
             .kind = EventKind::complete,
             .client = client,
             .key = "k",
             .op = Op::acquire,
             .outcome = Outcome::ok,
             .value = values_returned ? value : ""});
      o.add({.time_us = enter_us, .kind = EventKind::cs_enter, .client = client, .key = "k"});
      o.add({.time_us = 3'000, .kind = EventKind::cs_exit, .client = client, .key = "k"});
    }
    o.sort();
    o.fault(FaultKind::server_clock_jump, 500, 500, -1, 5'000);
    const std::vector<Violation> judged = check_and_excuse(o.history);
    bool saw_overlap = false;
    for (const Violation& v : judged) {
      INFO(values_returned << ": " << v.detail << " / " << v.excuse);
      if (v.invariant == Invariant::lease_exclusion) CHECK(v.excused());
      if (v.invariant != Invariant::mutual_exclusion) continue;
      saw_overlap = true;
      REQUIRE(v.excused());
      CHECK(o.history[*v.excused_by].fault == FaultKind::server_clock_jump);
      if (values_returned) {
        CHECK_THAT(v.excuse, Catch::StartsWith("server-clock-jump at 500us"));
      } else {
        CHECK_THAT(v.excuse, Catch::Contains("follows from the double grant at 900us"));
      }
    }
    CHECK(saw_overlap);
  }
}

namespace {

// The violations of one invariant the checkers find in h, each judged against its faults.
std::vector<Violation> judged_violations(const History& h, Invariant invariant) {
  std::vector<Violation> found;
  for (Violation& v : check_and_excuse(h)) {
    if (v.invariant == invariant) found.push_back(std::move(v));
  }
  return found;
}

}  // namespace

TEST_CASE("a server clock that ran fast since a queued lease's last refresh shortened its grant",
          "[excuse]") {
  // c0's first acquire (value v0) gives up at 1500 but its etcd key stays queued, its lease last
  // refreshed at `lease_since_us`; c0 asks again (v1) at 150 ms. v0's key wins at 250 ms with 100 ms
  // of its lease left as the leader meant it, and v1's at 330 ms: 20 ms beside v0's lease. The
  // leader's clock ran 25% fast from 0 to 200 ms, and shortened v0's lease by a quarter of the
  // time it ran from its refresh: 37.5 ms from 50 ms, enough; 2.5 ms from 190 ms, not enough.
  // Measured from c0's last acquire (150 ms), as when the grant says nothing of its lease,
  // 12.5 ms: not enough either.
  const auto judged = [](TimeUs lease_since_us) {
    History h;
    h.meta.clients = 1;
    h.meta.envelope.server_fast_ppm_max = 0;
    const auto acquire = [&h](TimeUs at_us, Outcome outcome, TimeUs done_us, std::string value) {
      h.add({.time_us = at_us,
             .kind = EventKind::invoke,
             .client = 0,
             .key = "k",
             .op = Op::acquire});
      h.add({.time_us = done_us,
             .kind = EventKind::complete,
             .client = 0,
             .key = "k",
             .op = Op::acquire,
             .outcome = outcome,
             .value = std::move(value)});
    };
    h.add({.time_us = 0,
           .kind = EventKind::fault,
           .end_us = 200'000,
           .fault = FaultKind::server_drift,
           .amount = 250'000,
           .detail = "server-drift"});
    acquire(10'000, Outcome::error, 150'000, "");
    h.add({.time_us = 150'000,
           .kind = EventKind::invoke,
           .client = 0,
           .key = "k",
           .op = Op::acquire});
    h.add({.time_us = 250'000,
           .kind = EventKind::grant,
           .client = 0,
           .key = "k",
           .server = "etcd",
           .value = "v0",
           .ttl_us = 100'000,
           .lease_since_us = lease_since_us});
    h.add({.time_us = 330'000,
           .kind = EventKind::grant,
           .client = 0,
           .key = "k",
           .server = "etcd",
           .value = "v1",
           .ttl_us = 500'000});
    h.add({.time_us = 331'000,
           .kind = EventKind::complete,
           .client = 0,
           .key = "k",
           .op = Op::acquire,
           .outcome = Outcome::ok,
           .value = "v1"});
    std::vector<Violation> found = judged_violations(h, Invariant::lease_exclusion);
    REQUIRE(found.size() == 1);
    INFO(found.front().detail << " / " << found.front().excuse);
    CHECK(found.front().excess_us == 20'000);
    return found.front().excused();
  };
  CHECK(judged(50'000));
  CHECK_FALSE(judged(190'000));
  CHECK_FALSE(judged(0));
}

TEST_CASE(
    "a fast server clock excuses a lease an erring acquire left behind only by what it gained",
    "[excuse]") {
  // etcd-lock seed 159053: c0's acquire errs at 300 ms (its lease check timed out, the revoke
  // found no lease), while its key's lease, granted at 100 ms from a refresh at 80 ms for 250 ms,
  // runs by its promise until 330 ms: 30 ms after the call. The leader's clock ran fast over the
  // lease's term, and ended it before the call returned when it gained 30 ms or more.
  const auto judged = [](int64_t drift_ppm, Op op) {
    History h;
    h.meta.clients = 1;
    h.meta.errors_mean_not_applied = true;
    h.meta.envelope.server_fast_ppm_max = 0;
    h.add({.time_us = 0,
           .kind = EventKind::fault,
           .end_us = 250'000,
           .fault = FaultKind::server_drift,
           .amount = drift_ppm,
           .detail = "server-drift"});
    if (op == Op::release) {
      h.add({.time_us = 10, .kind = EventKind::invoke, .client = 0, .key = "k", .op = Op::acquire});
      h.add({.time_us = 20,
             .kind = EventKind::complete,
             .client = 0,
             .key = "k",
             .op = Op::acquire,
             .outcome = Outcome::ok,
             .value = "v0"});
    }
    h.add({.time_us = 50'000, .kind = EventKind::invoke, .client = 0, .key = "k", .op = op});
    h.add({.time_us = 100'000,
           .kind = op == Op::release ? EventKind::revoke : EventKind::grant,
           .client = 0,
           .key = "k",
           .server = "etcd",
           .value = "v0",
           .ttl_us = op == Op::release ? 0 : 250'000,
           .lease_since_us = op == Op::release ? 0 : 80'000});
    h.add({.time_us = 300'000,
           .kind = EventKind::complete,
           .client = 0,
           .key = "k",
           .op = op,
           .outcome = Outcome::error,
           .value = "v0"});
    std::vector<Violation> found = judged_violations(h, Invariant::error_not_applied);
    REQUIRE(found.size() == 1);
    return found[0];
  };
  // From the refresh at 80 ms to the drift's end at 250 ms: 170 ms, of which 20% is 34 ms.
  const Violation gained_enough = judged(200'000, Op::acquire);
  CHECK(gained_enough.excess_us == 30'000);
  CHECK(gained_enough.excused());
  // 10%: 17 ms of the 30.
  CHECK_FALSE(judged(100'000, Op::acquire).excused());
  // A failed release that removed the lease: no clock explains a removal.
  CHECK_FALSE(judged(200'000, Op::release).excused());
}

}  // namespace lockstep
