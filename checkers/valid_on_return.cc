#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checkers/checker_pass.h"
#include "checkers/checker_support.h"

// valid_on_return: see checkers.h for the definition this judges.

namespace lockstep {

namespace {

using namespace checker_support;

// The servers' leases of one owner (a lock value): per server, when its lease ends (true time).
// A few servers at most (a quorum's nodes): a vector beats a map.
struct OwnerLeases {
  std::vector<std::pair<uint32_t, TimeUs>> end_by_server;  // (server_id, end)
  size_t last_event = kNoEvent;  // the latest lease event, shown with a violation

  void set_end(uint32_t server, TimeUs end_us) {
    for (auto& [seen, seen_end_us] : end_by_server) {
      if (seen == server) {
        seen_end_us = end_us;
        return;
      }
    }
    end_by_server.emplace_back(server, end_us);
  }
  int live_at(TimeUs t_us) const {
    int live = 0;
    for (const auto& [server, end_us] : end_by_server) live += end_us > t_us ? 1 : 0;
    return live;
  }
};

// (key, value) -> its servers' leases. A completion names no server: it finds its owner's.
using Owners = LeaseTable<OwnerLeases, LeaseScope::per_owner>;
// value -> its servers' leases on any key: for a lock that stores its value under a key of its own
// naming ("mutex:KEY"), which has no lease under the caller's key at all.
using ValueOwners = LeaseTable<OwnerLeases, LeaseScope::per_value>;

bool reports_a_lease(const HistoryEvent& e) {
  return e.kind == EventKind::complete && e.outcome == Outcome::ok &&
         (e.op == Op::acquire || e.op == Op::extend) && !e.value.empty();
}

template <typename Table>
void see_lease_event(Table& owners, const HistoryEvent& e) {
  OwnerLeases& owner = owners[e];
  owner.last_event = e.index;
  owner.set_end(e.server_id, e.kind == EventKind::revoke ? e.time_us : e.time_us + e.ttl_us);
}

class ValidOnReturnPass final : public CheckerPass {
 public:
  ValidOnReturnPass(const History& history, size_t max)
      : CheckerPass({EventKind::grant, EventKind::extend, EventKind::revoke, EventKind::complete}),
        quorum_(std::max(history.meta.quorum, 1)),
        max_(max) {
    set_done(max_ == 0);
  }

  void see(const HistoryEvent& e) override {
    judge(e);
    set_done(found_.size() >= max_);  // index order is time order: the earliest are found
  }

  std::vector<Violation> finish() override { return std::move(found_); }

 private:
  void judge(const HistoryEvent& e) {
    if (e.kind == EventKind::grant || e.kind == EventKind::extend || e.kind == EventKind::revoke) {
      see_lease_event(owners_, e);
      see_lease_event(by_value_, e);
      return;
    }
    if (!reports_a_lease(e)) return;
    const std::string_view what = e.op == Op::acquire ? "acquire" : "extend";
    if (e.local_valid_until_us != 0 && !e.validity_assumed &&
        e.local_valid_until_us <= e.local_now_us) {
      found_.push_back(make_violation(
          Invariant::valid_on_return, e.time_us, e.key, {e.client}, {e.index},
          fmt::format("{}'s {} of key {} returned at {}us reporting a lease valid until {}us ago "
                      "by its own clock",
                      client_name(e.client), what, e.key, e.time_us,
                      e.local_now_us - e.local_valid_until_us)));
      return;
    }
    const OwnerLeases* leases = owners_.find(e);
    if (leases == nullptr) leases = by_value_.find(e);  // its value under a key of its own
    if (leases == nullptr) return;  // the servers recorded no lease for it: nothing to compare
    const int live = leases->live_at(e.time_us);
    if (live >= quorum_) return;
    found_.push_back(make_violation(
        Invariant::valid_on_return, e.time_us, e.key, {e.client}, {leases->last_event, e.index},
        fmt::format("{}'s {} of key {} returned at {}us, when only {} server(s) still held its "
                    "lease (value {}); a lease needs {}",
                    client_name(e.client), what, e.key, e.time_us, live, short_value(e.value),
                    quorum_)));
  }

  int quorum_;
  size_t max_;
  Owners owners_;
  ValueOwners by_value_;
  std::vector<Violation> found_;
};

}  // namespace

std::unique_ptr<CheckerPass> checker_support::valid_on_return_pass(const History& history,
                                                                   const CheckOptions& options) {
  return std::make_unique<ValidOnReturnPass>(history, options.per_invariant_max);
}

std::vector<Violation> check_valid_on_return(const History& history, const CheckOptions& options) {
  return run_alone(history, valid_on_return_pass(history, options));
}

}  // namespace lockstep
