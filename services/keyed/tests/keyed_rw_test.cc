// keyed-rw: the seed's ordering rules on the core, the thread driver's handles and runners, and
// the writer-starvation scenario through the simulator driver and the checkers.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <thread>

#include "report/report.h"
#include "run/runner.h"
#include "services/keyed/adapter/keyed_rw.h"
#include "services/keyed/known_bad/bad_rw_lost_wakeup.h"
#include "services/known_bad.h"

namespace lockstep {
namespace {

using keyed::RequestId;
using keyed::RwCore;
using keyed::RwMode;

std::vector<RequestId> release(RwCore& core, std::string_view key, RequestId id, RwMode mode) {
  std::vector<RequestId> granted;
  core.release(key, id, mode, granted);
  return granted;
}

}  // namespace

TEST_CASE("keyed-rw core: shared holders overlap while no exclusive is pending", "[keyed-rw]") {
  RwCore core;
  CHECK(core.request("k", RwMode::shared).granted);
  CHECK(core.request("k", RwMode::shared).granted);
  CHECK(core.try_acquire("k", RwMode::shared).has_value());
  CHECK(core.snapshot("k").shared_holders == 3);
}

TEST_CASE(
    "keyed-rw core: an exclusive waits for the readers before it and holds back later readers",
    "[keyed-rw]") {
  RwCore core;
  const RequestId r1 = core.request("k", RwMode::shared).id;
  const keyed::RwAdmission w = core.request("k", RwMode::exclusive);
  CHECK_FALSE(w.granted);
  const keyed::RwAdmission r2 = core.request("k", RwMode::shared);
  CHECK_FALSE(r2.granted);  // arrived after a queued exclusive
  CHECK_FALSE(core.try_acquire("k", RwMode::shared).has_value());  // try never passes the queue
  CHECK(core.snapshot("k").waiting.size() == 2);                   // and never joins it
  CHECK(release(core, "k", r1, RwMode::shared) == std::vector<RequestId>{w.id});
  CHECK(release(core, "k", w.id, RwMode::exclusive) == std::vector<RequestId>{r2.id});
  CHECK(release(core, "k", r2.id, RwMode::shared).empty());
  CHECK(core.key_count() == 0);
}

TEST_CASE("keyed-rw core: exclusives run in request order and a batch of readers goes in together",
          "[keyed-rw]") {
  RwCore core;
  const RequestId w1 = core.request("k", RwMode::exclusive).id;
  const RequestId w2 = core.request("k", RwMode::exclusive).id;
  const RequestId r1 = core.request("k", RwMode::shared).id;
  const RequestId r2 = core.request("k", RwMode::shared).id;
  const RequestId w3 = core.request("k", RwMode::exclusive).id;
  CHECK(release(core, "k", w1, RwMode::exclusive) == std::vector<RequestId>{w2});
  CHECK(release(core, "k", w2, RwMode::exclusive) == std::vector<RequestId>{r1, r2});
  CHECK(release(core, "k", r1, RwMode::shared).empty());
  CHECK(release(core, "k", r2, RwMode::shared) == std::vector<RequestId>{w3});
  CHECK(core.request("other", RwMode::exclusive).granted);  // keys are independent
}

TEST_CASE("keyed-rw core: a withdrawn exclusive lets the readers behind it in", "[keyed-rw]") {
  RwCore core;
  core.request("k", RwMode::shared);
  const RequestId w = core.request("k", RwMode::exclusive).id;
  const RequestId r = core.request("k", RwMode::shared).id;
  std::vector<RequestId> granted;
  CHECK(core.cancel("k", w, granted));
  CHECK(granted == std::vector<RequestId>{r});
  CHECK_FALSE(core.cancel("k", w, granted));
}

TEST_CASE("keyed-rw core: releasing what is not held is a broken precondition", "[keyed-rw]") {
  RwCore core;
  std::vector<RequestId> granted;
  CHECK_THROWS_AS(core.release("k", 1, RwMode::exclusive, granted), std::logic_error);
  const RequestId w = core.request("k", RwMode::exclusive).id;
  CHECK_THROWS_AS(core.release("k", w + 1, RwMode::exclusive, granted), std::logic_error);
}

TEST_CASE("keyed-rw core: per-key state is freed as soon as a key is idle", "[keyed-rw][no-leak]") {
  RwCore core;
  for (int i = 0; i < 1000; ++i) {
    const std::string key = "temp:" + std::to_string(i);
    const RequestId id = core.request(key, RwMode::shared).id;
    release(core, key, id, RwMode::shared);
  }
  CHECK(core.key_count() == 0);
}

TEST_CASE("KeyedRwMutex: handles unlock once, on destruction too, and can move",
          "[keyed-rw][threads]") {
  keyed::KeyedRwMutex mtx;
  {
    keyed::RwHandle h = mtx.lock("doc:1");
    CHECK(h.owns_lock());
    CHECK_FALSE(mtx.try_lock("doc:1").has_value());
    CHECK_FALSE(mtx.try_lock_shared("doc:1").has_value());
    keyed::RwHandle moved = std::move(h);
    CHECK_FALSE(h.owns_lock());
    moved.unlock();
    moved.unlock();  // idempotent
    CHECK(mtx.key_count() == 0);
    keyed::RwHandle again = mtx.lock_shared("doc:1");
    CHECK(mtx.key_count() == 1);
  }
  CHECK(mtx.key_count() == 0);
  std::optional<keyed::RwHandle> a = mtx.try_lock_shared("doc:1");
  std::optional<keyed::RwHandle> b = mtx.try_lock_shared("doc:1");
  CHECK((a && b));
}

TEST_CASE("KeyedRwMutex: the runner returns the result, releases on throw and rethrows",
          "[keyed-rw][threads]") {
  keyed::KeyedRwMutex mtx;
  CHECK(mtx.with_lock("k", [] { return 42; }) == 42);
  CHECK(mtx.with_lock_shared("k", [] { return std::string("read"); }) == "read");
  CHECK_THROWS_WITH(mtx.with_lock("k", []() -> int { throw std::runtime_error("task failed"); }),
                    "task failed");
  CHECK(mtx.key_count() == 0);
  CHECK(mtx.try_lock("k").has_value());
}

TEST_CASE("KeyedRwMutex: a waiting writer is woken by the last reader", "[keyed-rw][threads]") {
  keyed::KeyedRwMutex mtx;
  keyed::RwHandle reader = mtx.lock_shared("k");
  int value = 0;
  std::thread writer([&] { mtx.with_lock("k", [&] { value = 1; }); });
  // No sleep: the writer either queued already or will find the key free after the unlock.
  reader.unlock();
  writer.join();
  CHECK(value == 1);
  CHECK(mtx.key_count() == 0);
}

TEST_CASE("writer-starvation: with writer preference the writer gets in at 100 ms",
          "[keyed-rw][scenario]") {
  const RunReport r = run_scenario({.scenario = "writer-starvation", .adapter = "keyed-rw"});
  INFO(to_text(r));
  CHECK(r.ok());
  CHECK(r.matches_expectation());
  const int writer = static_cast<int>(r.history.meta.clients) - 1;
  bool entered = false;
  for (const HistoryEvent& e : r.history.events()) {
    if (e.kind == EventKind::cs_enter && e.client == writer) {
      entered = true;
      CHECK(e.time_us >= 100'000);
      CHECK(e.time_us <= 100'400);  // the first reader's exit, plus its start jitter
    }
    if (e.kind == EventKind::key_state && e.key == "resource") CHECK(e.counter <= 9);
  }
  CHECK(entered);
  CHECK((r.history.events().back().kind != EventKind::key_state ||
         r.history.events().back().counter == 0));
}

TEST_CASE("writer-starvation catches the reader-preferring known-bad lock",
          "[keyed-rw][scenario][known-bad]") {
  register_known_bad_adapters();
  for (uint64_t seed : {1, 2, 3}) {
    const RunReport r = run_scenario(
        {.scenario = "writer-starvation", .adapter = "bad-rw-reader-preference", .seed = seed});
    INFO(to_text(r));
    CHECK(r.violated().count(Invariant::writer_preference) == 1);
    CHECK(r.violated().count(Invariant::mutual_exclusion) == 0);
    CHECK(r.matches_expectation());
  }
}

TEST_CASE("the lost-wakeup core: the last holder out leaves a queued writer waiting",
          "[keyed-rw][known-bad]") {
  LostWakeupRwCore core;
  const RequestId r1 = core.request("k", RwMode::shared).id;
  const RequestId r2 = core.request("k", RwMode::shared).id;
  const keyed::RwAdmission w = core.request("k", RwMode::exclusive);
  CHECK_FALSE(w.granted);
  CHECK(release(core, "k", r1, RwMode::shared).empty());  // a reader still holds: right
  CHECK(release(core, "k", r2, RwMode::shared).empty());  // the last one out: forgets the writer
  CHECK(core.snapshot("k").waiting.size() == 1);
  // A queued reader behind an exclusive holder is still served: only writers are forgotten.
  LostWakeupRwCore other;
  const RequestId x = other.request("k", RwMode::exclusive).id;
  const keyed::RwAdmission r = other.request("k", RwMode::shared);
  CHECK(release(other, "k", x, RwMode::exclusive) == std::vector<RequestId>{r.id});
}

TEST_CASE("writer-starvation catches the lost-wakeup known-bad lock: the writer is stuck",
          "[keyed-rw][scenario][known-bad][stuck]") {
  register_known_bad_adapters();
  for (uint64_t seed : {1, 2, 3}) {
    const RunReport r = run_scenario(
        {.scenario = "writer-starvation", .adapter = "bad-rw-lost-wakeup", .seed = seed});
    INFO(to_text(r));
    CHECK(r.end == RunEnd::complete);
    CHECK(r.violated() == Expectation{Invariant::liveness});
    CHECK(r.matches_expectation());
    const int writer = static_cast<int>(r.history.meta.clients) - 1;
    bool writer_stuck = false;
    for (const ReportedViolation& v : r.violations) {
      if (v.violation.clients == std::vector<int>{writer}) {
        writer_stuck = v.violation.detail.find("still waiting in acquire on key resource") !=
                       std::string::npos;
      }
    }
    CHECK(writer_stuck);
  }
  // The trait, not the name: readers that never overlap the writer's arrival leave it unqueued.
  const RunReport late = run_scenario({.scenario = "writer-starvation",
                                       .adapter = "bad-rw-lost-wakeup",
                                       .sets = {"writer_at_ms=2000"}});
  INFO(to_text(late));
  CHECK(late.ok());
  CHECK(late.matches_expectation());
}

TEST_CASE("writer-starvation is deterministic per seed", "[keyed-rw][scenario][determinism]") {
  const RunReport a =
      run_scenario({.scenario = "writer-starvation", .adapter = "keyed-rw", .seed = 5});
  const RunReport b =
      run_scenario({.scenario = "writer-starvation", .adapter = "keyed-rw", .seed = 5});
  CHECK(a.trace_hash == b.trace_hash);
}

namespace {

History keyed_history(std::vector<HistoryEvent> events) {
  History h;
  h.meta.keyed = true;
  TimeUs t = 0;
  for (HistoryEvent& e : events) {
    e.time_us = t += 10;
    h.add(std::move(e));
  }
  return h;
}

HistoryEvent acquire(EventKind kind, int client, bool shared, Outcome outcome = Outcome::none) {
  return {.kind = kind,
          .client = client,
          .key = "k",
          .op = Op::acquire,
          .outcome = outcome,
          .shared = shared};
}

}  // namespace

TEST_CASE("keyed checkers: an exclusive passing an earlier request breaks fifo",
          "[keyed-rw][checkers]") {
  const History h =
      keyed_history({acquire(EventKind::invoke, 0, true), acquire(EventKind::invoke, 1, false),
                     acquire(EventKind::complete, 1, false, Outcome::ok)});
  const std::vector<Violation> found = check_fifo(h);
  REQUIRE(found.size() == 1);
  CHECK(found[0].clients == std::vector<int>{0, 1});
  CHECK(check_writer_preference(h).empty());
}

TEST_CASE("keyed checkers: a reader passing a queued writer breaks writer_preference",
          "[keyed-rw][checkers]") {
  const History h =
      keyed_history({acquire(EventKind::invoke, 0, false), acquire(EventKind::invoke, 1, true),
                     acquire(EventKind::complete, 1, true, Outcome::ok)});
  CHECK(check_writer_preference(h).size() == 1);
  CHECK(check_fifo(h).empty());
  History lease = h;
  lease.meta.keyed = false;  // lease locks make no order promise
  CHECK(check_writer_preference(lease).empty());
}

TEST_CASE("keyed checkers: state kept for an idle key breaks no_leak",
          "[keyed-rw][checkers][no-leak]") {
  auto state = [](int64_t entries) {
    return HistoryEvent{.kind = EventKind::key_state, .key = "k", .counter = entries};
  };
  const HistoryEvent release_done{.kind = EventKind::complete,
                                  .client = 0,
                                  .key = "k",
                                  .op = Op::release,
                                  .outcome = Outcome::ok};
  const History leaky =
      keyed_history({acquire(EventKind::invoke, 0, false), state(1),
                     acquire(EventKind::complete, 0, false, Outcome::ok), state(1), release_done});
  const std::vector<Violation> found = check_no_leak(leaky);
  REQUIRE(found.size() == 1);
  CHECK(found[0].key == "k");
  const History clean =
      keyed_history({acquire(EventKind::invoke, 0, false), state(1),
                     acquire(EventKind::complete, 0, false, Outcome::ok), state(0), release_done});
  CHECK(check_no_leak(clean).empty());
}

}  // namespace lockstep
