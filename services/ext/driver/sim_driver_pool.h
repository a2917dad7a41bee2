#pragma once
// SimDriverPool: co-simulated drivers kept warm between the runs of one process, so that a sweep's
// seeds do not each pay for starting a driver and loading its libraries (Node: ~0.1-0.3 s each,
// several hundred times a simulated seed of lockstep's own adapters).
//
// take() hands out an idle driver started with the same program and arguments, or starts one;
// give_back() ends its run with `reset` (services/ext/PROTOCOL.md: it is then as a fresh process started
// with that command) and keeps it. Pooling is on only while a SimDriverPool::Scope lives (sweep,
// matrix, calibrate, benchmarks); outside one, give_back() kills the driver as a single run always
// did, so a `lockstep run` leaves no process behind and a test sees no idle driver.
//
// Invariants:
// - A driver is idle here only after it answered reset; one that failed, was killed or did not
//   answer is killed and reaped, never kept.
// - At most kIdleDriversMax idle drivers; past that the oldest is killed and reaped.
// - The last Scope's end kills and reaps every idle driver, by PID.
// - A forked child (worker_pool.h) never uses or stops its parent's idle drivers: it forgets them
//   (abandon) at its first take or give_back and keeps its own, which die with it
//   (PR_SET_PDEATHSIG).
// - Single-threaded, like the simulator that uses it.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "services/ext/driver/sim_driver.h"

namespace lockstep::ext {

inline constexpr size_t kIdleDriversMax = 32;

class SimDriverPool {
 public:
  // Pooling on from construction to destruction (nested scopes: until the outermost ends).
  class Scope {
   public:
    Scope();
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
  };

  static std::unique_ptr<SimDriverProcess> take(const SimDriverOptions& options);
  static void give_back(std::unique_ptr<SimDriverProcess> driver);
  // Idle drivers now, and drivers take() started in this process so far (for tests).
  static size_t idle_count();
  static uint64_t started_count();
};

}  // namespace lockstep::ext
