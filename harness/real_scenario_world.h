#pragma once
// The real world as a ScenarioWorld: each client process is a thread with the machine's clock,
// faults run on a fault thread at their times, and true time is the steady clock since run()
// began. Runs are not reproducible (the trace hash identifies nothing here), but they judge real
// servers with the same scenarios and checkers.
//
// What a thread cannot do: be stopped or killed from outside. pause() and crash() of another
// client, and client clock drift, throw WorldUnsupported; a client pausing or crashing itself
// works (the thread sleeps, or unwinds with ClientKilled).
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "adapters/core/background.h"
#include "harness/scenario_world.h"
#include "lockstep/random.h"
#include "sim/trace.h"

namespace lockstep {

// A real-world run takes real time: every sleep of the world (a client's clock, a pause, the
// fault schedule) ends at this bound, where the run stops as an error (exit 4), so an option in
// its range (pause_ms=86400000) cannot hold lockstep for a day. `--help` states it.
inline constexpr TimeUs kRealRunTimeMaxUs = 50'000'000;

struct RealWorldOptions {
  uint64_t seed = 1;
  TimeUs run_time_max_us = kRealRunTimeMaxUs;
};

struct RealRunResult {
  bool complete = true;
  std::string
      message;  // what went wrong: a client's escaped exception, a fault that failed, the bound
  TimeUs time_us = 0;
  bool protocol_broken = false;  // a client's process broke its protocol (ClientProtocolBroken)
};

class RealScenarioWorld final : public ScenarioWorld {
 public:
  explicit RealScenarioWorld(RealWorldOptions options);
  ~RealScenarioWorld() override;

  WorldKind kind() const override { return WorldKind::real; }
  TimeUs now_us() override;
  size_t add_trace_line(const sim::TraceLine& line) override;
  int add_client_node(const std::string& name, int64_t clock_offset_us, int64_t drift_ppm) override;
  Clock& clock(int node) override;
  TimeUs true_time_at_monotonic(int node, int64_t monotonic_us) override;
  // Threads: a pause of the client (its own thread sleeping) does not stop them, unlike a
  // process's stop-the-world; scenarios that pause an auto-extending holder are sim-only.
  Background& background(int) override { return threads_; }
  int64_t draw_between(int64_t lo, int64_t hi) override;
  uint64_t draw_u64() override;
  void spawn(int node, const std::string& name, std::function<void()> body,
             TimeUs start_us) override;
  void at(TimeUs t_us, std::function<void()> fn) override;
  void pause(int node, TimeUs duration_us) override;
  void crash(int node) override;
  int current_node() override;
  // pause() of that node also stops its processes for the pause; crash() kills them first.
  void attach_client_process(int node, ClientProcessHooks hooks) override;

  // Starts the clients and the fault thread and waits for all of them.
  RealRunResult run();
  const sim::Trace& trace() const { return trace_; }

 private:
  class BoundedClock;
  struct Node {
    std::string name;
    std::unique_ptr<Clock> clock;
  };
  struct Process {
    int node = -1;
    std::string name;
    std::function<void()> body;
    TimeUs start_us = 0;
  };
  void run_process(const Process& process);
  void run_faults();
  void fail(const std::string& message);
  void sleep_until(TimeUs t_us);
  // Sleeps duration_us, or until the run's bound if that comes first: false then.
  bool sleep_within_bound(TimeUs duration_us);

  RealWorldOptions options_;
  ThreadBackground threads_;
  std::mutex mutex_;  // guards trace_, prng_, failure_, protocol_broken_
  sim::Trace trace_;
  Prng prng_;
  std::vector<Node> nodes_;
  std::vector<Process> processes_;
  std::multimap<TimeUs, std::function<void()>> faults_;
  std::multimap<int, ClientProcessHooks> client_processes_;  // by node; written before run() only
  int64_t origin_ns_ = 0;  // steady clock at run() start; 0 before
  std::string failure_;
  bool protocol_broken_ = false;  // a client threw ClientProtocolBroken (failure_ is its message)
};

}  // namespace lockstep
