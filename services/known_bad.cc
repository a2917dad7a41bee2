#include "services/known_bad.h"

#include <utility>
#include <vector>

#include "lockstep/registry.h"

namespace lockstep {

// Each service's known-bad locks (services/NAME/known_bad/NAME_known_bad.h), declared from the
// list: copies of its production ones with one thing wrong.
#define LOCKSTEP_SERVICE(name)
#define LOCKSTEP_SERVICE_WITH_KNOWN_BAD(name) std::vector<AdapterEntry> name##_known_bad();
#include "services/services.inc"
#undef LOCKSTEP_SERVICE
#undef LOCKSTEP_SERVICE_WITH_KNOWN_BAD

void register_known_bad_adapters() {
  static bool registered = false;
  if (std::exchange(registered, true)) return;
  std::vector<AdapterEntry> all;
#define LOCKSTEP_SERVICE(name)
#define LOCKSTEP_SERVICE_WITH_KNOWN_BAD(name) \
  for (AdapterEntry & entry : name##_known_bad()) all.push_back(std::move(entry));
#include "services/services.inc"
#undef LOCKSTEP_SERVICE
#undef LOCKSTEP_SERVICE_WITH_KNOWN_BAD
  for (AdapterEntry& entry : all) register_adapter(std::move(entry));
}

}  // namespace lockstep
