// SimBackground's CallGate: the fibers of one node that share an adapter take turns, in arrival
// order, and a fiber killed with its node never keeps the gate.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "sim/sim_background.h"
#include "sim/world.h"

using namespace lockstep;
using namespace lockstep::sim;

namespace {

// A fiber that holds the gate for hold_us of true time, logging when it got and left it.
void hold(World& w, CallGate& gate, std::vector<std::string>& log, const std::string& name,
          TimeUs hold_us) {
  GatePass pass(&gate);
  log.push_back(name + " in @" + std::to_string(w.now_us()));
  w.sleep_for_us(hold_us);
  log.push_back(name + " out @" + std::to_string(w.now_us()));
}

}  // namespace

TEST_CASE("call gate: one holder at a time, waiters admitted in arrival order", "[sim][gate]") {
  World w({});
  const NodeId n = w.add_node("client");
  SimBackground background(w, n);
  std::shared_ptr<CallGate> gate = background.make_gate();
  std::vector<std::string> log;
  w.spawn(
      n, "a", [&] { hold(w, *gate, log, "a", 100); }, 0);
  w.spawn(
      n, "c", [&] { hold(w, *gate, log, "c", 10); }, 20);
  w.spawn(
      n, "b", [&] { hold(w, *gate, log, "b", 10); }, 10);
  CHECK(w.run().end == RunEnd::queue_empty);
  CHECK(log == std::vector<std::string>{"a in @0", "a out @100", "b in @100", "b out @110",
                                        "c in @110", "c out @120"});
}

TEST_CASE("call gate: an uncontended gate admits at once and costs no time", "[sim][gate]") {
  World w({});
  const NodeId n = w.add_node("client");
  SimBackground background(w, n);
  std::shared_ptr<CallGate> gate = background.make_gate();
  std::vector<std::string> log;
  w.spawn(n, "a", [&] {
    hold(w, *gate, log, "a", 0);
    hold(w, *gate, log, "a", 0);
  });
  CHECK(w.run().end == RunEnd::queue_empty);
  CHECK(log == std::vector<std::string>{"a in @0", "a out @0", "a in @0", "a out @0"});
}

TEST_CASE("call gate: a crash kills holder and waiters, and the restarted node gets the gate",
          "[sim][gate]") {
  World w({});
  const NodeId n = w.add_node("client");
  SimBackground background(w, n);
  std::shared_ptr<CallGate> gate = background.make_gate();
  std::vector<std::string> log;
  w.spawn(
      n, "a", [&] { hold(w, *gate, log, "a", 1000); }, 0);
  w.spawn(
      n, "b", [&] { hold(w, *gate, log, "b", 10); }, 10);
  w.scheduler().at(50, [&] { w.crash(n); });
  w.scheduler().at(60, [&] {
    w.restart(n);
    w.spawn(
        n, "after", [&] { hold(w, *gate, log, "after", 10); }, 60);
  });
  CHECK(w.run().end == RunEnd::queue_empty);
  CHECK(log == std::vector<std::string>{"a in @0", "after in @60", "after out @70"});
}

TEST_CASE("call gate: a waiter killed after the gate was handed to it passes it on",
          "[sim][gate]") {
  // Two nodes' worth of fibers cannot share one node's gate, so the hand-over and the kill happen
  // in the same instant: a leaves at 100 (handing to b) and the node crashes at 100 before b runs.
  World w({});
  const NodeId n = w.add_node("client");
  SimBackground background(w, n);
  std::shared_ptr<CallGate> gate = background.make_gate();
  std::vector<std::string> log;
  w.spawn(n, "a", [&] {
    {
      GatePass pass(gate.get());
      w.sleep_for_us(100);
    }
    w.crash(n);  // b was handed the gate and is waking: it dies holding nothing
  });
  w.spawn(
      n, "b", [&] { hold(w, *gate, log, "b", 10); }, 10);
  w.scheduler().at(200, [&] {
    w.restart(n);
    w.spawn(
        n, "after", [&] { hold(w, *gate, log, "after", 10); }, 200);
  });
  CHECK(w.run().end == RunEnd::queue_empty);
  CHECK(log == std::vector<std::string>{"after in @200", "after out @210"});
}

// A task dropped by its owner joins in its destructor; when the owner's node crashes during that
// join, the owner's fiber must unwind from its next park, not end the program (a throw out of a
// destructor): the crash of a lock client whose watchdog it was stopping.
TEST_CASE("background: a crash during a destructor's join unwinds the owner at its next park",
          "[sim][gate]") {
  World w({});
  const NodeId n = w.add_node("client");
  SimBackground background(w, n);
  std::vector<std::string> log;
  w.spawn(n, "owner", [&] {
    {
      std::unique_ptr<BackgroundTask> task = background.start("renew", [&](StopWaiter&) {
        w.sleep_for_us(1'000);  // a step in flight that ignores the stop, like an adapter call
        log.push_back("task step done");
      });
      w.sleep_for_us(10);
      log.push_back("dropping the task");
    }  // joins here; the crash at 500 us cuts the join
    log.push_back("owner went on");
    w.sleep_for_us(10);
    log.push_back("owner parked again");
  });
  w.scheduler().at(500, [&] { w.crash(n); });
  CHECK(w.run().end == RunEnd::queue_empty);
  CHECK(w.unfinished_fibers() == 0);
  CHECK(log == std::vector<std::string>{"dropping the task", "owner went on"});
}
