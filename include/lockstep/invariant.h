#pragma once
// The invariants lockstep's checkers judge (checkers/checkers.h says what each means): what a
// lock's traits expect a scenario to break, and what a known-bad variant breaks, are named by
// these.
#include <optional>
#include <string_view>
#include <vector>

namespace lockstep {

enum class Invariant {
  mutual_exclusion,
  lease_exclusion,
  ownership,
  fencing,
  no_lost_update,
  liveness,
  fifo,
  writer_preference,
  no_leak,
  valid_on_return,
  validity_within_lease,
  error_not_applied,
};
std::string_view to_string(Invariant invariant);
std::optional<Invariant> invariant_from_string(std::string_view name);
const std::vector<Invariant>& all_invariants();

}  // namespace lockstep
