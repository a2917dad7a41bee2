#pragma once
// A keyed lock of one's own (a keyed reader/writer mutex, a keyed FIFO lock), written as a state
// machine (lockstep/keyed_state_machine.h), as a registry entry: register_adapter(
// keyed_rw_adapter({...})) before cli_main, and every keyed scenario, sweep, matrix and calibrate
// runs it in the simulator, judged by the keyed checkers (fifo, writer_preference, no_leak beside
// mutual_exclusion).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/adapter_traits.h"
#include "lockstep/keyed_state_machine.h"
#include "lockstep/options.h"
#include "lockstep/registry.h"

namespace lockstep {

// A keyed FIFO machine with the limits of a run's options (fifo_backend_options).
using FifoMachineFactory =
    std::function<std::unique_ptr<keyed::FifoStateMachine>(keyed::FifoLimits limits)>;
std::vector<OptionSpec> fifo_backend_options();

// A keyed lock of one's own as a registry entry: register_adapter(keyed_rw_adapter({...})) before
// cli_main, and every keyed-rw scenario, sweep, matrix and calibrate runs it in the simulator.
// What it claims decides what the scenarios expect of it (AdapterTraits); the checkers judge the
// rest from what it does.
struct KeyedRwLockEntry {
  std::string name{};
  std::string description{};
  // Writer preference: a shared request never passes an earlier exclusive one that waits. Claim it
  // or not: writer-starvation expects a lock without it to starve its writer.
  bool writers_first = true;
  std::function<std::unique_ptr<keyed::RwStateMachine>()> make_machine{};
  // A calibration variant (a copy of `sibling` with one bug, which `calibrate` must catch): the
  // invariant a sweep must find broken. Empty: a lock that claims to be correct.
  std::string breaks{};
  std::string sibling{};
};
// Throws std::invalid_argument for an entry without make_machine. What make_machine throws, or a
// null machine, ends each run as an error before it starts (exit 4).
AdapterEntry keyed_rw_adapter(KeyedRwLockEntry lock);

struct KeyedFifoLockEntry {
  std::string name{};
  std::string description{};
  // clear() keeps the running holders (no caller after it runs beside one).
  bool clear_keeps_exclusion = true;
  FifoMachineFactory make_machine{};  // given the limits of the run's options (--set)
  std::string breaks{};               // as for KeyedRwLockEntry
  std::string sibling{};
};
AdapterEntry keyed_fifo_adapter(KeyedFifoLockEntry lock);

// The in-process keyed locks: no servers, no clocks, no network.
inline constexpr AdapterTraits kKeyedRwTraits{.family = LockFamily::keyed_rw,
                                              .servers = ServerLayout::in_process};
inline constexpr AdapterTraits kFifoTraits{.family = LockFamily::keyed_fifo,
                                           .servers = ServerLayout::in_process};

}  // namespace lockstep
