// MemoryAdapter: TTL by its own clock, owner checks, fencing counters, observer events, the
// known-bad variant, and a threaded smoke test.
#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "lockstep/clock.h"
#include "services/memory/adapter/memory_adapter.h"

namespace lockstep {
namespace {

// Time moves only when told: sleeps and advances move both clocks, a jump the wall clock alone.
class ManualClock final : public Clock {
 public:
  int64_t now_us() override { return now_us_ + wall_offset_us_; }
  int64_t monotonic_us() override { return now_us_; }
  void sleep_for_us(int64_t duration_us) override { now_us_ += std::max<int64_t>(duration_us, 0); }
  void advance_us(int64_t us) { now_us_ += us; }
  void advance_ms(int64_t ms) { now_us_ += ms * 1000; }
  void jump_wall_ms(int64_t ms) { wall_offset_us_ += ms * 1000; }

 private:
  int64_t now_us_ = 5'000'000;
  int64_t wall_offset_us_ = 0;
};

// Records observer calls as one line each.
class RecordingObserver final : public LeaseObserver {
 public:
  void on_grant(std::string_view server, std::string_view key, std::string_view value,
                int64_t ttl_us, uint64_t fencing_token) override {
    events.push_back("grant " + line(server, key, value) + " " + std::to_string(ttl_us) + " #" +
                     std::to_string(fencing_token));
  }
  void on_extend(std::string_view server, std::string_view key, std::string_view value,
                 int64_t ttl_us) override {
    events.push_back("extend " + line(server, key, value) + " " + std::to_string(ttl_us));
  }
  void on_revoke(std::string_view server, std::string_view key, std::string_view value,
                 RevokeCause cause) override {
    events.push_back("revoke " + line(server, key, value) + " " +
                     (cause == RevokeCause::release ? "release" : "overwrite"));
  }

  std::vector<std::string> events;

