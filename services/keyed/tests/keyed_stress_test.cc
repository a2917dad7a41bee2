// Bounded real-thread stress of the keyed locks' thread drivers. No sleeps: threads start together
// at a latch and run a fixed number of iterations. Each key's critical section checks exclusion
// with plain (non-atomic) counters guarded by the lock itself, so ThreadSanitizer
// (-DLOCKSTEP_SANITIZE_THREAD=ON) reports any hole in the locking as a data race; atomics count
// what every thread saw. At the end every key is released, so no per-key state may remain.
#include <catch2/catch.hpp>

#include <atomic>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/random.h"
#include "services/keyed/adapter/fifo_lock.h"
#include "services/keyed/adapter/keyed_rw.h"

namespace lockstep {
namespace {

constexpr int kThreads = 4;
constexpr int kIterations = 3000;
constexpr int kKeys = 3;

struct KeyCell {
  std::atomic<int> readers{0};
  std::atomic<int> writers{0};
  long writes = 0;  // guarded by the exclusive lock of the key: a race here is a lock bug
};

template <class Body>
void run_threads(Body body) {
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      body(t);
    });
  }
  for (std::thread& thread : threads) thread.join();
}

}  // namespace

TEST_CASE("keyed-rw under real threads: writers alone, readers together, nothing left",
          "[keyed-rw][stress]") {
  keyed::KeyedRwMutex mtx;
  KeyCell cells[kKeys];
  std::atomic<long> exclusion_broken = 0;
  std::atomic<long> writes_done = 0;
  run_threads([&](int t) {
    Prng prng(static_cast<uint64_t>(t) + 1);
    for (int i = 0; i < kIterations; ++i) {
      const int k = static_cast<int>(prng.below(kKeys));
      KeyCell& cell = cells[k];
      const std::string key = "key:" + std::to_string(k);
      const uint64_t what = prng.below(4);
      if (what == 0) {  // writer
        mtx.with_lock(key, [&] {
          if (cell.writers.fetch_add(1) != 0 || cell.readers.load() != 0) ++exclusion_broken;
          ++cell.writes;
          cell.writers.fetch_sub(1);
        });
        ++writes_done;
      } else if (what == 1) {  // try-writer
        if (std::optional<keyed::RwHandle> h = mtx.try_lock(key)) {
          if (cell.writers.fetch_add(1) != 0 || cell.readers.load() != 0) ++exclusion_broken;
          ++cell.writes;
          cell.writers.fetch_sub(1);
          h->unlock();
          ++writes_done;
        }
      } else {  // reader (blocking or try)
        std::optional<keyed::RwHandle> h =
            what == 2 ? std::optional<keyed::RwHandle>(mtx.lock_shared(key))
                      : mtx.try_lock_shared(key);
        if (!h) continue;
        cell.readers.fetch_add(1);
        if (cell.writers.load() != 0) ++exclusion_broken;
        const long seen = cell.writes;  // a read under the shared lock
        (void)seen;
        cell.readers.fetch_sub(1);
      }
    }
  });
  CHECK(exclusion_broken == 0);
  long total = 0;
  for (const KeyCell& cell : cells) total += cell.writes;
  CHECK(total == writes_done);
  CHECK(mtx.key_count() == 0);
}

TEST_CASE("fifo under real threads: one caller per key, timeouts and clears, nothing left",
          "[fifo][stress]") {
  keyed::FifoLock lock({.max_waiters_per_key = 2});
  KeyCell cells[kKeys];
  std::atomic<long> exclusion_broken = 0;
  std::atomic<long> ran = 0;
  std::atomic<long> refused = 0;
  run_threads([&](int t) {
    Prng prng(static_cast<uint64_t>(t) + 100);
    for (int i = 0; i < kIterations; ++i) {
      const int k = static_cast<int>(prng.below(kKeys));
      KeyCell& cell = cells[k];
      if (t == 0 && i % 500 == 499) lock.clear();
      keyed::WithLockOptions options;
      if (prng.chance(1, 4)) options.max_wait_ms = 0;  // only if free now
      try {
        lock.with_lock(
            "key:" + std::to_string(k),
            [&] {
              if (cell.writers.fetch_add(1) != 0) ++exclusion_broken;
              ++cell.writes;
              cell.writers.fetch_sub(1);
            },
            options);
        ++ran;
      } catch (const keyed::KeyedLockError&) {
        ++refused;  // LOCK_TIMEOUT, LOCK_CLEARED or LOCK_QUEUE_FULL: fn never ran
      }
    }
  });
  CHECK(exclusion_broken == 0);
  long total = 0;
  for (const KeyCell& cell : cells) total += cell.writes;
  CHECK(total == ran);
  CHECK(ran + refused == static_cast<long>(kThreads) * kIterations);
  CHECK(lock.size() == 0);
}

}  // namespace lockstep
