#include <algorithm>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "checkers/checker_pass.h"
#include "checkers/checker_support.h"
#include "checkers/lease_links.h"

// validity_within_lease: see checkers.h for the definition this judges.

namespace lockstep {

namespace {

using namespace checker_support;

// When one server held one owner's lease: [start_us, end_us), end moved by extends, cut by a
// revoke.
struct Held {
  TimeUs start_us = 0;
  TimeUs end_us = 0;
  size_t last_event = kNoEvent;  // the fact that set its end, shown with a violation
};

// One server's history of one owner's lease, in time order (a value is granted once, as a rule;
// a second grant after the first ended starts a second interval).
struct ServerLease {
  std::vector<Held> held;
  int owner = -1;  // the client the first grant was recorded for, when known

  void see(const HistoryEvent& e) {
    const bool holding = !held.empty() && e.time_us < held.back().end_us;
    if (e.kind == EventKind::grant && owner < 0) owner = e.client;
    // Another client extending or removing this lease is ownership's to report; a lease cut
    // short that way says nothing about the validity its own lock reported.
    if (e.kind != EventKind::grant && e.client >= 0 && owner >= 0 && e.client != owner) return;
    if (e.kind == EventKind::revoke) {
      if (holding) {
        held.back().end_us = e.time_us;
        held.back().last_event = e.index;
      }
      return;
    }
    const TimeUs end_us = e.time_us + std::max<int64_t>(e.ttl_us, 0);
    if (holding) {
      // An extend sets the end (shorter or longer); a grant of a held value lengthens only.
      held.back().end_us =
          e.kind == EventKind::extend ? end_us : std::max(held.back().end_us, end_us);
      held.back().last_event = e.index;
    } else {
      held.push_back({e.time_us, end_us, e.index});
    }
  }
  // The interval holding at t, if any.
  const Held* at(TimeUs t) const {
    for (auto it = held.rbegin(); it != held.rend(); ++it) {
      if (it->start_us <= t) return t < it->end_us ? &*it : nullptr;
    }
    return nullptr;
  }
};

// A successful acquire or extend that reported a validity, and the servers' leases behind it.
struct Claim {
  size_t complete = kNoEvent;
  TimeUs valid_until_us = 0;
  // When the client stopped relying on this claim: its cs_exit on the key (release, expiry seen,
  // death), its release, or its next successful acquire or extend there (the new claim replaces
  // it).
  TimeUs relied_until_us = 0;
  TimeUs invoked_us = 0;
  std::vector<std::pair<uint32_t, uint32_t>> leases;  // (value_id, server_id), distinct
};

std::string_view what_reported(const HistoryEvent& e) {
  if (e.kind == EventKind::renewal) return "renewal";
  return e.op == Op::acquire ? "acquire" : "extend";
}

class ValidityWithinLeasePass final : public CheckerPass {
 public:
  ValidityWithinLeasePass(const History& history, size_t max)
      : CheckerPass({EventKind::invoke, EventKind::grant, EventKind::extend, EventKind::revoke,
                     EventKind::complete, EventKind::cs_exit, EventKind::renewal}),
        history_(history),
        quorum_(std::max(history.meta.quorum, 1)),
        max_(max) {
    // Leases derived from the clients' own operations say nothing the clients did not.
    set_done(max_ == 0 || history.meta.leases_from_clients);
  }

  void see(const HistoryEvent& e) override {
    links_.see(e);
    if (e.kind == EventKind::grant || e.kind == EventKind::extend || e.kind == EventKind::revoke) {
      leases_[{e.value_id, e.server_id}].see(e);
      return;
    }
    if (e.kind == EventKind::cs_exit || (e.kind == EventKind::invoke && e.op == Op::release)) {
      stop_relying(e.client, e.key_id, e.time_us);
      return;
    }
    if (e.kind == EventKind::renewal) return renewed(e);
    if (e.kind != EventKind::complete || e.outcome != Outcome::ok || e.end_us == 0 ||
        links_.linked().empty())
      return;
    stop_relying(e.client, e.key_id, e.time_us);
    Claim claim{.complete = e.index,
                .valid_until_us = e.end_us,
                .relied_until_us = e.end_us,
                .invoked_us =
                    links_.invoked() != kNoEvent ? history_[links_.invoked()].time_us : e.time_us};
    for (size_t fact : links_.linked()) {
      const std::pair<uint32_t, uint32_t> lease{history_[fact].value_id, history_[fact].server_id};
      if (std::find(claim.leases.begin(), claim.leases.end(), lease) == claim.leases.end())
        claim.leases.push_back(lease);
    }
    claims_.push_back(std::move(claim));
    relied_[{e.client, e.key_id}] = claims_.size() - 1;
  }

