#pragma once
// KeepBackendsWarm: while one lives, backends keep what is costly to start between the runs of
// this process instead of starting it anew for every run: each service's WarmScope
// (services/service.h; the ext service keeps its co-simulated drivers, each reset to the state of
// a fresh process between runs). A run's result does not depend on it (the ext service's tests
// check the trace hashes); only its cost does.
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
