#include "scenarios/checkers/checkers.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "base/check.h"
#include "scenarios/checkers/checker_support.h"

// ownership: see checkers.h for the definition this judges.

namespace lockstep {

namespace {

using namespace checker_support;

struct OwnershipBreach {
  size_t grant = kNoEvent;
  size_t by = kNoEvent;  // the revoke or extend
};

Violation ownership_violation(const History& history, const OwnershipBreach& breach) {
  const HistoryEvent& grant = history[breach.grant];
  const HistoryEvent& by = history[breach.by];
  const char* verb = by.kind == EventKind::revoke ? "removed" : "extended";
  std::string detail = fmt::format(
      "{} {} the lease of {} (value {}) on key {} at server {} at {}us", client_name(by.client),
      verb, client_name(grant.client), short_value(by.value), by.key, by.server, by.time_us);
  return make_violation(Invariant::ownership, by.time_us, by.key, {grant.client, by.client},
                        {breach.grant, breach.by}, std::move(detail));
}

}  // namespace

std::vector<Violation> check_ownership(const History& history, const CheckOptions& options) {
  // key -> (server, value) -> the grant that made the lease.
  PerKey<std::unordered_map<uint64_t, size_t>> grants;
  std::vector<Violation> found;
  for (const HistoryEvent& e : history.events()) {
    if (found.size() >= options.per_invariant_max) break;  // index order is time order
    if (e.kind == EventKind::grant) grants[e][server_value_id(e)] = e.index;
    if ((e.kind != EventKind::revoke && e.kind != EventKind::extend) || e.client < 0) continue;
    const auto& granted = grants[e];
    auto grant = granted.find(server_value_id(e));
    if (grant == granted.end()) continue;  // owner unknown
    const int owner = history[grant->second].client;
    if (owner >= 0 && owner != e.client) {
      found.push_back(ownership_violation(history, OwnershipBreach{grant->second, e.index}));
    }
  }
  return found;
}

}  // namespace lockstep
