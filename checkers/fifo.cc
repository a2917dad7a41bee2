#include "checkers/checkers.h"

#include "checkers/request_order.h"

// fifo: see checkers.h for the definition this judges.

namespace lockstep {

using namespace request_order;

std::vector<Violation> check_fifo(const History& history, const CheckOptions& options) {
  if (!history.meta.keyed) return {};
  std::vector<Violation> found;
  sweep_grants(
      history, [&](const HistoryEvent& grant, const HistoryEvent& invoke, const KeyRequests& key) {
        if (invoke.shared || key.by_invoke.empty()) return;
        const auto& [earliest, pending] = *key.by_invoke.begin();
        if (earliest < invoke.index)
          found.push_back(overtake(history, Invariant::fifo, grant, invoke, earliest, pending));
      });
  cap(found, options);
  return found;
}

}  // namespace lockstep
