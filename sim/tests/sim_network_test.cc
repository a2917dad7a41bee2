#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/world.h"

using namespace lockstep::sim;

namespace {

struct Arrival {
  int index;
  TimeUs sent_us;
  TimeUs arrived_us;
};

// Sends `count` messages 0->1, one every `gap_us`, recording each arrival.
std::vector<Arrival> send_many(World& w, int count, TimeUs gap_us) {
  auto arrivals = std::make_shared<std::vector<Arrival>>();
  for (int i = 0; i < count; ++i) {
    w.scheduler().at(i * gap_us, [&w, arrivals, i] {
      const TimeUs sent = w.now_us();
      w.network().send(0, 1, "m#" + std::to_string(i), [&w, arrivals, i, sent] {
        arrivals->push_back({i, sent, w.now_us()});
      });
    });
  }
  w.run();
  return *arrivals;
}

}  // namespace

TEST_CASE("network: latency stays within its bounds and varies", "[sim][network]") {
  World w({.seed = 7,
           .network = {.latency_us_min = 200, .latency_us_max = 1'000, .fifo_links = false}});
  w.add_node("a");
  w.add_node("b");
  const std::vector<Arrival> arrivals = send_many(w, 1'000, 10);
  REQUIRE(arrivals.size() == 1'000);
  TimeUs lowest = kTimeNever, highest = 0;
  for (const Arrival& a : arrivals) {
    lowest = std::min(lowest, a.arrived_us - a.sent_us);
    highest = std::max(highest, a.arrived_us - a.sent_us);
  }
  CHECK(lowest >= 200);
  CHECK(highest <= 1'000);
  CHECK(lowest < 250);  // 1000 uniform draws reach near both ends
  CHECK(highest > 950);
  CHECK(w.network().stats().sent == 1'000);
  CHECK(w.network().stats().delivered == 1'000);
  CHECK(w.network().stats().dropped == 0);
}

TEST_CASE("network: FIFO links deliver in send order and non-FIFO links may reorder",
          "[sim][network]") {
  SECTION("fifo") {
    World w({.network = {.latency_us_min = 0, .latency_us_max = 1'000, .fifo_links = true}});
    w.add_node("a");
    w.add_node("b");
    const std::vector<Arrival> arrivals = send_many(w, 500, 10);
    REQUIRE(arrivals.size() == 500);
    for (size_t i = 0; i < arrivals.size(); ++i) CHECK(arrivals[i].index == static_cast<int>(i));
    for (const Arrival& a : arrivals) CHECK(a.arrived_us - a.sent_us >= 0);
  }
  SECTION("not fifo") {
    World w({.network = {.latency_us_min = 0, .latency_us_max = 1'000, .fifo_links = false}});
    w.add_node("a");
    w.add_node("b");
    const std::vector<Arrival> arrivals = send_many(w, 500, 10);
    REQUIRE(arrivals.size() == 500);
    const bool reordered =
        !std::is_sorted(arrivals.begin(), arrivals.end(),
                        [](const Arrival& x, const Arrival& y) { return x.index < y.index; });
    CHECK(reordered);
  }
}

TEST_CASE("network: loss 1/1 drops everything, 0/1 nothing, 1/2 about half", "[sim][network]") {
  SECTION("all") {
    World w({.network = {.loss = {1, 1}}});
    w.add_node("a");
    w.add_node("b");
    CHECK(send_many(w, 100, 10).empty());
    CHECK(w.network().stats().sent == 100);
    CHECK(w.network().stats().dropped == 100);
    CHECK(w.network().stats().delivered == 0);
    CHECK(w.trace().contains("msg 0->1 drop m#0 (lost)"));
  }
  SECTION("half") {
    World w({.network = {.loss = {1, 2}}});
    w.add_node("a");
    w.add_node("b");
    const size_t delivered = send_many(w, 1'000, 10).size();
    CHECK(delivered > 400);
    CHECK(delivered < 600);
    CHECK(w.network().stats().dropped + delivered == 1'000);
  }
}

TEST_CASE("network: duplication delivers a message twice", "[sim][network]") {
  World w({.network = {.duplicate = {1, 1}}});
  w.add_node("a");
  w.add_node("b");
  const std::vector<Arrival> arrivals = send_many(w, 50, 10);
  CHECK(arrivals.size() == 100);
  for (int i = 0; i < 50; ++i) {
    CHECK(std::count_if(arrivals.begin(), arrivals.end(),
                        [i](const Arrival& a) { return a.index == i; }) == 2);
  }
  CHECK(w.network().stats().duplicated == 50);
  CHECK(w.network().stats().delivered == 100);
  CHECK(w.trace().contains("msg 0->1 dup m#0"));
}

TEST_CASE("network: one-way and two-way partitions, and heal", "[sim][network]") {
  World w({.network = {.latency_us_min = 10, .latency_us_max = 10}});
  const NodeId a = w.add_node("a");
  const NodeId b = w.add_node("b");
  std::vector<std::string> got;
  auto ping = [&](NodeId from, NodeId to, const std::string& what) {
    w.network().send(from, to, what, [&got, what] { got.push_back(what); });
  };
  w.network().partition(a, b);
  CHECK_FALSE(w.network().link_up(a, b));
  CHECK(w.network().link_up(b, a));
  ping(a, b, "a->b one-way");
  ping(b, a, "b->a one-way");
  w.run();
  CHECK(got == std::vector<std::string>{"b->a one-way"});

  got.clear();
  w.network().partition_both(a, b);
  ping(a, b, "a->b both");
  ping(b, a, "b->a both");
  w.run();
  CHECK(got.empty());

  w.network().heal(b, a);
  ping(a, b, "a->b half-healed");
  ping(b, a, "b->a half-healed");
  w.run();
  CHECK(got == std::vector<std::string>{"b->a half-healed"});

  got.clear();
  w.network().heal_all();
  ping(a, b, "a->b healed");
  ping(b, a, "b->a healed");
  w.run();
  CHECK(got == std::vector<std::string>{"a->b healed", "b->a healed"});
  CHECK(w.trace().contains("net cut 0->1"));
  CHECK(w.trace().contains("net cut 0<->1"));
  CHECK(w.trace().contains("msg 0->1 drop a->b one-way (cut)"));
}

TEST_CASE("network: a link cut while a message is in flight drops it", "[sim][network]") {
  World w({.network = {.latency_us_min = 500, .latency_us_max = 500}});
  const NodeId a = w.add_node("a");
  const NodeId b = w.add_node("b");
  std::vector<std::string> got;
  w.network().send(a, b, "cut-in-flight", [&] { got.push_back("cut-in-flight"); });
  w.scheduler().at(100, [&] {
    w.network().partition(a, b);
    w.network().send(b, a, "reverse", [&] { got.push_back("reverse"); });
  });
  w.scheduler().at(200, [&] {
    // Cut and healed again before arrival: delivered.
    w.network().send(b, a, "flap", [&] { got.push_back("flap"); });
    w.network().partition(b, a);
  });
  w.scheduler().at(300, [&] { w.network().heal(b, a); });
  w.run();
  CHECK(got == std::vector<std::string>{"reverse", "flap"});
  CHECK(w.trace().contains("500 msg 0->1 drop cut-in-flight (cut)"));
}

// A stall holds what it would have dropped, in flight or sent during it, and the heal delivers
// it late and in order, as TCP retransmits through an outage: at the link's next retransmission
// instant (200 ms after it was held, for an outage shorter than that); a drop cut beside it still
// drops.
TEST_CASE("network: a stalled link holds messages and the heal delivers them late, in order",
          "[sim][network]") {
  World w({.network = {.latency_us_min = 500, .latency_us_max = 500}});
  const NodeId a = w.add_node("a");
  const NodeId b = w.add_node("b");
  const NodeId c = w.add_node("c");
  std::vector<std::pair<std::string, TimeUs>> got;
  auto note = [&](std::string what) { return [&, what] { got.emplace_back(what, w.now_us()); }; };
  w.network().send(a, b, "in-flight", note("in-flight"));
  w.scheduler().at(100, [&] {
    w.network().set_cut_style(CutStyle::hold);
    w.network().partition_both(a, b);
    w.network().set_cut_style(CutStyle::drop);
    w.network().partition(a, c);  // a cut made after the stall drops, as before
  });
  w.scheduler().at(200, [&] {
    w.network().send(a, b, "sent-during", note("sent-during"));
    w.network().send(b, a, "reply-during", note("reply-during"));
    w.network().send(a, c, "dropped", note("dropped"));
    CHECK(w.network().held_messages() == 2);
  });
  w.scheduler().at(10'000, [&] { w.network().heal_all(); });
  w.run();
  // a->b follows its oldest message's schedule (held at 500: resent at 200'500), b->a its own
  // (held at 200: resent at 200'200); each then takes its 500 us.
  CHECK(got == std::vector<std::pair<std::string, TimeUs>>{
                   {"reply-during", 200'700}, {"in-flight", 201'000}, {"sent-during", 201'000}});
  CHECK(w.network().held_messages() == 0);
  CHECK(w.trace().contains("100 net stall 0<->1"));
  CHECK(w.trace().contains("500 msg 0->1 held in-flight"));
  CHECK(w.trace().contains(
      "10000 msg 0->1 release sent-during +191000us (held 9800us, resent after 190500us)"));
  CHECK(w.trace().contains("200 msg 0->2 drop dropped (cut)"));
}

TEST_CASE("network: a held message waits for TCP's next retransmission after the heal",
          "[sim][network]") {
  using R = Network;
  CHECK(R::retransmission_wait_us(0) == 200'000);
  CHECK(R::retransmission_wait_us(199'999) == 1);
  CHECK(R::retransmission_wait_us(200'000) == 400'000);      // the next try, 400 ms later, at 0.6 s
  CHECK(R::retransmission_wait_us(2'000'000) == 1'000'000);  // tries at 1.4 s and 3.0 s
  const TimeUs hour_us = 3'600'000'000;
  CHECK(R::retransmission_wait_us(hour_us) > 0);
  CHECK(R::retransmission_wait_us(hour_us) <= R::kRtoMaxUs);  // tries at most 120 s apart
}

// A client that gave up on a stalled connection reconnects when the path comes back: what it
// sends then is not queued behind the old connection's bytes, which wait for their next
// retransmission, so a new request can reach the server before an old one (a stale release
// after a new grant).
TEST_CASE("network: after a stall, a new send overtakes what the old connection still holds",
          "[sim][network]") {
  World w({.network = {.latency_us_min = 500, .latency_us_max = 500}});
  const NodeId a = w.add_node("a");
  const NodeId b = w.add_node("b");
  std::vector<std::string> got;
  w.network().set_cut_style(CutStyle::hold);
  w.network().partition(a, b);
  w.network().set_cut_style(CutStyle::drop);
  w.network().send(a, b, "old", [&] { got.push_back("old"); });
  w.scheduler().at(1'000'000, [&] { w.network().heal(a, b); });
  w.scheduler().at(1'001'000,
                   [&] { w.network().send(a, b, "new", [&] { got.push_back("new"); }); });
  w.run();
  CHECK(got == std::vector<std::string>{"new", "old"});  // old is resent at 1.4 s
  CHECK(
      w.trace().contains("msg 0->1 release old +400500us (held 1000000us, resent after 400000us)"));
}

// A held message still finds its destination as it is when released: a restarted server does
// not take the bytes of a connection its previous incarnation had.
TEST_CASE("network: a held message to a node restarted meanwhile is dropped", "[sim][network]") {
  World w({.network = {.latency_us_min = 500, .latency_us_max = 500}});
  const NodeId a = w.add_node("a");
  const NodeId b = w.add_node("b");
  bool delivered = false;
  w.network().set_cut_style(CutStyle::hold);
  w.network().partition(a, b);
  w.network().send(a, b, "old", [&] { delivered = true; });
  w.scheduler().at(1'000, [&] {
    w.crash(b);
    w.restart(b);
  });
  w.scheduler().at(2'000, [&] { w.network().heal(a, b); });
  w.run();
  CHECK_FALSE(delivered);
  CHECK(w.trace().contains("drop old (restarted)"));
}

TEST_CASE("network: messages to a crashed, restarted or paused node", "[sim][network]") {
  World w({.network = {.latency_us_min = 100, .latency_us_max = 100}});
  const NodeId client = w.add_node("client");
  const NodeId server = w.add_node("server");
  std::vector<std::string> got;
  auto send_at = [&](TimeUs t, const std::string& what) {
    w.scheduler().at(t, [&, what] {
      w.network().send(client, server, what,
                       [&, what] { got.push_back(what + "@" + std::to_string(w.now_us())); });
    });
  };
  send_at(0, "before-crash");      // arrives at 100
  send_at(150, "to-crashed");      // crash at 200, arrives at 250
  send_at(280, "across-restart");  // restart at 300, arrives at 380: the old incarnation's
  send_at(310, "to-new");          // arrives at 410
  send_at(500, "paused-1");        // pause 550..1550; arrive at 600 and 610
  send_at(510, "paused-2");
  w.scheduler().at(200, [&] { w.crash(server); });
  w.scheduler().at(300, [&] { w.restart(server); });
  w.scheduler().at(550, [&] { w.pause(server, 1'000); });
  w.run();
  CHECK(got == std::vector<std::string>{"before-crash@100", "to-new@410", "paused-1@1550",
                                        "paused-2@1550"});
  CHECK(w.trace().contains("250 msg 0->1 drop to-crashed (down)"));
  CHECK(w.trace().contains("380 msg 0->1 drop across-restart (restarted)"));
  CHECK(w.network().stats().dropped == 2);
}

TEST_CASE("network: trace lines for send and receive", "[sim][network]") {
  World w({.network = {.latency_us_min = 250, .latency_us_max = 250}});
  w.add_node("a");
  w.add_node("b");
  w.network().send(1, 0, "set#12", [] {});
  w.run();
  CHECK(w.trace().contains("0 msg 1->0 send set#12 +250us"));
  CHECK(w.trace().contains("250 msg 1->0 recv set#12"));
}

TEST_CASE("network: options are validated", "[sim][network]") {
  World w({});
  w.add_node("a");
  CHECK_THROWS_AS(w.network().set_options({.latency_us_min = 10, .latency_us_max = 5}),
                  std::logic_error);
  CHECK_THROWS_AS(w.network().set_options({.loss = {2, 1}}), std::logic_error);
  CHECK_THROWS_AS(w.network().set_options({.duplicate = {0, 0}}), std::logic_error);
  CHECK_THROWS_AS(w.network().send(0, 3, "nowhere", [] {}), std::logic_error);
  CHECK(w.network().options().latency_us_min == NetworkOptions{}.latency_us_min);
}

TEST_CASE("network: random latency follows the seed", "[sim][network]") {
  auto arrivals_for = [](uint64_t seed) {
    World w({.seed = seed, .network = {.latency_us_min = 0, .latency_us_max = 100'000}});
    w.add_node("a");
    w.add_node("b");
    std::vector<TimeUs> times;
    for (const Arrival& a : send_many(w, 20, 1)) times.push_back(a.arrived_us);
    return times;
  };
  CHECK(arrivals_for(1) == arrivals_for(1));
  CHECK(arrivals_for(1) != arrivals_for(2));
}

TEST_CASE("network: a reply buffered during a client's pause wakes it, a processed one waits",
          "[sim][network]") {
  // The client parks with a deadline at 500us; its reply arrives at 200us while it is paused
  // (100us..700us). Buffered delivery: the kernel has the reply before the deadline, so the client
  // resumes at the pause's end with it. Processed delivery: nothing reaches the client before the
  // pause ends, so the deadline wins.
  for (Delivery delivery : {Delivery::buffer, Delivery::process}) {
    World w({.seed = 1, .network = {.latency_us_min = 200, .latency_us_max = 200}});
    const NodeId client = w.add_node("client");
    const NodeId server = w.add_node("server");
    ParkResult result = ParkResult::deadline;
    TimeUs resumed_us = -1;
    w.spawn(
        client, "c",
        [&] {
          const Waiter waiter = w.prepare_park();
          w.network().send(
              server, client, "reply", [&w, waiter] { w.wake(waiter); }, delivery);
          result = w.park(waiter, 500);
          resumed_us = w.now_us();
        },
        0);
    w.scheduler().at(100, [&] { w.pause(client, 600); });
    w.run();
    INFO((delivery == Delivery::buffer ? "buffer" : "process"));
    CHECK(resumed_us == 700);
    CHECK(result == (delivery == Delivery::buffer ? ParkResult::woken : ParkResult::deadline));
  }
}

TEST_CASE("network: a slow node adds its delay both ways and draws nothing", "[sim][network]") {
  const auto arrivals_with = [](TimeUs delay_us, NodeId slow) {
    World w({.seed = 11, .network = {.latency_us_min = 200, .latency_us_max = 1'000}});
    w.add_node("a");
    w.add_node("b");
    w.add_node("c");
    if (delay_us > 0) w.network().set_node_delay(slow, delay_us);
    return send_many(w, 200, 10);
  };
  const std::vector<Arrival> plain = arrivals_with(0, 1);
  const std::vector<Arrival> to_slow = arrivals_with(5'000, 1);    // b receives
  const std::vector<Arrival> from_slow = arrivals_with(7'000, 0);  // a sends
  const std::vector<Arrival> bystander = arrivals_with(9'000, 2);  // c neither sends nor receives
  REQUIRE(plain.size() == 200);
  REQUIRE(to_slow.size() == 200);
  REQUIRE(from_slow.size() == 200);
  REQUIRE(bystander.size() == 200);
  for (size_t i = 0; i < plain.size(); ++i) {
    // The same latency draws, each shifted by the delay: FIFO order keeps the shift exact.
    CHECK(to_slow[i].arrived_us == plain[i].arrived_us + 5'000);
    CHECK(from_slow[i].arrived_us == plain[i].arrived_us + 7'000);
    CHECK(bystander[i].arrived_us == plain[i].arrived_us);
  }
  World w({});
  w.add_node("a");
  CHECK(w.network().node_delay_us(0) == 0);
  CHECK_THROWS(w.network().set_node_delay(0, -1));
  CHECK_THROWS(w.network().set_node_delay(1, 10));  // no such node
  w.network().set_node_delay(0, 10);
  CHECK(w.network().node_delay_us(0) == 10);
}
