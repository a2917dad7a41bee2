#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "scenarios/checkers/checker_support.h"

// valid_on_return: see checkers.h for the definition this judges.

namespace lockstep {

namespace {

using namespace checker_support;

// The servers' leases of one owner (a lock value): per server, when its lease ends (true time).
struct OwnerLeases {
  std::map<std::string, TimeUs, std::less<>> end_by_server;
  size_t last_event = kNoEvent;  // the latest lease event, shown with a violation

  int live_at(TimeUs t_us) const {
    int live = 0;
    for (const auto& [server, end_us] : end_by_server) live += end_us > t_us ? 1 : 0;
    return live;
  }
};

bool reports_a_lease(const HistoryEvent& e) {
  return e.kind == EventKind::complete && e.outcome == Outcome::ok &&
         (e.op == Op::acquire || e.op == Op::extend) && !e.value.empty();
}

void see_lease_event(std::map<std::string, OwnerLeases, std::less<>>& owners,
                     const HistoryEvent& e) {
  OwnerLeases& owner = owners[e.key + '\n' + e.value];
  owner.last_event = e.index;
  if (e.kind == EventKind::revoke) {
    owner.end_by_server[e.server] = e.time_us;
  } else {
    owner.end_by_server[e.server] = e.time_us + e.ttl_us;
  }
}

}  // namespace

std::vector<Violation> check_valid_on_return(const History& history, const CheckOptions& options) {
  std::vector<Violation> found;
  std::map<std::string, OwnerLeases, std::less<>> owners;  // "key\nvalue" -> its servers' leases
  const int quorum = std::max(history.meta.quorum, 1);
  for (const HistoryEvent& e : history.events()) {
    if (found.size() >= options.per_invariant_max) break;
    if (e.kind == EventKind::grant || e.kind == EventKind::extend || e.kind == EventKind::revoke) {
      see_lease_event(owners, e);
      continue;
    }
    if (!reports_a_lease(e)) continue;
    const std::string_view what = e.op == Op::acquire ? "acquire" : "extend";
    if (e.local_valid_until_us != 0 && e.local_valid_until_us <= e.local_now_us) {
      found.push_back(make_violation(
          Invariant::valid_on_return, e.time_us, e.key, {e.client}, {e.index},
          fmt::format("{}'s {} of key {} returned at {}us reporting a lease valid until {}us ago "
                      "by its own clock",
                      client_name(e.client), what, e.key, e.time_us,
                      e.local_now_us - e.local_valid_until_us)));
      continue;
    }
    const auto it = owners.find(e.key + '\n' + e.value);
    if (it == owners.end()) continue;  // the servers recorded no lease for it: nothing to compare
    const int live = it->second.live_at(e.time_us);
    if (live >= quorum) continue;
    found.push_back(make_violation(
        Invariant::valid_on_return, e.time_us, e.key, {e.client}, {it->second.last_event, e.index},
        fmt::format("{}'s {} of key {} returned at {}us, when only {} server(s) still held its "
                    "lease (value {}); a lease needs {}",
                    client_name(e.client), what, e.key, e.time_us, live, short_value(e.value),
                    quorum)));
  }
  return found;
}

}  // namespace lockstep
