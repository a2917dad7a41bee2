#pragma once
// The in-memory lease store as a backend.
#include <functional>
#include <memory>

#include "services/memory/adapter/memory_adapter.h"

#include "harness/backend.h"
#include "harness/client_seams.h"

namespace lockstep {

// The in-memory store (one store shared by every client). In the sim world it sits on a server
// node of its own, reached without latency, so its clock can drift; in the real world it is a
// thread-safe store on the machine's clock. `wrap`, when given, builds the adapter the clients use
// around the store (a known-bad variant); the store is the production MemoryAdapter either way.
// `wrap_clock`, when given, builds the clock the store reads around its node's real one (a
// known-bad variant that reads the wall clock for durations).
using MemoryAdapterWrapper = std::function<std::unique_ptr<LockAdapter>(MemoryAdapter& store)>;
using StoreClockWrapper = std::function<std::unique_ptr<Clock>(Clock& node_clock)>;
std::unique_ptr<Backend> make_memory_backend(BackendEnv& env, const MemoryAdapterWrapper& wrap = {},
                                             const StoreClockWrapper& wrap_clock = {});
// A user's lock over the store that needs its client's clock or random source
// (harness/client_seams.h): one adapter per client, each built with that client's seams.
using MemoryClientWrapper =
    std::function<std::unique_ptr<LockAdapter>(MemoryAdapter& store, ClientSeams seams)>;
std::unique_ptr<Backend> make_memory_backend(BackendEnv& env, MemoryClientWrapper wrap_client);

// The in-memory lock: owner-checked, monotonic tokens. Its store sits on a server node of its own,
// reached without a network: only its clock drifts.
// Its store expires leases by its monotonic clock: a jump of the store's wall clock is nothing to
// it (envelope.server_wall_clock).
inline constexpr AdapterTraits kMemoryTraits{
    .servers = ServerLayout::in_process,
    .sim_faults = {.server_clock = true, .server_clock_jump = true},
    .envelope = {.server_wall_clock = true},
    .tokens = TokenKind::monotonic,
    .server_expiry = ExpiryClock::monotonic};

}  // namespace lockstep
