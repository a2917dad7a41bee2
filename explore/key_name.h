#pragma once
// The name of a generated workload's key number `key`: "k0", "k1", ... Random sweeps and the
// property tests' workloads name keys alike, so a key in a report reads the same in both.
#include <string>

namespace lockstep {

inline std::string key_name(int key) {
  std::string name = std::to_string(key);
  name.insert(name.begin(), 'k');
  return name;
}

}  // namespace lockstep
