#pragma once
// KeepBackendsWarm: while one lives, backends keep what is costly to start between the runs of
// this process instead of starting it anew for every run: today the co-simulated ext drivers
// (services/ext/driver/sim_driver_pool.h), each reset to the state of a fresh process between runs. A run's result
// does not depend on it (services/ext/tests/ext_sim_test.cc checks the trace hashes); only its cost does.
// Sweeps, the matrix and calibrate hold one for their whole run; a single `lockstep run` does not,
// so it leaves nothing running. Its end stops, by PID, whatever was kept.
#include <memory>

namespace lockstep {

class KeepBackendsWarm {
 public:
  KeepBackendsWarm();
  ~KeepBackendsWarm();
  KeepBackendsWarm(const KeepBackendsWarm&) = delete;
  KeepBackendsWarm& operator=(const KeepBackendsWarm&) = delete;

 private:
  struct Kept;
  std::unique_ptr<Kept> kept_;
};

}  // namespace lockstep
