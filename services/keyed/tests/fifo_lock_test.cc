// fifo: the core's rules, the thread driver's errors, order, timeouts and clear(), and the
// fifo-queue scenario through the simulator driver and the checkers.
#include <catch2/catch.hpp>

#include <atomic>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

#include "report/report.h"
#include "run/runner.h"
#include "services/keyed/adapter/fifo_lock.h"
#include "services/keyed/known_bad/bad_fifo_clear_admits.h"
#include "services/known_bad.h"

namespace lockstep {
namespace {

using keyed::FifoAdmit;
using keyed::FifoCore;
using keyed::KeyedLockCode;
using keyed::KeyedLockError;
using keyed::RequestId;

// Polls an observable condition of the lock (no sleeping as synchronisation; bounded).
template <class Pred>
void wait_until(Pred pred) {
  for (long spins = 0; !pred(); ++spins) {
    REQUIRE(spins < 50'000'000);
    std::this_thread::yield();
  }
}

}  // namespace

TEST_CASE("fifo core: callers of one key hold it one at a time in arrival order", "[fifo]") {
  FifoCore core;
  const RequestId a = core.request("k").id;
  const RequestId b = core.request("k").id;
  const RequestId c = core.request("k").id;
  CHECK(core.request("other").admit == FifoAdmit::granted);  // other keys run in parallel
  CHECK(core.holder("k") == a);
  CHECK_FALSE(core.try_acquire("k").has_value());  // no barging
  CHECK(core.release("k", a) == b);
  CHECK(core.release("k", b) == c);
  CHECK(core.release("k", c) == keyed::kNoRequest);
  CHECK(core.size() == 1);
}

TEST_CASE("fifo core: a timed-out waiter leaves without touching the holder or the others",
          "[fifo]") {
  FifoCore core;
  const RequestId a = core.request("k").id;
  const RequestId b = core.request("k").id;
  const RequestId c = core.request("k").id;
  CHECK(core.cancel("k", b));
  CHECK(core.holder("k") == a);
  CHECK(core.queue("k") == std::vector<RequestId>{c});
  CHECK_FALSE(core.cancel("k", a));  // the holder is not waiting
}

TEST_CASE("fifo core: limits refuse without changing anything", "[fifo]") {
  FifoCore core({.max_key_length = 4, .max_waiters_per_key = 1});
  CHECK(core.request("12345").admit == FifoAdmit::invalid_key);
  CHECK(core.request("1234").admit == FifoAdmit::granted);
  CHECK(core.request("1234").admit == FifoAdmit::queued);
  CHECK(core.request("1234").admit == FifoAdmit::queue_full);
  CHECK(core.waiting("1234") == 1);
}

TEST_CASE("fifo core: clear rejects the waiters in request order and keeps the holders", "[fifo]") {
  FifoCore core;
  const RequestId a = core.request("x").id;
  const RequestId b = core.request("x").id;
  core.request("y");
  const RequestId d = core.request("y").id;
  const std::vector<keyed::FifoRejection> rejected = core.clear();
  CHECK(rejected ==
        std::vector<keyed::FifoRejection>{{.key = "x", .id = b}, {.key = "y", .id = d}});
  CHECK(core.holder("x") == a);
  const RequestId after = core.request("x").id;  // queues behind the holder: exclusion kept
  CHECK(core.queue("x") == std::vector<RequestId>{after});
}

TEST_CASE("FifoLock: errors carry their code and context", "[fifo][threads]") {
  keyed::FifoLock lock({.max_key_length = 8, .max_waiters_per_key = 0});
  try {
    lock.with_lock(std::string(300, 'x'), [] {});
    FAIL("no INVALID_KEY");
  } catch (const KeyedLockError& e) {
    CHECK(e.code() == KeyedLockCode::invalid_key);
    CHECK(e.code_name() == "INVALID_KEY");
    CHECK(e.key_length() == 300);
    CHECK(e.key().size() == KeyedLockError::kKeyShownBytes);
    CHECK(e.max_key_length() == 8u);
  }
  lock.with_lock("k", [&] {
    try {
      lock.with_lock("k", [] {});
      FAIL("no LOCK_QUEUE_FULL");
    } catch (const KeyedLockError& e) {
      CHECK(e.code() == KeyedLockCode::lock_queue_full);
      CHECK(e.key() == "k");
      CHECK(e.max_waiters_per_key() == 0u);
    }
  });
  CHECK(lock.size() == 0);
}

TEST_CASE("FifoLock: the result and the exception go back to the caller and the key is handed on",
          "[fifo][threads]") {
  keyed::FifoLock lock;
  CHECK(lock.with_lock("k", [] { return 7; }) == 7);
  CHECK_THROWS_WITH(
      lock.with_lock("k", []() -> int { throw std::runtime_error("handler failed"); }),
      "handler failed");
  CHECK_FALSE(lock.held("k"));
  CHECK(lock.size() == 0);
}

TEST_CASE("FifoLock: waiters run in arrival order", "[fifo][threads]") {
  keyed::FifoLock lock;
  std::vector<int> order;
  std::vector<std::thread> threads;
  lock.with_lock("k", [&] {
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back(
          [&lock, &order, i] { lock.with_lock("k", [&] { order.push_back(i); }); });
      wait_until([&] { return lock.waiting("k") == static_cast<size_t>(i + 1); });  // i has queued
    }
  });
  for (std::thread& t : threads) t.join();
  CHECK(order == std::vector<int>{0, 1, 2, 3});
  CHECK(lock.size() == 0);
}

