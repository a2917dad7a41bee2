#include "services/memory/known_bad/known_bad_memory.h"

namespace lockstep {

AdapterResult BadMemoryNoOwnerCheck::create_lock(const LockSpec& spec) {
  AdapterResult result = store_.create_lock(spec);
  if (result.ok()) last_owner_[spec.key] = spec.value;
  return result;
}

// The one thing wrong: the caller's value is ignored; the key's latest owner is released.
AdapterResult BadMemoryNoOwnerCheck::release_lock(const LockSpec& spec) {
  const auto owner = last_owner_.find(spec.key);
  if (owner == last_owner_.end()) return store_.release_lock(spec);
  LockSpec whoever_holds = spec;
  whoever_holds.value = owner->second;
  return store_.release_lock(whoever_holds);
}

}  // namespace lockstep
