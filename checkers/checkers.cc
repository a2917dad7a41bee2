#include "checkers/checkers.h"

#include <array>
#include <iterator>
#include <memory>

#include "base/check.h"
#include "checkers/checker_pass.h"

// The names of the invariants and check_all; each checker is in a file named after its invariant.

namespace lockstep {

using namespace checker_support;

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
    case Invariant::validity_within_lease: return "validity_within_lease";
    case Invariant::error_not_applied: return "error_not_applied";
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
      Invariant::validity_within_lease,
      Invariant::error_not_applied,
  };
  return kAll;
}

void checker_support::run_passes(const History& history, const std::vector<CheckerPass*>& passes) {
  // Each event goes straight to the passes that read its kind (two or three of the seven).
  std::array<std::vector<CheckerPass*>, kEventKindsAll.size()> readers;
  for (EventKind kind : kEventKindsAll) {
    for (CheckerPass* pass : passes) {
      if (pass->reads(kind)) readers[static_cast<size_t>(kind)].push_back(pass);
    }
  }
  for (const HistoryEvent& e : history.events()) {
    for (CheckerPass* pass : readers[static_cast<size_t>(e.kind)]) {
      if (!pass->done()) pass->see(e);
    }
  }
}

// The checkers that walk the history event by event share one walk; the keyed-lock ones (fifo,
// writer_preference, no_leak: several walks each, over keyed histories only) go on their own.
std::vector<Violation> check_all(const History& history, const CheckOptions& options) {
  using MakePass = std::unique_ptr<CheckerPass> (*)(const History&, const CheckOptions&);
  using Check = std::vector<Violation> (*)(const History&, const CheckOptions&);
  struct Checker {
    MakePass walking = nullptr;  // one of the two
    Check alone = nullptr;
  };
  static constexpr Checker kCheckers[] = {
      {.walking = mutual_exclusion_pass},
      {.walking = lease_exclusion_pass},
      {.walking = ownership_pass},
      {.walking = fencing_pass},
      {.walking = no_lost_update_pass},
      {.walking = liveness_pass},
      {.alone = check_fifo},
      {.alone = check_writer_preference},
      {.alone = check_no_leak},
      {.walking = valid_on_return_pass},
      {.walking = validity_within_lease_pass},
      {.walking = error_not_applied_pass},
  };
  static_assert(std::size(kCheckers) == 12, "one checker per Invariant, in all_invariants() order");
  std::vector<std::unique_ptr<CheckerPass>> passes;  // by kCheckers' index; null for `alone`
  std::vector<CheckerPass*> walking;
  for (const Checker& checker : kCheckers) {
    // At run time: a function's address is not a constant expression under the sanitizers.
    LOCKSTEP_CHECK((checker.walking == nullptr) != (checker.alone == nullptr),
                   "each checker walks with the others or alone, not both");
    passes.push_back(checker.walking != nullptr ? checker.walking(history, options) : nullptr);
    if (passes.back() != nullptr) walking.push_back(passes.back().get());
  }
  run_passes(history, walking);
  std::vector<Violation> all;
  for (size_t i = 0; i < std::size(kCheckers); ++i) {
    std::vector<Violation> found =
        passes[i] != nullptr ? passes[i]->finish() : kCheckers[i].alone(history, options);
    std::move(found.begin(), found.end(), std::back_inserter(all));
  }
  return all;
}

}  // namespace lockstep
