#pragma once
// CALIBRATION VARIANT, not a lock to use: keyed-rw whose last release forgets to wake a queued
// writer. When the last holder of a key leaves and an exclusive request heads the queue, the
// release does not serve the queue: the writer (and everyone queued behind it) stays parked with
// nothing left to wake it. The suite must catch it as a liveness violation (a `stuck` client:
// writer-starvation, and sweeps of keyed-rw). Registered as the known-bad adapter
// `bad-rw-lost-wakeup` (known_bad.cc).
#include "services/keyed/adapter/rw_core.h"

namespace lockstep {

class LostWakeupRwCore final : public keyed::RwCore {
 protected:
  bool serves_queue_after_release(const KeyView& key) const override {
    const bool last_holder_left = key.shared_holders == 0 && !key.exclusive_held;
    return !(last_holder_left && key.exclusive_first);
  }
};

}  // namespace lockstep
