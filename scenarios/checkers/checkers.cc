#include "scenarios/checkers/checkers.h"

#include <iterator>

// The names of the invariants and check_all; each checker is in a file named after its invariant.

namespace lockstep {

std::string_view to_string(Invariant invariant) {
  switch (invariant) {
    case Invariant::mutual_exclusion: return "mutual_exclusion";
    case Invariant::lease_exclusion: return "lease_exclusion";
    case Invariant::ownership: return "ownership";
    case Invariant::fencing: return "fencing";
    case Invariant::no_lost_update: return "no_lost_update";
    case Invariant::liveness: return "liveness";
    case Invariant::fifo: return "fifo";
    case Invariant::writer_preference: return "writer_preference";
    case Invariant::no_leak: return "no_leak";
    case Invariant::valid_on_return: return "valid_on_return";
  }
  return "?";
}

std::optional<Invariant> invariant_from_string(std::string_view name) {
  for (Invariant invariant : all_invariants()) {
    if (to_string(invariant) == name) return invariant;
  }
  return std::nullopt;
}

const std::vector<Invariant>& all_invariants() {
  static const std::vector<Invariant> kAll = {
      Invariant::mutual_exclusion,
      Invariant::lease_exclusion,
      Invariant::ownership,
      Invariant::fencing,
      Invariant::no_lost_update,
      Invariant::liveness,
      Invariant::fifo,
      Invariant::writer_preference,
      Invariant::no_leak,
      Invariant::valid_on_return,
  };
  return kAll;
}

std::vector<Violation> check_all(const History& history, const CheckOptions& options) {
  using Checker = std::vector<Violation> (*)(const History&, const CheckOptions&);
  static constexpr Checker kCheckers[] = {
      check_mutual_exclusion, check_lease_exclusion, check_ownership, check_fencing,
      check_no_lost_update,   check_liveness,        check_fifo,      check_writer_preference,
      check_no_leak,          check_valid_on_return,
  };
  static_assert(std::size(kCheckers) == 10, "one checker per Invariant, in all_invariants() order");
  std::vector<Violation> all;
  for (Checker checker : kCheckers) {
    std::vector<Violation> found = checker(history, options);
    std::move(found.begin(), found.end(), std::back_inserter(all));
  }
  return all;
}

}  // namespace lockstep
