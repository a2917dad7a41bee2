#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/scheduler.h"

using namespace lockstep::sim;

TEST_CASE("scheduler runs events by time, then by scheduling order", "[sim][scheduler]") {
  Scheduler s;
  std::vector<std::string> ran;
  s.at(30, [&] { ran.push_back("c@30"); });
  s.at(10, [&] { ran.push_back("a@10"); });
  s.at(20, [&] { ran.push_back("b1@20"); });
  s.at(20, [&] { ran.push_back("b2@20"); });
  s.at(10, [&] { ran.push_back("a2@10"); });
  const RunResult r = s.run();
  CHECK(ran == std::vector<std::string>{"a@10", "a2@10", "b1@20", "b2@20", "c@30"});
  CHECK(r.end == RunEnd::queue_empty);
  CHECK(r.events == 5);
  CHECK(r.time_us == 30);
  CHECK(s.now_us() == 30);
  CHECK_FALSE(s.pending());
}

TEST_CASE("scheduler: events scheduled while running keep (time, seq) order", "[sim][scheduler]") {
  Scheduler s;
  std::vector<std::string> ran;
  s.at(10, [&] {
    ran.push_back("first");
    s.at(10, [&] { ran.push_back("same-time, scheduled later"); });
    s.at(5, [&] { ran.push_back("past, clamped to now"); });
    s.after(1, [&] { ran.push_back("after 1"); });
  });
  s.at(10, [&] { ran.push_back("second"); });
  s.run();
  CHECK(ran == std::vector<std::string>{"first", "second", "same-time, scheduled later",
                                        "past, clamped to now", "after 1"});
  CHECK(s.now_us() == 11);
}

TEST_CASE("scheduler: time never goes backward", "[sim][scheduler]") {
  Scheduler s;
  std::vector<TimeUs> seen;
  uint64_t x = 12345;
  for (int i = 0; i < 200; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    s.at(static_cast<TimeUs>(x >> 54), [&] { seen.push_back(s.now_us()); });
  }
  s.run();
  REQUIRE(seen.size() == 200);
  CHECK(std::is_sorted(seen.begin(), seen.end()));
}

TEST_CASE("scheduler: a cancelled event never runs and cancelling a ran event is a no-op",
          "[sim][scheduler]") {
  Scheduler s;
  std::vector<int> ran;
  const EventId a = s.at(10, [&] { ran.push_back(1); });
  const EventId b = s.at(20, [&] { ran.push_back(2); });
  s.at(30, [&] { ran.push_back(3); });
  CHECK(a != kNoEvent);
  CHECK(a != b);
  s.cancel(b);
  CHECK(s.pending_count() == 2);
  s.run_until(15);
  CHECK(ran == std::vector<int>{1});
  // a ran: its slot is free and is reused by the next event; cancelling a must not touch it.
  s.cancel(a);
  s.at(40, [&] { ran.push_back(4); });
  s.cancel(a);
  s.cancel(b);  // cancelling twice
  s.cancel(kNoEvent);
  const RunResult r = s.run();
  CHECK(ran == std::vector<int>{1, 3, 4});
  CHECK(r.events == 3);  // cancelled events are not counted
}

TEST_CASE("scheduler: cancel releases the callback's captures at once", "[sim][scheduler]") {
  Scheduler s;
  auto held = std::make_shared<int>(7);
  const EventId id = s.at(10, [held] { (void)held; });
  CHECK(held.use_count() == 2);
  s.cancel(id);
  CHECK(held.use_count() == 1);
  CHECK_FALSE(s.pending());
}

TEST_CASE("scheduler: an event may cancel a later one, and its own id harmlessly",
          "[sim][scheduler]") {
  Scheduler s;
  std::vector<int> ran;
  EventId self = kNoEvent;
  EventId later = kNoEvent;
  self = s.at(10, [&] {
    ran.push_back(1);
    s.cancel(later);
    s.cancel(self);
    s.at(20, [&] { ran.push_back(3); });
  });
  later = s.at(20, [&] { ran.push_back(2); });
  s.run();
  CHECK(ran == std::vector<int>{1, 3});
}

TEST_CASE("scheduler: the event bound ends the run as such", "[sim][scheduler]") {
  Scheduler s({.events_max = 100});
  int ran = 0;
  std::function<void()> loop = [&] {
    ++ran;
    s.after(1, loop);
  };
  s.at(0, loop);
  const RunResult r = s.run();
  CHECK(r.end == RunEnd::event_bound);
  CHECK(r.events == 100);
  CHECK(ran == 100);
  CHECK(r.message.find("event bound") != std::string::npos);
  CHECK(r.message.find("100") != std::string::npos);
  CHECK(s.pending());
}