// now + max_wait_ms overflowed the steady clock's nanoseconds for huge waits and landed in the
// past: the caller timed out at once instead of waiting.
TEST_CASE("FifoLock: a wait longer than the clock can count is a wait without a deadline",
          "[fifo][threads]") {
  keyed::FifoLock lock;
  std::atomic<bool> ran = false;
  std::atomic<bool> timed_out = false;
  std::thread waiter;
  lock.with_lock("k", [&] {
    waiter = std::thread([&] {
      try {
        lock.with_lock("k", [&] { ran = true; },
                       {.max_wait_ms = std::numeric_limits<int64_t>::max()});
      } catch (const KeyedLockError&) {
        timed_out = true;
      }
    });
    wait_until([&] { return lock.waiting("k") == 1 || timed_out; });
    CHECK_FALSE(timed_out);
  });
  waiter.join();
  CHECK(ran);
  CHECK_FALSE(timed_out);
  CHECK(lock.size() == 0);
}

TEST_CASE("FifoLock: LOCK_TIMEOUT leaves the holder and the other waiters alone",
          "[fifo][threads]") {
  keyed::FifoLock lock;
  std::atomic<bool> patient_ran = false;
  std::thread patient;
  lock.with_lock("k", [&] {
    patient = std::thread([&] { lock.with_lock("k", [&] { patient_ran = true; }); });
    wait_until([&] { return lock.waiting("k") == 1; });
    try {
      lock.with_lock("k", [] {}, {.max_wait_ms = 20});
      FAIL("no LOCK_TIMEOUT");
    } catch (const KeyedLockError& e) {
      CHECK(e.code() == KeyedLockCode::lock_timeout);
      CHECK(e.key() == "k");
      CHECK(e.max_wait_ms() == 20);
    }
    CHECK(lock.held("k"));
    CHECK(lock.waiting("k") == 1);
  });
  patient.join();
  CHECK(patient_ran);
  CHECK(lock.size() == 0);
}

TEST_CASE("FifoLock: clear rejects waiters with LOCK_CLEARED and keeps exclusion",
          "[fifo][threads]") {
  keyed::FifoLock lock;
  std::atomic<int> cleared = 0;
  std::atomic<int> inside = 0;
  std::vector<std::thread> waiters;
  lock.with_lock("k", [&] {
    ++inside;
    for (int i = 0; i < 3; ++i) {
      waiters.emplace_back([&] {
        try {
          lock.with_lock("k", [] {});
        } catch (const KeyedLockError& e) {
          if (e.code() == KeyedLockCode::lock_cleared) ++cleared;
        }
      });
    }
    wait_until([&] { return lock.waiting("k") == 3; });
    CHECK(lock.clear() == 3);
    for (std::thread& t : waiters) t.join();
    CHECK(cleared == 3);
    CHECK(lock.held("k"));  // the running holder keeps its key
    CHECK(lock.size() == 1);
    --inside;
  });
  CHECK(lock.size() == 0);
}

TEST_CASE("fifo-queue scenario: order, a timeout and clear() hold every invariant",
          "[fifo][scenario]") {
  for (uint64_t seed : {1, 2, 3}) {
    const RunReport r = run_scenario({.scenario = "fifo-queue", .adapter = "fifo", .seed = seed});
    INFO(to_text(r));
    CHECK(r.ok());
    CHECK(r.matches_expectation());
    int timeouts = 0;
    int cleared = 0;
    for (const HistoryEvent& e : r.history.events()) {
      if (e.kind == EventKind::complete && e.op == Op::acquire && e.outcome == Outcome::fail)
        ++timeouts;
      if (e.kind == EventKind::complete && e.op == Op::acquire && e.detail == "LOCK_CLEARED")
        ++cleared;
    }
    CHECK(timeouts == 1);
    CHECK(cleared == 1);
    CHECK(r.stats.acquisitions == 5);
  }
}

}  // namespace lockstep

namespace lockstep {

TEST_CASE("the clear-admits core: clear() drops the holders, whose release then does nothing",
          "[fifo][known-bad]") {
  ClearAdmitsFifoCore core;
  const keyed::RequestId a = core.request("k").id;
  const keyed::RequestId b = core.request("k").id;
  CHECK(core.clear() == std::vector<keyed::FifoRejection>{{.key = "k", .id = b}});
  CHECK_FALSE(core.held("k"));  // a still runs, but the lock forgot it
  const keyed::FifoAdmission c = core.request("k");
  CHECK(c.admit == keyed::FifoAdmit::granted);  // beside a
  CHECK(core.release("k", a) == keyed::kNoRequest);
  CHECK(core.holder("k") == c.id);  // a's release did not end c's hold
  CHECK(core.release("k", c.id) == keyed::kNoRequest);
  CHECK(core.size() == 0);
}

TEST_CASE("fifo-queue catches the lock whose clear() lets a new caller in beside the holder",
          "[fifo][scenario][known-bad]") {
  register_known_bad_adapters();
  for (uint64_t seed : {1, 2, 3}) {
    const RunReport r =
        run_scenario({.scenario = "fifo-queue", .adapter = "bad-fifo-clear-admits", .seed = seed});
    INFO(to_text(r));
    CHECK(r.violated() == Expectation{Invariant::mutual_exclusion});
    CHECK(r.matches_expectation());
  }
  // The trait, not the name: a clear() after every hold has ended admits no one beside anyone.
  const RunReport late = run_scenario(
      {.scenario = "fifo-queue", .adapter = "bad-fifo-clear-admits", .sets = {"clear_at_ms=400"}});
  INFO(to_text(late));
  CHECK(late.violated().count(Invariant::mutual_exclusion) == 0);
  CHECK(late.matches_expectation());
}

}  // namespace lockstep
