#pragma once
// CALIBRATION VARIANT, not a lock to use: the FIFO keyed lock with the seed's clear(), which
// drops the holders' state along with the waiters. A caller that arrives after clear() while a
// holder still runs finds the key idle and runs beside it (the dropped holder's release then
// releases nothing). The suite must catch it as a mutual_exclusion violation (fifo-queue).
// Registered as the known-bad adapter `bad-fifo-clear-admits` (known_bad.cc).
#include "services/keyed/adapter/fifo_core.h"

namespace lockstep {

class ClearAdmitsFifoCore final : public keyed::FifoCore {
 public:
  using FifoCore::FifoCore;

 protected:
  bool clear_keeps_holders() const override { return false; }
};

}  // namespace lockstep
