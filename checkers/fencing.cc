#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "base/check.h"
#include "checkers/checker_pass.h"
#include "checkers/checker_support.h"
#include "checkers/lease_links.h"

// fencing: see checkers.h for the definition this judges.

namespace lockstep {

namespace {

using namespace checker_support;

// A successful acquire's token and when its lease was granted: a true-time instant where the
// servers recorded the grant [grant, grant], else only what the client saw, [invoked, completed]
// (the grant happened in between). Two acquires are ordered only when one interval ends before
// the other begins: never by when their replies happened to arrive.
struct Acquired {
  TimeUs granted_from_us = 0;
  TimeUs granted_by_us = 0;
  uint64_t token = 0;
  size_t complete = kNoEvent;
  size_t grant = kNoEvent;  // the linked grant, when the servers recorded one
};

struct FencingBreach {
  size_t at = kNoEvent;     // the completion (or access) that broke it
  size_t prior = kNoEvent;  // the one whose token it should have exceeded
  size_t at_grant = kNoEvent;
  size_t prior_grant = kNoEvent;
  bool stale_access = false;
};

struct KeyFencing {
  std::vector<Acquired> acquired;
  // Accesses the resource served: the highest token seen so far, and breaches against it.
  bool any_access = false;
  uint64_t access_token_max = 0;
  size_t access_max_event = kNoEvent;
  std::vector<FencingBreach> stale;
};

// The acquires of one key whose grants come strictly after an acquire with a token at least as
// large, earliest first: sweeps the acquires by the start of their grant interval, keeping the
// largest token among those whose interval ended before it.
std::vector<FencingBreach> out_of_grant_order(std::vector<Acquired> acquired, size_t max) {
  std::vector<const Acquired*> by_start;
  std::vector<const Acquired*> by_end;
  for (const Acquired& a : acquired) {
    by_start.push_back(&a);
    by_end.push_back(&a);
  }
  std::sort(by_start.begin(), by_start.end(), [](const Acquired* a, const Acquired* b) {
    return std::tie(a->granted_from_us, a->complete) < std::tie(b->granted_from_us, b->complete);
  });
  std::sort(by_end.begin(), by_end.end(), [](const Acquired* a, const Acquired* b) {
    return std::tie(a->granted_by_us, a->complete) < std::tie(b->granted_by_us, b->complete);
  });
  std::vector<FencingBreach> breaches;
  const Acquired* largest = nullptr;  // among those granted before the current one's grant
  size_t ended = 0;
  for (const Acquired* b : by_start) {
    while (ended < by_end.size() && by_end[ended]->granted_by_us < b->granted_from_us) {
      const Acquired* a = by_end[ended++];
      if (largest == nullptr || a->token > largest->token) largest = a;
    }
    if (largest != nullptr && largest->token >= b->token) {
      breaches.push_back(FencingBreach{b->complete, largest->complete, b->grant, largest->grant});
    }
  }
  std::sort(breaches.begin(), breaches.end(),
            [](const FencingBreach& x, const FencingBreach& y) { return x.at < y.at; });
  if (breaches.size() > max) breaches.resize(max);
  return breaches;
}

std::string acquire_text(const History& history, size_t complete, size_t grant) {
  const HistoryEvent& c = history[complete];
  if (grant != kNoEvent) {
    return fmt::format("token {} to {} (granted at {}us, learned at {}us)", c.token,
                       client_name(c.client), history[grant].time_us, c.time_us);
  }
  return fmt::format("token {} to {} (acquired by {}us)", c.token, client_name(c.client),
                     c.time_us);
}

Violation fencing_violation(const History& history, const FencingBreach& breach) {
  const HistoryEvent& at = history[breach.at];
  const HistoryEvent& prior = history[breach.prior];
  std::string detail;
  if (breach.stale_access) {
    detail = fmt::format(
        "the resource served {}'s {} on key {} with token {} at {}us after it had seen token {} "
        "({}'s {} at {}us)",
        client_name(at.client), to_string(at.op), at.key, at.token, at.time_us, prior.token,
        client_name(prior.client), to_string(prior.op), prior.time_us);
  } else {
    detail = fmt::format("on key {}, {} was granted after {}, yet its token is not greater", at.key,
                         acquire_text(history, breach.at, breach.at_grant),
                         acquire_text(history, breach.prior, breach.prior_grant));
  }
  Violation v = make_violation(Invariant::fencing, at.time_us, at.key, {prior.client, at.client},
                               {breach.prior, breach.at, breach.at_grant, breach.prior_grant},
                               std::move(detail));
  v.holder = prior.client;
  v.entrant = at.client;
  // The earlier token's claim: its grant, or its acquire (a lost server state before it could not
  // have reissued its token).
  v.claim_since_us =
      breach.prior_grant != kNoEvent ? history[breach.prior_grant].time_us : prior.time_us;
  return v;
}

// Collects every key's acquires and served accesses in the walk; judges them at the end.
class FencingPass final : public CheckerPass {
 public:
  FencingPass(const History& history, size_t max)
      : CheckerPass({EventKind::invoke, EventKind::grant, EventKind::extend, EventKind::complete,
                     EventKind::access}),
        history_(history),
        max_(max) {}

