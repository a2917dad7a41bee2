#include "checkers/checkers.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "checkers/checker_pass.h"
#include "checkers/checker_support.h"

// error_not_applied: see checkers.h for the definition this judges.

namespace lockstep {

namespace {

using namespace checker_support;

constexpr TimeUs kNoEnd = std::numeric_limits<TimeUs>::max();  // a release: no lease end to measure

// The server fact an operation's effect leaves: a grant for an acquire, and so on.
EventKind effect_kind_of(Op op) {
  switch (op) {
    case Op::acquire: return EventKind::grant;
    case Op::extend: return EventKind::extend;
    default: return EventKind::revoke;
  }
}

bool judged_by_effect(Op op) { return op == Op::acquire || op == Op::extend || op == Op::release; }

// An operation the lock said failed with an error: it claims nothing took effect.
struct ErrorClaim {
  size_t invoked = kNoEvent;
  size_t completed = kNoEvent;
  // Effects up to here are the operation's: its completion for an extend (an auto-extension of
  // the same lease records no invocation of its own); for an acquire or a release, the client's
  // next invocation on the key (its lock value is used by nothing after them), or the end.
  size_t window_end = kNoEvent;
};

class ErrorNotAppliedPass final : public CheckerPass {
 public:
  ErrorNotAppliedPass(const History& history, size_t max)
      : CheckerPass({EventKind::invoke, EventKind::complete, EventKind::grant, EventKind::extend,
                     EventKind::revoke}),
        history_(history),
        max_(max) {
    set_done(max_ == 0 || !history.meta.errors_mean_not_applied ||
             history.meta.leases_from_clients);
  }

  void see(const HistoryEvent& e) override {
    if (e.kind == EventKind::invoke) {
      if (!judged_by_effect(e.op)) return;
      const std::pair<int, uint32_t> at{e.client, e.key_id};
      if (auto open = open_.find(at); open != open_.end()) {
        for (size_t claim : open->second) claims_[claim].window_end = e.index;
        open_.erase(open);
      }
      invoked_[at] = e.index;
    } else if (e.kind == EventKind::complete) {
      if (!judged_by_effect(e.op) || e.outcome != Outcome::error || e.value.empty()) return;
      const std::pair<int, uint32_t> at{e.client, e.key_id};
      const auto invoked = invoked_.find(at);
      if (invoked == invoked_.end()) return;
      claims_.push_back({.invoked = invoked->second,
                         .completed = e.index,
                         .window_end = e.op == Op::extend ? e.index : kNoEvent});
      if (e.op != Op::extend) open_[at].push_back(claims_.size() - 1);
    } else {
      effects_[e.value_id].push_back(e.index);
    }
  }

  std::vector<Violation> finish() override {
    std::vector<Violation> found;
    for (const ErrorClaim& claim : claims_) {
      if (std::optional<Violation> v = judge(claim)) found.push_back(std::move(*v));
    }
    sort_and_cap(found, max_);
    return found;
  }

 private:
  // A failed release must have removed nothing; a failed acquire or extend must leave no lease
  // behind that the client was told it does not have: one that was still live when the call
  // returned, or that a request delivered late set up after that (a lease nobody knows it holds).
  std::optional<Violation> judge(const ErrorClaim& claim) const {
    const HistoryEvent& done = history_[claim.completed];
    const auto effects = effects_.find(done.value_id);
    if (effects == effects_.end()) return std::nullopt;
    std::set<uint32_t> servers;
    std::vector<size_t> shown = {claim.invoked, claim.completed};
    TimeUs left_until_us = kNoEnd;  // the earliest end of the leases left behind
    TimeUs since_us = 0;            // the latest start of their terms
    for (size_t index : effects->second) {
      const HistoryEvent& effect = history_[index];
      if (index <= claim.invoked || index > claim.window_end) continue;
      if (effect.kind != effect_kind_of(done.op) || effect.key_id != done.key_id) continue;
      const TimeUs at_us = std::max(effect.time_us, done.time_us);
      const TimeUs end_us =
          done.op == Op::release ? kNoEnd : lease_end_at(effects->second, effect.server_id, at_us);
      if (end_us <= at_us || !servers.insert(effect.server_id).second) continue;
      shown.push_back(index);
      left_until_us = std::min(left_until_us, end_us);
      since_us = std::max(since_us, lease_since(effect));
      if (static_cast<int>(servers.size()) < history_.meta.quorum) continue;
      Violation v = make_violation(Invariant::error_not_applied, at_us, done.key, {done.client},
                                   std::move(shown), describe(done, effect, servers.size()));
      if (done.op != Op::release) {
        // How long the lease outlived the call, by the servers' promise, and since when it ran:
        // a server clock that ran fast may have ended it before the call returned (excuse.h).
        v.holder = done.client;
        v.claim_since_us = since_us;
        v.excess_us = left_until_us - at_us;
      }
      return v;
    }
    return std::nullopt;
  }

  // When a grant's or extend's term began: a grant timed from before it was recorded says so
  // (lease_since_us).
  static TimeUs lease_since(const HistoryEvent& fact) {
    return fact.kind == EventKind::grant && fact.lease_since_us > 0 ? fact.lease_since_us
                                                                    : fact.time_us;
  }

  // When server's lease for the value ends, by the facts recorded up to t (at or before t: none
  // live then).
  TimeUs lease_end_at(const std::vector<size_t>& facts, uint32_t server, TimeUs t) const {
    TimeUs end_us = 0;
    for (size_t index : facts) {
      const HistoryEvent& fact = history_[index];
      if (fact.time_us > t) break;
      if (fact.server_id != server) continue;
      end_us = fact.kind == EventKind::revoke ? fact.time_us : lease_since(fact) + fact.ttl_us;
    }
    return end_us;
  }

  static std::string describe(const HistoryEvent& done, const HistoryEvent& effect,
                              size_t servers) {
    const std::string what =
        done.op == Op::release
            ? fmt::format("{} server(s) removed the lease, the last {} at {}us", servers,
                          effect.server, effect.time_us)
            : fmt::format(
                  "{} server(s) held the lease it set up ({} at {}us, the last {}) after "
                  "the call returned",
                  servers, to_string(effect.kind), effect.time_us, effect.server);
    return fmt::format(
        "{}'s {} of key {} failed with an error, which says it had no effect, but {}; a write "
        "that may have been applied is an unknown outcome",
        client_name(done.client), to_string(done.op), done.key, what);
  }

  const History& history_;
  size_t max_;
  std::map<std::pair<int, uint32_t>, size_t> invoked_;  // (client, key) -> its last invocation
  std::map<std::pair<int, uint32_t>, std::vector<size_t>> open_;  // claims whose window is open
  std::vector<ErrorClaim> claims_;
  std::map<uint32_t, std::vector<size_t>> effects_;  // value -> its grants, extends, revokes
};

}  // namespace

std::unique_ptr<CheckerPass> checker_support::error_not_applied_pass(const History& history,
                                                                     const CheckOptions& options) {
  return std::make_unique<ErrorNotAppliedPass>(history, options.per_invariant_max);
}

std::vector<Violation> check_error_not_applied(const History& history,
                                               const CheckOptions& options) {
  return run_alone(history, error_not_applied_pass(history, options));
}

}  // namespace lockstep