 private:
  static std::string line(std::string_view server, std::string_view key, std::string_view value) {
    return std::string(server) + " " + std::string(key) + " " + std::string(value);
  }
};

LockSpec spec(std::string key, std::string value, int64_t ttl_ms = 100) {
  return {.key = std::move(key), .value = std::move(value), .ttl_ms = ttl_ms};
}

TEST_CASE("the adapter requires a clock", "[memory]") {
  CHECK_THROWS_AS(MemoryAdapter({}), std::logic_error);
}

TEST_CASE("a lock expires by the adapter's clock at exactly its TTL", "[memory]") {
  ManualClock clock;
  MemoryAdapter adapter({.clock = &clock});
  REQUIRE(adapter.create_lock(spec("k", "a", 100)).ok());
  clock.advance_us(99'999);
  CHECK(adapter.is_valid_lock(spec("k", "a")).ok());
  CHECK(adapter.create_lock(spec("k", "b")).status == AdapterStatus::contended);
  clock.advance_us(1);
  CHECK(adapter.is_valid_lock(spec("k", "a")).status == AdapterStatus::not_owner);
  CHECK(adapter.create_lock(spec("k", "b")).ok());
}

TEST_CASE("leases are timed on the monotonic clock: wall-clock jumps neither end nor stretch them",
          "[memory][clocks]") {
  ManualClock clock;
  MemoryAdapter adapter({.clock = &clock});
  REQUIRE(adapter.create_lock(spec("k", "a", 100)).ok());
  clock.jump_wall_ms(10'000);  // an NTP step forward: the lease is still A's
  CHECK(adapter.is_valid_lock(spec("k", "a")).ok());
  CHECK(adapter.create_lock(spec("k", "b")).status == AdapterStatus::contended);
  clock.jump_wall_ms(-20'000);  // and back: it still ends after 100 ms of the oscillator
  clock.advance_us(100'000);
  CHECK(adapter.is_valid_lock(spec("k", "a")).status == AdapterStatus::not_owner);
  CHECK(adapter.create_lock(spec("k", "b")).ok());
}

TEST_CASE("locks are not reentrant: the same owner creating again is contention", "[memory]") {
  ManualClock clock;
  MemoryAdapter adapter({.clock = &clock});
  REQUIRE(adapter.create_lock(spec("k", "a")).ok());
  CHECK(adapter.create_lock(spec("k", "a")).status == AdapterStatus::contended);
}

TEST_CASE("release is owner-checked", "[memory]") {
  ManualClock clock;
  MemoryAdapter adapter({.clock = &clock});
  REQUIRE(adapter.create_lock(spec("k", "a")).ok());
  CHECK(adapter.release_lock(spec("k", "b")).status == AdapterStatus::not_owner);
  CHECK(adapter.is_valid_lock(spec("k", "a")).ok());
  CHECK(adapter.release_lock(spec("k", "a")).ok());
  CHECK(adapter.release_lock(spec("k", "a")).status == AdapterStatus::not_owner);
  CHECK(adapter.size() == 0);
}

TEST_CASE("extend is owner-checked, runs from now, and never re-creates", "[memory]") {
  ManualClock clock;
  MemoryAdapter adapter({.clock = &clock});
  REQUIRE(adapter.create_lock(spec("k", "a", 100)).ok());
  CHECK(adapter.extend_lock(spec("k", "b"), 10'000).status == AdapterStatus::not_owner);
  clock.advance_ms(50);
  CHECK(adapter.extend_lock(spec("k", "a"), 100).ok());  // now expires at 150
  clock.advance_ms(99);
  CHECK(adapter.is_valid_lock(spec("k", "a")).ok());
  clock.advance_ms(1);
  CHECK(adapter.extend_lock(spec("k", "a"), 100).status == AdapterStatus::not_owner);
  CHECK(adapter.is_valid_lock(spec("k", "a")).status == AdapterStatus::not_owner);
  CHECK(adapter.size() == 0);
}

TEST_CASE("keys are independent", "[memory]") {
  ManualClock clock;
  MemoryAdapter adapter({.clock = &clock});
  const AdapterResult a = adapter.create_lock(spec("a", "x"));
  const AdapterResult b = adapter.create_lock(spec("b", "y", 300));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a.fencing_token == 1);
  CHECK(b.fencing_token == 1);
  CHECK(adapter.release_lock(spec("a", "x")).ok());
  CHECK(adapter.is_valid_lock(spec("b", "y")).ok());
  CHECK(adapter.release_lock(spec("b", "x")).status == AdapterStatus::not_owner);
}

TEST_CASE("fencing tokens strictly increase across release, expiry and purge", "[memory]") {
  ManualClock clock;
  MemoryAdapter adapter({.clock = &clock});
  std::vector<uint64_t> tokens;
  tokens.push_back(adapter.create_lock(spec("k", "a")).fencing_token);
  REQUIRE(adapter.release_lock(spec("k", "a")).ok());
  tokens.push_back(adapter.create_lock(spec("k", "b")).fencing_token);
  clock.advance_ms(100);  // b expires
  tokens.push_back(adapter.create_lock(spec("k", "c")).fencing_token);
  clock.advance_ms(100);
  CHECK(adapter.purge_expired() == 1);
  tokens.push_back(adapter.create_lock(spec("k", "d")).fencing_token);
  CHECK(tokens == std::vector<uint64_t>{1, 2, 3, 4});
  CHECK(adapter.create_lock(spec("k", "e")).fencing_token == 0);  // contended: no token
}

TEST_CASE("the observer sees grants, extends and releases with their arguments", "[memory]") {
  ManualClock clock;
  RecordingObserver observer;
  MemoryAdapter adapter({.clock = &clock, .observer = &observer, .server_name = "mem-1"});
  REQUIRE(adapter.create_lock(spec("k", "a", 100)).ok());
  REQUIRE(adapter.extend_lock(spec("k", "a"), 250).ok());
  REQUIRE(adapter.release_lock(spec("k", "a")).ok());
  CHECK(observer.events == std::vector<std::string>{"grant mem-1 k a 100000 #1",
                                                    "extend mem-1 k a 250000",
                                                    "revoke mem-1 k a release"});
}

TEST_CASE("failed operations and expiry emit no observer events", "[memory]") {
  ManualClock clock;
  RecordingObserver observer;
  MemoryAdapter adapter({.clock = &clock, .observer = &observer});
  REQUIRE(adapter.create_lock(spec("k", "a", 100)).ok());
  adapter.create_lock(spec("k", "b"));
  adapter.release_lock(spec("k", "b"));
  adapter.extend_lock(spec("k", "b"), 100);
  clock.advance_ms(100);
  REQUIRE(adapter.create_lock(spec("k", "b", 100)).ok());  // replaces the expired lease
  CHECK(observer.events ==
        std::vector<std::string>{"grant memory k a 100000 #1", "grant memory k b 100000 #2"});
}

TEST_CASE("purge_expired frees expired locks and size counts live ones", "[memory]") {
  ManualClock clock;
  MemoryAdapter adapter({.clock = &clock});
  REQUIRE(adapter.create_lock(spec("a", "x", 100)).ok());
  REQUIRE(adapter.create_lock(spec("b", "x", 200)).ok());
  REQUIRE(adapter.create_lock(spec("c", "x", 300)).ok());
  CHECK(adapter.size() == 3);
  clock.advance_ms(150);
  CHECK(adapter.size() == 2);
  CHECK(adapter.purge_expired() == 1);
  CHECK(adapter.purge_expired() == 0);
  clock.advance_ms(150);
  CHECK(adapter.size() == 0);
  CHECK(adapter.purge_expired() == 2);
}

TEST_CASE("requests that make no sense are backend errors, not grants", "[memory]") {
  ManualClock clock;
  MemoryAdapter adapter({.clock = &clock});
  CHECK(adapter.create_lock(spec("", "a")).status == AdapterStatus::backend_error);
  CHECK(adapter.create_lock(spec("k", "a", 0)).status == AdapterStatus::backend_error);
  REQUIRE(adapter.create_lock(spec("k", "a")).ok());
  const AdapterResult result = adapter.extend_lock(spec("k", "a"), -1);
  CHECK(result.status == AdapterStatus::backend_error);
  CHECK_THAT(result.message, Catch::Contains("ttl_ms -1"));
}

TEST_CASE("threads contending on one key never overlap and get distinct tokens", "[memory]") {
  SystemClock clock;
  MemoryAdapter adapter({.clock = &clock});
  constexpr int kThreads = 4, kIterations = 5000;
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::vector<std::vector<uint64_t>> tokens(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const LockSpec mine = spec("shared", "owner-" + std::to_string(t), 60'000);
      for (int i = 0; i < kIterations; ++i) {
        const AdapterResult result = adapter.create_lock(mine);
        if (!result.ok()) continue;
        if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
        tokens[static_cast<size_t>(t)].push_back(result.fencing_token);
        if (!adapter.is_valid_lock(mine).ok()) overlaps.fetch_add(1);
        inside.fetch_sub(1);
        if (!adapter.release_lock(mine).ok()) overlaps.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(overlaps.load() == 0);
  std::vector<uint64_t> all;
  for (const auto& mine : tokens) {
    CHECK(std::is_sorted(mine.begin(), mine.end()));
    all.insert(all.end(), mine.begin(), mine.end());
  }
  std::sort(all.begin(), all.end());
  REQUIRE_FALSE(all.empty());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
  CHECK(all.back() == all.size());  // tokens 1..N, one per grant
  CHECK(adapter.size() == 0);
}

}  // namespace
}  // namespace lockstep
