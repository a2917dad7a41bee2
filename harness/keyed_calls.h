#pragma once
// The calls of an in-process keyed lock (keyed-rw, fifo), as a client makes them: what the keyed
// scenarios and the sweep's keyed steps are written in. A keyed backend offers them
// (Backend::keyed(): by type, without a cast); services/keyed implements them over its simulated
// lock, recording each call like Client's lock calls (invoke/complete, cs_enter/cs_exit).
#include <cstdint>
#include <optional>
#include <string>

#include "harness/client.h"
#include "lockstep/adapter_traits.h"
#include "lockstep/backend.h"
#include "lockstep/keyed.h"

namespace lockstep {

class KeyedCalls {
 public:
  virtual ~KeyedCalls() = default;

  // keyed_rw or keyed_fifo.
  virtual LockFamily family() const = 0;
  // keyed-rw: acquire (blocking until granted; then the client is inside), stop the world for
  // pause_ms if above 0, work hold_ms, release (leaving the critical section).
  virtual void rw_hold(Client& c, const std::string& key, keyed::RwMode mode, int64_t hold_ms,
                       int64_t pause_ms = 0) = 0;
  // fifo: with_lock(key, work hold_ms, {.max_wait_ms}). Whether the work ran.
  virtual bool fifo_hold(Client& c, const std::string& key, int64_t hold_ms,
                         std::optional<int64_t> max_wait_ms = {}) = 0;
  // fifo: clear(), which rejects every waiter.
  virtual void fifo_clear() = 0;
};

// The backend's keyed calls. Throws std::logic_error for a backend without (a scenario that fits
// keyed adapters only was run on another: a catalogue bug).
KeyedCalls& keyed_calls(Backend& backend);

}  // namespace lockstep
