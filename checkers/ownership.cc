#include "checkers/checkers.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "base/check.h"
#include "checkers/checker_pass.h"
#include "checkers/checker_support.h"

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

class OwnershipPass final : public CheckerPass {
 public:
  OwnershipPass(const History& history, size_t max)
      : CheckerPass({EventKind::grant, EventKind::revoke, EventKind::extend}),
        history_(history),
        max_(max) {
    set_done(max_ == 0);
  }

  void see(const HistoryEvent& e) override {
    if (e.kind == EventKind::grant) grants_[e] = e.index;
    if (e.kind == EventKind::grant || e.client < 0) return;
    const size_t* grant = grants_.find(e);
    if (grant == nullptr) return;  // owner unknown
    const int owner = history_[*grant].client;
    if (owner >= 0 && owner != e.client) {
      found_.push_back(ownership_violation(history_, OwnershipBreach{*grant, e.index}));
      set_done(found_.size() >= max_);  // index order is time order: the earliest are found
    }
  }

  std::vector<Violation> finish() override { return std::move(found_); }

 private:
  const History& history_;
  size_t max_;
  LeaseTable<size_t> grants_;  // (key, server, value) -> the grant that made the lease
  std::vector<Violation> found_;
};

}  // namespace

std::unique_ptr<CheckerPass> checker_support::ownership_pass(const History& history,
                                                             const CheckOptions& options) {
  return std::make_unique<OwnershipPass>(history, options.per_invariant_max);
}

std::vector<Violation> check_ownership(const History& history, const CheckOptions& options) {
  return run_alone(history, ownership_pass(history, options));
}

}  // namespace lockstep