TEST_CASE("scheduler: the time bound ends the run as such", "[sim][scheduler]") {
  Scheduler s({.time_max_us = 1'000});
  std::vector<TimeUs> ran;
  s.at(999, [&] { ran.push_back(s.now_us()); });
  s.at(1'000, [&] { ran.push_back(s.now_us()); });
  s.at(1'001, [&] { ran.push_back(s.now_us()); });
  const RunResult r = s.run();
  CHECK(ran == std::vector<TimeUs>{999, 1'000});
  CHECK(r.end == RunEnd::time_bound);
  CHECK(r.time_us == 1'000);
  CHECK(r.message.find("time bound") != std::string::npos);
  CHECK(r.message.find("1001") != std::string::npos);
}

TEST_CASE("scheduler: run_until stops at the limit and sets now to it", "[sim][scheduler]") {
  Scheduler s;
  std::vector<int> ran;
  s.at(10, [&] { ran.push_back(10); });
  s.at(50, [&] { ran.push_back(50); });
  s.at(51, [&] { ran.push_back(51); });
  RunResult r = s.run_until(50);
  CHECK(ran == std::vector<int>{10, 50});
  CHECK(r.end == RunEnd::queue_empty);
  CHECK(s.now_us() == 50);
  CHECK(s.pending());
  r = s.run_until(100);
  CHECK(ran == std::vector<int>{10, 50, 51});
  CHECK(s.now_us() == 100);
  CHECK(r.time_us == 100);
}

TEST_CASE("scheduler: run_until past the time bound reports the bound", "[sim][scheduler]") {
  Scheduler s({.time_max_us = 100});
  const RunResult r = s.run_until(500);
  CHECK(r.end == RunEnd::time_bound);
  CHECK(s.now_us() == 100);
}

TEST_CASE("scheduler: stop() ends the run after the current event", "[sim][scheduler]") {
  Scheduler s;
  std::vector<int> ran;
  s.at(1, [&] { ran.push_back(1); });
  s.at(2, [&] {
    ran.push_back(2);
    s.stop();
  });
  s.at(3, [&] { ran.push_back(3); });
  RunResult r = s.run();
  CHECK(r.end == RunEnd::stopped);
  CHECK(ran == std::vector<int>{1, 2});
  r = s.run();  // a stop is used up by the run it ended
  CHECK(r.end == RunEnd::queue_empty);
  CHECK(ran == std::vector<int>{1, 2, 3});
}

TEST_CASE("scheduler: after() saturates instead of overflowing", "[sim][scheduler]") {
  Scheduler s({.time_max_us = 1'000});
  bool ran = false;
  s.at(10, [&] { s.after(kTimeNever, [&] { ran = true; }); });
  const RunResult r = s.run();
  CHECK_FALSE(ran);
  CHECK(r.end == RunEnd::time_bound);
}

TEST_CASE("scheduler: an exception from an event leaves the scheduler usable", "[sim][scheduler]") {
  Scheduler s;
  int ran = 0;
  s.at(1, [] { throw std::runtime_error("boom"); });
  s.at(2, [&] { ++ran; });
  CHECK_THROWS_WITH(s.run(), "boom");
  CHECK(s.run().end == RunEnd::queue_empty);
  CHECK(ran == 1);
}

TEST_CASE("scheduler: clear() drops pending events without running them", "[sim][scheduler]") {
  Scheduler s;
  int ran = 0;
  s.at(1, [&] { ++ran; });
  s.at(2, [&] { ++ran; });
  s.clear();
  CHECK_FALSE(s.pending());
  CHECK(s.run().events == 0);
  CHECK(ran == 0);
}

TEST_CASE("scheduler: rejects an empty callback", "[sim][scheduler]") {
  Scheduler s;
  CHECK_THROWS_AS(s.at(1, std::function<void()>()), std::logic_error);
}

TEST_CASE("scheduler: a run cannot be nested inside an event", "[sim][scheduler]") {
  Scheduler s;
  s.at(1, [&] { s.run(); });
  CHECK_THROWS_AS(s.run(), std::logic_error);
  CHECK(s.run().end == RunEnd::queue_empty);  // usable afterwards
}
