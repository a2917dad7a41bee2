#pragma once
// ScenarioWorld: what scenarios and their clients need from a world, so the same scenario runs in
// the simulator (SimScenarioWorld: fibers, virtual time, a pure function of the seed) and against
// real servers (RealScenarioWorld: threads, the machine's clocks, real faults).
//
// Nodes here are client processes; servers belong to the backend, which also carries the faults
// aimed at them (backend.h). True time is microseconds since the run began, read only for the
// history. A fault that a world cannot produce (pausing another client from outside, in the real
// world) throws WorldUnsupported, so a scenario that needs it is refused rather than run wrong.
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "base/time.h"
#include "lockstep/background.h"
#include "lockstep/clock.h"
#include "lockstep/world_kind.h"
#include "sim/trace.h"

namespace lockstep {

class WorldUnsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown out of a client when what runs its lock failed, not the lock: a co-simulated driver
// (services/ext/backend/ext_sim.h) died, hung or wrote nonsense. Never a lock outcome: a simulated
// run ends there as an error carrying the message (the real world ends so on any escaping error).
class ClientProcessFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A client's process broke the protocol it is spoken to over (a driver's malformed line, a death,
// a real-time hang; services/ext/PROTOCOL.md, "Rules a driver keeps"): its answers say nothing
// about its lock, so the run ends as an error with nothing judged (no violations), and the message
// names the rule. A ClientProcessFailed that is not one (a library that never answers in simulated
// time) still has what happened before it judged.
class ClientProtocolBroken : public ClientProcessFailed {
 public:
  using ClientProcessFailed::ClientProcessFailed;
};

// Thrown inside a client whose process a fault killed; the client's top level swallows it.
// Not a std::exception, so code that catches std::exception lets it pass.
struct ClientKilled {};

class ScenarioWorld {
 public:
  virtual ~ScenarioWorld() = default;

  virtual WorldKind kind() const = 0;
  virtual TimeUs now_us() = 0;
  // Appends a trace line (true time first) and returns its index (sim/trace.h: a line is hashed
  // as its binary record and formatted only when kept).
  virtual size_t add_trace_line(const sim::TraceLine& line) = 0;
  size_t trace_line(std::string_view text) { return add_trace_line(sim::TextLine(text)); }
  // Whether the trace reads a line at all (sim/trace.h); false: trace_line("") will do.
  virtual bool trace_wants_text() const { return true; }
  template <typename... Args>
  size_t trace_linef(fmt::format_string<Args...> format, const Args&... args) {
    return add_trace_line(sim::FormattedLine<Args...>(format, args...));
  }

  // A client process node with its own clock (offset and drift only where the world can).
  virtual int add_client_node(const std::string& name, int64_t clock_offset_us = 0,
                              int64_t drift_ppm = 0) = 0;
  virtual Clock& clock(int node) = 0;
  // The true time at which node's monotonic clock reads monotonic_us, at the rate it runs now
  // (a later change of drift is not foreseen). For the history: when a validity the lock reported
  // on its client's clock ends in true time.
  virtual TimeUs true_time_at_monotonic(int node, int64_t monotonic_us) = 0;
  // Where a client's background work runs (a lock's auto-extension): a fiber of the node in the
  // simulator, so the node's pauses and crashes stop it too; a thread in the real world.
  virtual Background& background(int node) = 0;
  // Deterministic draws from the run's seed (jitter, client seeds).
  virtual int64_t draw_between(int64_t lo, int64_t hi) = 0;
  virtual uint64_t draw_u64() = 0;

  // Runs body as the node's process from true time start_us.
  virtual void spawn(int node, const std::string& name, std::function<void()> body,
                     TimeUs start_us) = 0;
  // Runs fn at true time t_us (faults).
  virtual void at(TimeUs t_us, std::function<void()> fn) = 0;
  // Stop-the-world of a client for duration_us. From the client's own code it returns when the
  // pause is over; from outside (a fault) only where the world supports it.
  virtual void pause(int node, TimeUs duration_us) = 0;
  // Kills a client. From its own code it throws ClientKilled; from outside only where supported.
  virtual void crash(int node) = 0;
  // The client node whose code is running now, or -1.
  virtual int current_node() = 0;

  // A client's parts outside this process (an external lock library's driver, services/ext/PROTOCOL.md):
  // what a pause or crash of the client must also do to them, so either stays a stop-the-world or
  // a death of the whole client. Attach before the run starts. Only the real world has them.
  struct ClientProcessHooks {
    std::function<void()> stop;    // returns once the process is stopped
    std::function<void()> resume;  // returns once it runs again
    std::function<void()> kill;    // returns once it is dead
  };
  virtual void attach_client_process(int node, ClientProcessHooks hooks) {
    (void)node;
    (void)hooks;
    throw WorldUnsupported("only the real world runs clients in processes of their own");
  }
};

}  // namespace lockstep
