#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "harness/recorder.h"
#include "sim/trace.h"

namespace lockstep {
namespace {

// Records one event into a trace that hashes and keeps its line; returns the hash and the line.
struct Recorded {
  uint64_t hash = 0;
  std::string line;
};

Recorded record_one(const HistoryEvent& e) {
  sim::Trace trace;
  Recorder recorder(
      {.now_us = [] { return TimeUs{40}; },
       .trace_line = [&trace](const sim::TraceLine& line) { return trace.add(TimeUs{40}, line); },
       .current_client = [] { return -1; }});
  recorder.record(e);
  return {.hash = trace.hash(), .line = std::string(trace.line(0))};
}

TEST_CASE("recorder: an event's trace record holds every field it has, its line describe()'s",
          "[recorder][trace]") {
  const HistoryEvent base{.kind = EventKind::complete,
                          .client = 2,
                          .key = "k",
                          .op = Op::acquire,
                          .outcome = Outcome::ok,
                          .has_token = true,
                          .token = 7,
                          .value = "owner-1",
                          .local_now_us = 100,
                          .local_valid_until_us = 900};
  const Recorded recorded = record_one(base);
  CHECK(recorded.line == "40 " + describe(base));

  // Each change of one field, zero to non-zero and back included, gives another record: the
  // record must not lose what the text would have said (nor what it leaves out).
  const std::vector<std::function<void(HistoryEvent&)>> changes = {
      [](HistoryEvent& e) { e.kind = EventKind::invoke; },
      [](HistoryEvent& e) { e.client = -1; },
      [](HistoryEvent& e) { e.key = "k2"; },
      [](HistoryEvent& e) { e.key = ""; },
      [](HistoryEvent& e) { e.op = Op::extend; },
      [](HistoryEvent& e) { e.outcome = Outcome::fail; },
      [](HistoryEvent& e) { e.has_token = false; },
      [](HistoryEvent& e) { e.token = 0; },
      [](HistoryEvent& e) { e.token = 8; },
      [](HistoryEvent& e) { e.shared = true; },
      [](HistoryEvent& e) { e.kills_client = true; },
      [](HistoryEvent& e) { e.server = "s0"; },
      [](HistoryEvent& e) { e.value = ""; },
      [](HistoryEvent& e) { e.value = "owner-2"; },
      [](HistoryEvent& e) { e.ttl_us = 5; },
      [](HistoryEvent& e) { e.counter = 5; },
      [](HistoryEvent& e) { e.end_us = 5; },
      [](HistoryEvent& e) { e.fault = FaultKind::crash; },
      [](HistoryEvent& e) { e.amount = 5; },
      [](HistoryEvent& e) { e.local_now_us = 0; },
      [](HistoryEvent& e) { e.local_valid_until_us = 901; },
      [](HistoryEvent& e) { e.detail = "attempts=2"; },
      // A value moved from one present field to the next must not read the same.
      [](HistoryEvent& e) {
        e.local_now_us = 0;
        e.local_valid_until_us = 100;
      },
      [](HistoryEvent& e) {
        e.value = "";
        e.detail = "owner-1";
      },
  };
  std::set<uint64_t> hashes = {recorded.hash};
  for (size_t i = 0; i < changes.size(); ++i) {
    HistoryEvent changed = base;
    changes[i](changed);
    INFO("change " << i);
    CHECK(hashes.insert(record_one(changed).hash).second);
  }
  CHECK(record_one(base).hash == recorded.hash);  // and the same event, the same record
}

TEST_CASE("recorder: a one-thread recorder refuses another thread's event, a shared one takes it",
          "[recorder]") {
  for (const bool one_thread : {true, false}) {
    CAPTURE(one_thread);
    Recorder recorder({.now_us = [] { return TimeUs{0}; },
                       .trace_line = [](const sim::TraceLine&) { return size_t{0}; },
                       .current_client = [] { return -1; },
                       .one_thread = one_thread});
    CHECK(recorder.record({.kind = EventKind::invoke, .client = 0, .key = "k"}) == 0);
    bool refused = false;
    std::thread other([&] {
      try {
        recorder.record({.kind = EventKind::invoke, .client = 1, .key = "k"});
      } catch (const std::logic_error&) {
        refused = true;
      }
    });
    other.join();
    CHECK(refused == one_thread);
    CHECK(recorder.history().size() == (one_thread ? 1U : 2U));
  }
}

}  // namespace
}  // namespace lockstep