  void see(const HistoryEvent& e) override {
    links_.see(e);
    if (e.kind == EventKind::complete && e.op == Op::acquire && e.outcome == Outcome::ok &&
        e.has_token) {
      keys_[e].acquired.push_back(acquired(e));
    } else if (e.kind == EventKind::access && e.has_token) {
      see_access(keys_[e], e);
    }
  }

  std::vector<Violation> finish() override {
    std::vector<FencingBreach> breaches;
    for (size_t k = 0; k < keys_.size(); ++k) {
      KeyFencing& key = keys_.state(k);
      if (history_.meta.monotonic_tokens) {
        std::vector<FencingBreach> found = out_of_grant_order(std::move(key.acquired), max_);
        breaches.insert(breaches.end(), found.begin(), found.end());
      }
      if (history_.meta.fencing_on)
        breaches.insert(breaches.end(), key.stale.begin(), key.stale.end());
    }
    std::sort(breaches.begin(), breaches.end(),
              [](const FencingBreach& a, const FencingBreach& b) { return a.at < b.at; });
    if (breaches.size() > max_) breaches.resize(max_);
    std::vector<Violation> found;
    for (const FencingBreach& breach : breaches)
      found.push_back(fencing_violation(history_, breach));
    return found;
  }

 private:
  Acquired acquired(const HistoryEvent& e) const {
    Acquired a{.token = e.token, .complete = e.index};
    // Derived from the clients (real servers report none), a grant says no more than the
    // client's own interval does.
    if (!history_.meta.leases_from_clients) {
      for (size_t grant : links_.linked()) {
        if (a.grant == kNoEvent || history_[grant].time_us > history_[a.grant].time_us)
          a.grant = grant;
      }
    }
    if (a.grant != kNoEvent) {
      a.granted_from_us = a.granted_by_us = history_[a.grant].time_us;
    } else {
      // An acquire whose invocation was not recorded can be placed no earlier than the run.
      a.granted_from_us = links_.invoked() != kNoEvent ? history_[links_.invoked()].time_us : 0;
      a.granted_by_us = e.time_us;
    }
    return a;
  }

  void see_access(KeyFencing& key, const HistoryEvent& e) {
    // Refused accesses are what fencing is for; only served ones can break it.
    if (key.any_access && e.outcome == Outcome::ok && e.token < key.access_token_max &&
        key.stale.size() < max_) {
      key.stale.push_back(
          FencingBreach{.at = e.index, .prior = key.access_max_event, .stale_access = true});
    }
    if (!key.any_access || e.token > key.access_token_max) {
      key.access_token_max = e.token;
      key.access_max_event = e.index;
    }
    key.any_access = true;
  }

  const History& history_;
  size_t max_;
  LeaseLinker links_;
  PerKey<KeyFencing> keys_;
};

}  // namespace

std::unique_ptr<CheckerPass> checker_support::fencing_pass(const History& history,
                                                           const CheckOptions& options) {
  return std::make_unique<FencingPass>(history, options.per_invariant_max);
}

std::vector<Violation> check_fencing(const History& history, const CheckOptions& options) {
  return run_alone(history, fencing_pass(history, options));
}

}  // namespace lockstep
