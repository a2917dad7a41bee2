#pragma once
// The in-process keyed locks as simulated backends (lockstep's `keyed-rw` and `fifo`, their
// calibration variants, and a user's keyed state machine registered with keyed_rw_adapter or
// keyed_fifo_adapter, below), and the client steps keyed scenarios are written in.
//
// A KeyedSimBackend owns one simulator driver (services/keyed/backend/keyed_sim.h) shared by every
// client, as an in-process lock is shared by the threads of a process. It marks the history as
// keyed (so fifo, writer_preference and no_leak are judged) and records a key_state event after
// every operation that touched a key. These locks are not TTL leases: the lease scenarios of the
// catalogue do not apply to them (they fit lease locks only: catalogue.h). adapter_for()
// still hands out a LockAdapter, because every simulated client gets one: a lease-shaped view of
// the lock (create = exclusive try-lock, release = unlock if this owner holds it, extend and
// is_valid = whether this owner still holds it; a hold never expires; no fencing tokens).
//
// KeyedSteps: every step is recorded like Client's lock steps: invoke/complete with op acquire or
// release (`shared` set on a reader's invoke and complete), cs_enter/cs_exit (shared for readers).
// Expected outcomes are values: a failed try is `contended`, LOCK_TIMEOUT is `fail`, the other
// KeyedLockErrors are `error` with the code in the detail.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "harness/backend.h"
#include "harness/client.h"
#include "harness/keyed_calls.h"
#include "lockstep/keyed.h"
#include "services/keyed/adapter/rw_core.h"
#include "services/keyed/backend/keyed_sim.h"

namespace lockstep {

class KeyedSimBackend;

class KeyedSteps final : public KeyedCalls {
 public:
  KeyedSteps(Recorder& recorder, KeyedSimBackend& backend)
      : recorder_(recorder), backend_(backend) {}

  LockFamily family() const override;
  void rw_hold(Client& c, const std::string& key, keyed::RwMode mode, int64_t hold_ms,
               int64_t pause_ms = 0) override;
  // keyed-rw: blocks until granted; then the client is inside.
  keyed::RwHandle rw_acquire(Client& c, const std::string& key, keyed::RwMode mode);
  // keyed-rw: granted at once or nullopt (recorded as contended).
  std::optional<keyed::RwHandle> rw_try_acquire(Client& c, const std::string& key,
                                                keyed::RwMode mode);
  // keyed-rw: leaves the critical section and unlocks.
  void rw_release(Client& c, keyed::RwHandle& handle);
  bool fifo_hold(Client& c, const std::string& key, int64_t hold_ms,
                 std::optional<int64_t> max_wait_ms = {}) override;
  void fifo_clear() override;
  // fifo: clear() turned away the waiter on `node`: its acquire ends now, in the history.
  void fifo_refused(int node, std::string_view key);

 private:
  void record(EventKind kind, const Client& c, const std::string& key, Op op,
              Outcome outcome = Outcome::none, bool shared = false, std::string detail = {});

  Recorder& recorder_;
  KeyedSimBackend& backend_;
  std::map<int, const Client*> fifo_waiting_;  // node -> the client waiting in fifo_hold there
  std::set<int> fifo_refusals_recorded_;       // nodes whose refusal is in the history already
};

class KeyedSimBackend final : public Backend {
 public:
  // A keyed RW lock over `core` (RwCore, a calibration variant, or a user's machine), named
  // lock_name in the messages of its contract's guard (machine_guard.h).
  KeyedSimBackend(BackendEnv& env, std::unique_ptr<keyed::RwStateMachine> core,
                  std::string lock_name);
  // A keyed FIFO lock over `core` (FifoCore, a calibration variant, or a user's machine).
  KeyedSimBackend(BackendEnv& env, std::unique_ptr<keyed::FifoStateMachine> core,
                  std::string lock_name);
  // Unwinds the fibers of the clients it served while the lock still exists (see keyed_sim.h).
  ~KeyedSimBackend() override;

  LockAdapter& adapter_for(int client, int node) override;
  int server_count() const override { return 0; }        // the lock lives in the clients' process
  bool records_leases() const override { return true; }  // it grants no leases: none to derive
  KeyedCalls* keyed() override { return &steps_; }

  SimKeyedRw* rw() { return rw_.get(); }
  SimFifoLock* fifo() { return fifo_.get(); }
  KeyedSteps& steps() { return steps_; }
  // Keys with per-key state right now.
  size_t key_count() const;

 private:
  class LeaseView;
  KeyStateHook key_state_hook();

  sim::World& world_;
  Recorder& recorder_;
  std::unique_ptr<SimKeyedRw> rw_;
  std::unique_ptr<SimFifoLock> fifo_;
  KeyedSteps steps_;
  std::unique_ptr<LeaseView> view_;
  std::vector<int> client_nodes_;
};

// A keyed RW lock's simulated backend over `core` (null: lockstep's RwCore).
std::unique_ptr<Backend> make_keyed_rw_sim_backend(
    BackendEnv& env, std::unique_ptr<keyed::RwStateMachine> core = nullptr,
    std::string lock_name = "keyed-rw");
// A keyed FIFO lock's simulated backend (empty factory: lockstep's FifoCore).
std::unique_ptr<Backend> make_fifo_sim_backend(BackendEnv& env,
                                               const FifoMachineFactory& make_core = {},
                                               std::string lock_name = "fifo");

}  // namespace lockstep
