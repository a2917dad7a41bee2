#include <catch2/catch.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/world.h"

using namespace lockstep::sim;

namespace {

std::string fmt_at(const std::string& what, TimeUs t_us) {
  return what + " at " + std::to_string(t_us);
}

}  // namespace

namespace {

// Sets a flag when destroyed: shows that a fiber's stack was unwound.
struct Guard {
  bool* destroyed;
  ~Guard() { *destroyed = true; }
};

size_t trace_count(World& w, const std::string& needle) {
  size_t n = 0;
  for (const std::string& line : w.trace().lines()) n += line.find(needle) != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("world: a fiber runs from its start time and finishes", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("client");
  std::vector<TimeUs> seen;
  w.spawn(
      n, "a",
      [&] {
        seen.push_back(w.now_us());
        CHECK(w.in_fiber());
        CHECK(w.current_node() == n);
        w.sleep_for_us(100);
        seen.push_back(w.now_us());
      },
      50);
  CHECK(w.unfinished_fibers() == 1);
  const RunResult r = w.run();
  CHECK(r.end == RunEnd::queue_empty);
  CHECK(r.message.empty());
  CHECK(seen == std::vector<TimeUs>{50, 150});
  CHECK(w.unfinished_fibers() == 0);
  CHECK_FALSE(w.in_fiber());
  CHECK(w.trace().contains("0 fiber 0 (a) spawn on node 0 at 50us"));
  CHECK(w.trace().contains("150 fiber 0 (a) done"));
}

TEST_CASE("world: a node's program ends when its last fiber does, or when a crash kills it",
          "[sim][world]") {
  World w({});
  const NodeId two = w.add_node("two fibers");
  const NodeId killed = w.add_node("killed");
  const NodeId other = w.add_node("no hook");
  std::vector<std::string> ended;
  w.on_program_end(two, [&] { ended.push_back(fmt_at("two", w.now_us())); });
  w.on_program_end(killed, [&] { ended.push_back(fmt_at("killed", w.now_us())); });
  w.spawn(two, "a", [&] { w.sleep_for_us(100); });
  w.spawn(two, "b", [&] { w.sleep_for_us(300); });  // the program ends with the later one
  w.spawn(killed, "c", [&] { w.sleep_for_us(1'000); });
  w.spawn(other, "d", [&] { w.sleep_for_us(50); });
  w.scheduler().at(200, [&] { w.crash(killed); });
  CHECK(w.run().end == RunEnd::queue_empty);
  CHECK(ended == std::vector<std::string>{"killed at 200", "two at 300"});
}

TEST_CASE("world: sleeps follow drift, rounded up", "[sim][world]") {
  World w({});
  const NodeId fast = w.add_node("fast", {.drift_ppm = 100'000});
  const NodeId slow = w.add_node("slow", {.drift_ppm = -100'000});
  TimeUs fast_woke = -1;
  TimeUs slow_woke = -1;
  int64_t fast_local_slept = 0;
  w.spawn(fast, "f", [&] {
    const int64_t before = w.local_us(fast);
    w.clock(fast).sleep_for_us(1'000);
    fast_woke = w.now_us();
    fast_local_slept = w.clock(fast).now_us() - before;
  });
  w.spawn(slow, "s", [&] {
    w.sleep_for_us(1'000);
    slow_woke = w.now_us();
  });
  w.run();
  CHECK(fast_woke == 910);  // 1000 / 1.1 = 909.09, rounded up so the sleep is never short
  CHECK(fast_local_slept >= 1'000);
  CHECK(slow_woke == 1'112);  // 1000 / 0.9 = 1111.1
}

TEST_CASE("world: clock jumps move the wall reading but not sleeps", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("n");
  TimeUs woke = -1;
  int64_t local_after = 0;
  w.spawn(n, "sleeper", [&] {
    w.sleep_for_us(1'000);
    woke = w.now_us();
    local_after = w.local_us(n);
  });
  w.scheduler().at(100, [&] { w.jump_clock(n, 60'000'000); });
  w.scheduler().at(200, [&] { w.jump_clock(n, -90'000'000); });
  w.run();
  CHECK(woke == 1'000);
  CHECK(local_after == kLocalEpochUs + 1'000 + 60'000'000 - 90'000'000);
  CHECK(w.trace().contains("100 node 0 clock jump +60000000us"));
  CHECK(w.trace().contains("200 node 0 clock jump -90000000us"));
}

TEST_CASE("world: a drift change during a sleep re-times the rest of it", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("n");
  TimeUs woke = -1;
  w.spawn(n, "sleeper", [&] {
    w.sleep_for_us(1'000);
    woke = w.now_us();
  });
  // 500 local us measured by t=500; the other 500 at 1.25x take 400 true us.
  w.scheduler().at(500, [&] { w.set_drift(n, 250'000); });
  w.run();
  CHECK(woke == 900);
  CHECK(w.trace().contains("500 node 0 clock drift +250000ppm"));
}

TEST_CASE("world: a park's local timeout follows a drift change, as a sleep does", "[sim][world]") {
  // A client's command timeout is measured on its own oscillator: the node's clock runs 25% fast
  // from t=500, so the 500 local us left take 400 true us. A deadline fixed in true time at the
  // park would have ended it at 1000, before the client's own clock said so.
  World w({});
  const NodeId n = w.add_node("n");
  std::optional<ParkResult> timed_out, woken;
  TimeUs timed_out_at = -1, woken_at = -1;
  Waiter second;
  w.spawn(n, "parker", [&] {
    timed_out = w.park_for_local(w.prepare_park(), 1'000);
    timed_out_at = w.now_us();
    second = w.prepare_park();
    woken = w.park_until_local(second, w.monotonic_us(n) + 5'000);
    woken_at = w.now_us();
  });
  w.scheduler().at(500, [&] { w.set_drift(n, 250'000); });
  w.scheduler().at(2'000, [&] { w.wake(second); });
  w.run();
  CHECK(timed_out == ParkResult::deadline);
  CHECK(timed_out_at == 900);
  CHECK(w.trace().contains("900 fiber 0 (parker) timeout"));
  CHECK(woken == ParkResult::woken);  // a wake still ends it first
  CHECK(woken_at == 2'000);
}

TEST_CASE("world: a server's local timer follows a drift change, and dies with the node",
          "[sim][world]") {
  // A keepalive interval measured on the server's own clock: 500 local us at the true rate, then
  // the clock runs 25% fast and the other 500 take 400 true us.
  World w({});
  const NodeId n = w.add_node("server");
  TimeUs fired_at = -1;
  w.deliver_at_local(n, w.incarnation(n), w.monotonic_us(n) + 1'000,
                     [&] { fired_at = w.now_us(); });
  w.scheduler().at(500, [&] { w.set_drift(n, 250'000); });
  bool dropped = false;
  w.scheduler().at(2'000, [&] {
    w.deliver_at_local(
        n, w.incarnation(n), w.monotonic_us(n) + 100, [] {}, [&] { dropped = true; });
    w.crash(n);
  });
  w.run();
  CHECK(fired_at == 900);
  CHECK(dropped);
}

TEST_CASE("world: park returns woken when woken, deadline when not", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("n");
  std::optional<ParkResult> first, second;
  TimeUs first_at = -1, second_at = -1;
  Waiter waiter;
  w.spawn(n, "parker", [&] {
    waiter = w.prepare_park();
    first = w.park(waiter, 10'000);
    first_at = w.now_us();
    const Waiter again = w.prepare_park();
    second = w.park(again, w.now_us() + 300);
    second_at = w.now_us();
  });
  w.scheduler().at(40, [&] { w.wake(waiter); });
  w.run();
  CHECK(first == ParkResult::woken);
  CHECK(first_at == 40);
  CHECK(second == ParkResult::deadline);
  CHECK(second_at == 340);
  CHECK(w.trace().contains("340 fiber 0 (parker) timeout"));
  CHECK(trace_count(w, "timeout") == 1);  // the first park's deadline was cancelled by the wake
}

TEST_CASE("world: stale waiters are ignored", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("n");
  Waiter old_waiter;
  std::optional<ParkResult> result;
  TimeUs returned_at = -1;
  w.spawn(n, "parker", [&] {
    old_waiter = w.prepare_park();
    w.park(old_waiter);  // woken at 10
    const Waiter current = w.prepare_park();
    result = w.park(current, 500);
    returned_at = w.now_us();
  });
  w.scheduler().at(10, [&] { w.wake(old_waiter); });
  w.scheduler().at(20, [&] { w.wake(old_waiter); });  // the same waiter again: stale
  w.scheduler().at(30, [&] { w.wake(Waiter{}); });    // nobody
  w.run();
  CHECK(result == ParkResult::deadline);
  CHECK(returned_at == 500);
}

TEST_CASE("world: a wake between prepare_park and park is not lost", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("n");
  std::optional<ParkResult> result;
  w.spawn(n, "self", [&] {
    const Waiter me = w.prepare_park();
    w.wake(me);
    result = w.park(me, 1'000);
    CHECK(w.now_us() == 0);
  });
  w.run();
  CHECK(result == ParkResult::woken);
}

TEST_CASE("world: wake of a finished fiber is harmless", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("n");
  Waiter waiter;
  w.spawn(n, "brief", [&] {
    waiter = w.prepare_park();
    w.park(waiter, 5);
  });
  w.scheduler().at(100, [&] { w.wake(waiter); });
  CHECK(w.run().end == RunEnd::queue_empty);
  CHECK(w.unfinished_fibers() == 0);
}

TEST_CASE("world: fibers wake each other through the scheduler", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("n");
  std::vector<std::string> order;
  Waiter b_waiter;
  w.spawn(n, "b", [&] {
    b_waiter = w.prepare_park();
    order.push_back("b parks");
    w.park(b_waiter);
    order.push_back("b woken");
  });
  w.spawn(n, "a", [&] {
    order.push_back("a wakes b");
    w.wake(b_waiter);
    order.push_back("a goes on");  // wake() does not switch: b runs after a yields
  });
  w.run();
  CHECK(order == std::vector<std::string>{"b parks", "a wakes b", "a goes on", "b woken"});
}

TEST_CASE("world: park misuse is refused", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("n");
  CHECK_THROWS_AS(w.sleep_for_us(10), std::logic_error);  // not in a fiber
  CHECK_THROWS_AS(w.prepare_park(), std::logic_error);
  w.spawn(n, "wrong-waiter", [&] {
    const Waiter a = w.prepare_park();
    w.prepare_park();
    w.park(a);  // not the latest prepare_park
  });
  CHECK_THROWS_AS(w.run(), std::logic_error);
  CHECK(w.trace().contains("fiber 0 (wrong-waiter) failed: check failed"));
}

TEST_CASE("world: a fiber that pauses its own node resumes exactly at the end", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("client");
  TimeUs resumed_at = -1;
  int64_t local_advance = 0;
  w.spawn(n, "a", [&] {
    w.sleep_for_us(100);
    const int64_t before = w.local_us(n);
    w.pause(n, 15'000, "gc");
    resumed_at = w.now_us();
    local_advance = w.local_us(n) - before;
  });
  w.run();
  CHECK(resumed_at == 15'100);
  CHECK(local_advance == 15'000);
  CHECK(w.trace().contains("100 node 0 pause 15000us (gc)"));
  CHECK(w.trace().contains("15100 node 0 pause end"));
}

TEST_CASE("world: a pause defers resumptions and deliveries, in order", "[sim][world]") {
  World w({});
  const NodeId server = w.add_node("server");
  const NodeId other = w.add_node("other");
  std::vector<std::string> ran;
  auto at = [&](const std::string& what) {
    ran.push_back(what + "@" + std::to_string(w.now_us()));
  };
  w.spawn(server, "sleeper", [&] {
    w.sleep_for_us(150);
    at("fiber");
  });
  w.spawn(other, "elsewhere", [&] {
    w.sleep_for_us(150);
    at("other-node");
  });
  const uint64_t inc = w.incarnation(server);
  w.deliver_at(server, inc, 100, [&] { at("d100"); });
  w.deliver_at(server, inc, 200, [&] { at("d200"); });
  // Scheduled before the pause exists, at exactly its end: must still come after the backlog.
  w.deliver_at(server, inc, 1'050, [&] { at("d1050"); });
  w.scheduler().at(50, [&] { w.pause(server, 1'000); });
  w.run();
  CHECK(ran == std::vector<std::string>{"other-node@150", "d100@1050", "fiber@1050", "d200@1050",
                                        "d1050@1050"});
  CHECK_FALSE(w.paused(server));
}

TEST_CASE("world: overlapping pauses end at the latest end, once", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("n");
  TimeUs delivered = -1;
  w.scheduler().at(0, [&] { w.pause(n, 100); });
  w.scheduler().at(50, [&] {
    w.pause(n, 500);
    w.pause(n, 10);  // inside the longer pause: changes nothing
  });
  w.deliver_at(n, w.incarnation(n), 60, [&] { delivered = w.now_us(); });
  w.scheduler().at(120, [&] { CHECK(w.paused(n)); });
  w.run();
  CHECK(delivered == 550);
  CHECK(trace_count(w, "pause end") == 1);
}

TEST_CASE("world: crash unwinds parked fibers with ProcessKilled", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("client");
  bool guard_destroyed = false;
  bool saw_killed = false;
  bool sleep_after_kill_threw = false;
  TimeUs unwound_at = -1;
  w.spawn(n, "holder", [&] {
    Guard g{&guard_destroyed};
    try {
      const Waiter me = w.prepare_park();
      w.park(me);
    } catch (const ProcessKilled&) {
      saw_killed = true;
      unwound_at = w.now_us();
      try {
        w.sleep_for_us(1'000);  // a dead node's fiber never blocks again
      } catch (const ProcessKilled&) {
        sleep_after_kill_threw = w.now_us() == unwound_at;
      }
      throw;
    }
  });
  w.scheduler().at(700, [&] { w.crash(n); });
  const RunResult r = w.run();
  CHECK(r.end == RunEnd::queue_empty);
  CHECK(saw_killed);
  CHECK(unwound_at == 700);
  CHECK(sleep_after_kill_threw);
  CHECK(guard_destroyed);
  CHECK(w.unfinished_fibers() == 0);
  CHECK_FALSE(w.alive(n));
  CHECK(w.trace().contains("700 node 0 crash"));
  CHECK(w.trace().contains("700 fiber 0 (holder) killed"));
}

TEST_CASE("world: ProcessKilled is not a std::exception", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("n");
  bool passed_through = false;
  w.spawn(n, "careless", [&] {
    try {
      try {
        w.sleep_for_us(1'000);
      } catch (const std::exception&) {
        // adapter code catching its own errors must not swallow a kill
      }
    } catch (const ProcessKilled&) {
      passed_through = true;
      throw;
    }
  });
  w.scheduler().at(10, [&] { w.crash(n); });
  w.run();
  CHECK(passed_through);
}

TEST_CASE("world: a fiber crashing its own node dies at once and its siblings too",
          "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("client");
  bool after_crash_ran = false;
  bool sibling_guard = false;
  w.spawn(n, "sibling", [&] {
    Guard g{&sibling_guard};
    w.sleep_for_us(1'000'000);
  });
  w.spawn(n, "suicidal", [&] {
    w.sleep_for_us(10);
    w.crash(n);
    after_crash_ran = true;
  });
  w.run();
  CHECK_FALSE(after_crash_ran);
  CHECK(sibling_guard);
  CHECK(w.now_us() == 10);  // the sibling's sleep never completed
  CHECK(w.trace().contains("10 fiber 1 (suicidal) killed"));
  CHECK(w.trace().contains("10 fiber 0 (sibling) killed"));
}

TEST_CASE("world: a fiber crashing another node kills that node's fibers at the same time",
          "[sim][world]") {
  World w({});
  const NodeId victim = w.add_node("victim");
  const NodeId chaos = w.add_node("chaos");
  TimeUs killed_at = -1;
  bool crasher_went_on = false;
  w.spawn(victim, "holder", [&] {
    try {
      w.sleep_for_us(1'000'000);
    } catch (const ProcessKilled&) {
      killed_at = w.now_us();
      throw;
    }
  });
  w.spawn(chaos, "monkey", [&] {
    w.sleep_for_us(25);
    w.crash(victim);
    w.restart(victim);  // a new incarnation does not revive the old fibers
    crasher_went_on = true;
    w.sleep_for_us(5);
  });
  w.run();
  CHECK(crasher_went_on);
  CHECK(killed_at == 25);
  CHECK(w.now_us() == 30);
  CHECK(w.unfinished_fibers() == 0);
}

TEST_CASE("world: a fiber of a crashed node that had not started never runs", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("n");
  bool ran = false;
  w.spawn(
      n, "late", [&] { ran = true; }, 100);
  w.scheduler().at(50, [&] { w.crash(n); });
  w.scheduler().at(60, [&] { w.restart(n); });
  w.run();
  CHECK_FALSE(ran);
  CHECK(w.trace().contains("50 fiber 0 (late) killed before start"));
}

TEST_CASE("world: a crash during a pause kills the paused fiber", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("n");
  bool resumed = false;
  bool killed = false;
  w.spawn(n, "paused", [&] {
    try {
      w.pause(n, 1'000);
      resumed = true;
    } catch (const ProcessKilled&) {
      killed = true;
      throw;
    }
  });
  w.scheduler().at(500, [&] { w.crash(n); });
  w.run();
  CHECK_FALSE(resumed);
  CHECK(killed);
  CHECK_FALSE(w.trace().contains("pause end"));
}

TEST_CASE("world: deliveries to a crashed or restarted node are dropped", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("server");
  std::vector<std::string> events;
  w.on_crash(n, [&] { events.push_back("crash-hook-1@" + std::to_string(w.now_us())); });
  w.on_crash(n, [&] { events.push_back("crash-hook-2"); });
  w.on_restart(n, [&] { events.push_back("restart-hook@" + std::to_string(w.now_us())); });
  const uint64_t first = w.incarnation(n);
  w.deliver_at(n, first, 10, [&] { events.push_back("d10"); });
  w.deliver_at(n, first, 30, [&] { events.push_back("d30 (crashed)"); });
  w.deliver_at(n, first, 60, [&] { events.push_back("d60 (old incarnation)"); });
  w.scheduler().at(20, [&] { w.crash(n); });
  w.scheduler().at(50, [&] {
    w.restart(n);
    w.deliver_at(n, w.incarnation(n), 70, [&] { events.push_back("d70"); });
  });
  w.run();
  CHECK(events == std::vector<std::string>{"d10", "crash-hook-1@20", "crash-hook-2",
                                           "restart-hook@50", "d70"});
  CHECK(w.incarnation(n) == first + 1);
  CHECK(w.trace().contains("30 node 0 drop delivery (down)"));
  CHECK(w.trace().contains("60 node 0 drop delivery (restarted)"));
  CHECK(w.trace().contains("50 node 0 restart incarnation 2"));
}

TEST_CASE("world: a restarted node runs new fibers and the old ones stay dead", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("n");
  int old_iterations = 0;
  bool new_ran = false;
  w.spawn(n, "old", [&] {
    for (int i = 0; i < 100; ++i) {
      w.sleep_for_us(10);
      ++old_iterations;
    }
  });
  w.scheduler().at(35, [&] {
    w.crash(n);
    w.restart(n);
    w.spawn(n, "new", [&] {
      w.sleep_for_us(10);
      new_ran = true;
    });
  });
  w.run();
  CHECK(old_iterations == 3);
  CHECK(new_ran);
}

TEST_CASE(
    "world: crash and pause of a crashed node are traced no-ops and restart of a live one "
    "is refused",
    "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("n");
  CHECK_THROWS_AS(w.restart(n), std::logic_error);
  w.crash(n);
  w.crash(n);
  w.pause(n, 100);
  CHECK_FALSE(w.paused(n));
  CHECK(w.trace().contains("crash ignored: already down"));
  CHECK(w.trace().contains("pause 100us ignored: down"));
  CHECK_THROWS_AS(w.spawn(n, "x", [] {}), std::logic_error);
}

TEST_CASE("world: an exception escaping a fiber ends the run and is rethrown", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("n");
  bool later_ran = false;
  w.spawn(n, "bad", [&] {
    w.sleep_for_us(5);
    throw std::runtime_error("adapter bug");
  });
  w.scheduler().at(100, [&] { later_ran = true; });
  CHECK_THROWS_WITH(w.run(), "adapter bug");
  CHECK_FALSE(later_ran);
  CHECK(w.trace().contains("5 fiber 0 (bad) failed: adapter bug"));
}

TEST_CASE("world: each fiber keeps its own exception-handling state", "[sim][world]") {
  // A fiber suspended inside a catch block must find its own exception when it rethrows, even if
  // another fiber threw and caught in between.
  World w({});
  const NodeId n = w.add_node("n");
  std::string a_rethrew, b_caught;
  w.spawn(n, "a", [&] {
    try {
      try {
        throw std::runtime_error("from a");
      } catch (const std::runtime_error&) {
        w.sleep_for_us(10);  // b throws and catches while a is here
        CHECK(std::uncaught_exceptions() == 0);
        throw;
      }
    } catch (const std::runtime_error& e) {
      a_rethrew = e.what();
    }
  });
  w.spawn(n, "b", [&] {
    try {
      throw std::logic_error("from b");
    } catch (const std::logic_error& e) {
      w.sleep_for_us(20);  // and b is still inside its handler when a rethrows
      b_caught = e.what();
    }
  });
  w.run();
  CHECK(a_rethrew == "from a");
  CHECK(b_caught == "from b");
}

TEST_CASE("world: run() says which fibers are stuck", "[sim][world]") {
  World w({});
  const NodeId n = w.add_node("n");
  w.spawn(n, "forgotten", [&] {
    const Waiter me = w.prepare_park();
    w.park(me);
  });
  const RunResult r = w.run();
  CHECK(r.end == RunEnd::queue_empty);
  CHECK(w.unfinished_fibers() == 1);
  CHECK(r.message.find("1 fibers still parked") != std::string::npos);
  CHECK(r.message.find("fiber 0 (forgotten)") != std::string::npos);
}

TEST_CASE("world: unfinished_fiber_nodes names the node of every stuck fiber, not finished ones",
          "[sim][world]") {
  World w({});
  const NodeId done = w.add_node("done");
  const NodeId stuck = w.add_node("stuck");
  const NodeId killed = w.add_node("killed");
  w.spawn(done, "finishes", [&] { w.sleep_for_us(10); });
  w.spawn(stuck, "forgotten", [&] {
    const Waiter me = w.prepare_park();
    w.park(me);
  });
  w.spawn(killed, "crashed", [&] {
    const Waiter me = w.prepare_park();
    w.park(me);
  });
  w.scheduler().at(50, [&] { w.crash(killed); });
  const RunResult r = w.run();
  CHECK(r.end == RunEnd::queue_empty);
  CHECK(w.unfinished_fiber_nodes() == std::vector<NodeId>{stuck});
}

TEST_CASE("world: bounds end a run of endless fibers, and teardown unwinds them", "[sim][world]") {
  bool guard_destroyed = false;
  {
    World w({.scheduler = {.time_max_us = 10'000}});
    const NodeId n = w.add_node("n");
    w.spawn(n, "forever", [&] {
      Guard g{&guard_destroyed};
      while (true) w.sleep_for_us(100);
    });
    const RunResult r = w.run();
    CHECK(r.end == RunEnd::time_bound);
    CHECK(r.time_us == 10'000);
    CHECK(w.unfinished_fibers() == 1);
    CHECK_FALSE(guard_destroyed);
  }
  CHECK(guard_destroyed);
}

TEST_CASE("world: the event bound ends a run of endless fibers", "[sim][world]") {
  World w({.scheduler = {.events_max = 50}});
  const NodeId n = w.add_node("n");
  w.spawn(n, "forever", [&] {
    while (true) w.sleep_for_us(10);
  });
  const RunResult r = w.run();
  CHECK(r.end == RunEnd::event_bound);
  CHECK(r.events == 50);
  CHECK(r.message.find("event bound") != std::string::npos);
}

TEST_CASE("world: the destructor unwinds parked, paused and unstarted fibers", "[sim][world]") {
  bool parked_guard = false, paused_guard = false, waking_guard = false;
  bool unstarted_ran = false;
  bool parked_saw_kill = false;
  {
    World w({});
    const NodeId a = w.add_node("a");
    const NodeId b = w.add_node("b");
    w.spawn(a, "parked", [&] {
      Guard g{&parked_guard};
      std::vector<std::string> heap_memory(100, "leaks unless unwound");
      try {
        const Waiter me = w.prepare_park();
        w.park(me);
      } catch (const ProcessKilled&) {
        parked_saw_kill = true;  // unwound by the world, not only by Boost freeing the stack
        throw;
      }
    });
    w.spawn(b, "waking", [&] {  // its sleep ends inside b's pause: due, but deferred
      Guard g{&waking_guard};
      w.sleep_for_us(50);
    });
    w.spawn(
        b, "paused",
        [&] {
          Guard g{&paused_guard};
          w.pause(b, 1'000'000);
        },
        10);
    w.spawn(
        a, "unstarted", [&] { unstarted_ran = true; }, 5'000'000);
    w.scheduler().run_until(100);
  }
  CHECK(parked_guard);
  CHECK(parked_saw_kill);
  CHECK(paused_guard);
  CHECK(waking_guard);
  CHECK_FALSE(unstarted_ran);
}

TEST_CASE("world: SimClock reads the node's clock and sleeps only on its own node",
          "[sim][world]") {
  World w({});
  const NodeId a = w.add_node("a", {.offset_us = 5'000});
  const NodeId b = w.add_node("b");
  CHECK(w.clock(a).now_us() == kLocalEpochUs + 5'000);
  CHECK(w.clock(b).now_ms() == kLocalEpochUs / 1'000);
  w.spawn(a, "wrong-clock", [&] { w.clock(b).sleep_for_us(10); });
  CHECK_THROWS_AS(w.run(), std::logic_error);
}

namespace {

// Two clients ping a server over a network with random latency, sleeping random amounts.
std::string run_ping_world(uint64_t seed) {
  World w(
      {.seed = seed,
       .network = {
           .latency_us_min = 100, .latency_us_max = 5'000, .loss = {1, 10}, .duplicate = {1, 10}}});
  const NodeId server = w.add_node("server");
  w.scheduler().at(3'000, [&w, server] { w.pause(server, 2'000, "gc"); });
  w.scheduler().at(9'000, [&w, server] { w.crash(server); });
  w.scheduler().at(9'500, [&w, server] { w.restart(server); });
  for (int c = 0; c < 2; ++c) {
    const NodeId client = w.add_node("client-" + std::to_string(c));
    w.spawn(client, "client-" + std::to_string(c), [&w, client, server] {
      for (int i = 0; i < 20; ++i) {
        const Waiter me = w.prepare_park();
        w.network().send(client, server, "ping#" + std::to_string(i), [&w, client, server, me] {
          w.network().send(server, client, "pong", [&w, me] { w.wake(me); });
        });
        if (w.park(me, w.now_us() + 4'000) == ParkResult::deadline) w.trace_line("gave up");
        w.sleep_for_us(static_cast<int64_t>(w.prng().below(1'000)));
      }
    });
  }
  w.run();
  return w.trace().hash_hex();
}

}  // namespace

TEST_CASE("world: the same seed gives the same trace and another seed another", "[sim][world]") {
  const std::string first = run_ping_world(42);
  CHECK(first.size() == 16);
  CHECK(run_ping_world(42) == first);
  CHECK(run_ping_world(42) == first);
  CHECK(run_ping_world(43) != first);
}
