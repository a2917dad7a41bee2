// Leases derived from the clients (harness/client_side_leases.h), for stores that report
// none: a real redis-server, a co-simulated in-memory library. A store reached without latency
// grants and is called again at one instant; the call must be judged against the lock's own
// grant, not an earlier owner's (which made ext:locco-memory's own extend look like an extend of
// another client's lock: a false ownership violation).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "adapters/core/locker.h"
#include "harness/client_side_leases.h"
#include "harness/recorder.h"
#include "services/memory/adapter/memory_adapter.h"

namespace lockstep {
namespace {

// True time that moves only when told; both clocks are it.
class StepClock final : public Clock {
 public:
  int64_t now_us() override { return now_us_; }
  int64_t monotonic_us() override { return now_us_; }
  void sleep_for_us(int64_t duration_us) override { now_us_ += duration_us > 0 ? duration_us : 0; }
  void advance_us(int64_t us) { now_us_ += us; }

 private:
  int64_t now_us_ = 1'000'000;
};

struct Fixture {
  StepClock clock;
  SeededRandom random{11};
  MemoryAdapter memory{{.clock = &clock}};
  std::vector<std::string> trace;
  Recorder recorder{{.now_us = [this] { return clock.now_us(); },
                     .trace_line =
                         [this](const sim::TraceLine& line) {
                           fmt::memory_buffer text;
                           line.write_text(text);
                           trace.emplace_back(text.data(), text.size());
                           return trace.size() - 1;
                         },
                     .current_client = [] { return -1; }}};
  ClientSideLeases leases{recorder};

  Lock lock(const std::string& key, int64_t ttl_ms) {
    return Locker({.adapter = &memory, .clock = &clock, .random = &random}).lock(key, ttl_ms);
  }
  // The client acquires at this instant (no latency), and the leases hear of it.
  Lock acquired(int client, const std::string& key, int64_t ttl_ms) {
    Lock l = lock(key, ttl_ms);
    l.acquire();
    leases.acquired(client, l, clock.now_us());
    return l;
  }
  const HistoryEvent& last(EventKind kind) const {
    const std::vector<HistoryEvent>& events = recorder.history().events();
    for (auto it = events.rbegin(); it != events.rend(); ++it) {
      if (it->kind == kind) return *it;
    }
    FAIL("no event of that kind");
    return events.front();
  }
  // c1 held "k" and released it; 50 ms later c0 gets it, the store answering at once.
  std::pair<Lock, Lock> previous_owner_then_mine() {
    Lock first = acquired(1, "k", 100);
    REQUIRE(first.release());
    leases.release_sent(1, first);
    clock.advance_us(50'000);
    return {std::move(first), acquired(0, "k", 300)};
  }
};

TEST_CASE("client-side leases: an extend at the instant of its own grant is its own",
          "[harness][leases]") {
  Fixture f;
  auto [first, mine] = f.previous_owner_then_mine();
  // c0 acquired and extends at one instant: its extend lengthens its own lease, not c1's.
  const int64_t invoked_us = f.clock.now_us();
  mine.extend(300);
  f.leases.extended(0, mine, 300, invoked_us);
  CHECK(f.last(EventKind::extend).value == mine.unique_value());
  CHECK(f.last(EventKind::extend).value != first.unique_value());
}

TEST_CASE("client-side leases: a release at the instant of its own grant ends no other's lease",
          "[harness][leases]") {
  Fixture f;
  auto [first, mine] = f.previous_owner_then_mine();
  const size_t revokes_before = f.recorder.history().size();
  const int64_t invoked_us = f.clock.now_us();
  REQUIRE(mine.release());
  f.leases.released(0, mine, invoked_us);
  // Nothing recorded against c1: the release removed c0's own lock.
  CHECK(f.recorder.history().size() == revokes_before);
}

TEST_CASE("client-side leases: a call after another's later grant is still judged against it",
          "[harness][leases]") {
  // What the ownership checker must keep seeing: c0's grant, then c1's (c0's had expired), then
  // c0 extends successfully: that lengthened c1's lock.
  Fixture f;
  Lock mine = f.acquired(0, "k", 100);
  f.clock.advance_us(150'000);
  Lock theirs = f.acquired(1, "k", 100);
  f.clock.advance_us(1);
  f.leases.extended(0, mine, 100, f.clock.now_us());
  CHECK(f.last(EventKind::extend).value == theirs.unique_value());
}

}  // namespace
}  // namespace lockstep