  std::vector<Violation> finish() override {
    std::vector<Violation> found;
    for (const Claim& claim : claims_) {
      if (found.size() >= max_) break;  // claims are in time order: the earliest are found
      judge(claim, found);
    }
    return found;
  }

 private:
  // A background renewal of the lock the client relies on: a new claim on the same leases (a
  // renewal extends the lock it renews, whose facts its acquire linked), relied on until its
  // validity ends or the client stops. Nothing to judge without a claim open there (no lease
  // linked to the acquire, or the client has left).
  void renewed(const HistoryEvent& e) {
    const auto it = relied_.find({e.client, e.key_id});
    if (it == relied_.end() || e.end_us == 0) return;
    Claim claim{.complete = e.index,
                .valid_until_us = e.end_us,
                .relied_until_us = e.end_us,
                .invoked_us = claims_[it->second].invoked_us,
                .leases = claims_[it->second].leases};
    stop_relying(e.client, e.key_id, e.time_us);
    claims_.push_back(std::move(claim));
    relied_[{e.client, e.key_id}] = claims_.size() - 1;
  }

  // The client's open claim on key, if any, is relied on no later than t.
  void stop_relying(int client, uint32_t key_id, TimeUs t) {
    const auto it = relied_.find({client, key_id});
    if (it == relied_.end()) return;
    Claim& claim = claims_[it->second];
    claim.relied_until_us = std::min(claim.relied_until_us, t);
    relied_.erase(it);
  }

  void judge(const Claim& claim, std::vector<Violation>& found) const {
    const HistoryEvent& e = history_[claim.complete];
    // Each backing lease's end, as the servers kept it from the moment the call returned.
    std::vector<std::pair<TimeUs, size_t>> ends;  // (end, the fact that set it)
    for (const auto& lease : claim.leases) {
      const auto it = leases_.find(lease);
      const Held* held = it != leases_.end() ? it->second.at(e.time_us) : nullptr;
      ends.emplace_back(held != nullptr ? held->end_us : e.time_us,
                        held != nullptr ? held->last_event : kNoEvent);
    }
    // A lease already gone when the call returned is valid_on_return's to report, not this.
    const size_t need = static_cast<size_t>(quorum_);
    const auto live = std::count_if(ends.begin(), ends.end(), [&e](const auto& end) {
      return end.second != kNoEvent && end.first > e.time_us;
    });
    if (static_cast<size_t>(live) < need) return;
    // A quorum holds until the quorum-th latest end. A lease the client itself ended (a release)
    // after it stopped relying on the claim is no shortfall.
    std::sort(ends.begin(), ends.end(), std::greater<>());
    if (ends.size() >= need && ends[need - 1].first >= claim.relied_until_us) return;
    const TimeUs held_until_us = ends.size() >= need ? ends[need - 1].first : e.time_us;
    const size_t shown = ends.size() >= need ? ends[need - 1].second : kNoEvent;
    // The violation happens where the lease ended under a client still relying on it.
    Violation& v = found.emplace_back(make_violation(
        Invariant::validity_within_lease, std::max(held_until_us, e.time_us), e.key, {e.client},
        {shown, e.index},
        fmt::format("{}'s {} of key {} at {}us reported it valid until {}us and relied on it "
                    "until {}us, but {} ended at {}us, {}us earlier",
                    client_name(e.client), what_reported(e), e.key, e.time_us, claim.valid_until_us,
                    claim.relied_until_us,
                    quorum_ > 1 ? fmt::format("a quorum ({}) of its servers' leases", quorum_)
                                : std::string("the server's lease behind it"),
                    held_until_us, claim.relied_until_us - held_until_us)));
    v.holder = e.client;
    v.claim_since_us = claim.invoked_us;
    v.excess_us = claim.relied_until_us - held_until_us;
  }

  const History& history_;
  int quorum_;
  size_t max_;
  LeaseLinker links_;
  std::map<std::pair<uint32_t, uint32_t>, ServerLease> leases_;  // (value_id, server_id)
  std::vector<Claim> claims_;
  std::map<std::pair<int, uint32_t>, size_t> relied_;  // (client, key) -> its open claim
};

}  // namespace

std::unique_ptr<CheckerPass> checker_support::validity_within_lease_pass(
    const History& history, const CheckOptions& options) {
  return std::make_unique<ValidityWithinLeasePass>(history, options.per_invariant_max);
}

std::vector<Violation> check_validity_within_lease(const History& history,
                                                   const CheckOptions& options) {
  return run_alone(history, validity_within_lease_pass(history, options));
}

}  // namespace lockstep
