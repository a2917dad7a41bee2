#pragma once
// CALIBRATION VARIANT, not a lock to use: keyed-rw with reader preference. A new shared request
// is granted whenever no exclusive holds the key, even while an exclusive waits, so readers pass a
// queued writer and a steady stream of overlapping readers starves it. The suite must catch it
// (writer-starvation through the writer_preference checker; property_tests/keyed_properties.cc).
// Registered as the known-bad adapter `bad-rw-reader-preference` (known_bad.cc).
#include "services/keyed/adapter/rw_core.h"

namespace lockstep {

class ReaderPreferenceRwCore final : public keyed::RwCore {
 protected:
  bool admits_shared_now(const KeyView& key) const override { return !key.exclusive_held; }
};

}  // namespace lockstep
