#include "checkers/checkers.h"

#include "checkers/request_order.h"

// writer_preference: see checkers.h for the definition this judges.

namespace lockstep {

using namespace request_order;

std::vector<Violation> check_writer_preference(const History& history,
                                               const CheckOptions& options) {
  if (!history.meta.keyed) return {};
  std::vector<Violation> found;
  sweep_grants(
      history, [&](const HistoryEvent& grant, const HistoryEvent& invoke, const KeyRequests& key) {
        if (!invoke.shared || key.exclusive_by_invoke.empty()) return;
        const auto& [earliest, pending] = *key.exclusive_by_invoke.begin();
        if (earliest < invoke.index) {
          found.push_back(
              overtake(history, Invariant::writer_preference, grant, invoke, earliest, pending));
        }
      });
  cap(found, options);
  return found;
}

}  // namespace lockstep
