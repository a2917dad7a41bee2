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

// fencing: see checkers.h for the definition this judges.

namespace lockstep {

namespace {

using namespace checker_support;

enum class FencingKind { grant_order, issue_order, acquire_order, stale_access };

struct FencingBreach {
  size_t at = kNoEvent;     // the event that broke it
  size_t prior = kNoEvent;  // the event with the token it should have exceeded
  FencingKind kind = FencingKind::grant_order;
};

// The highest token seen so far in a sequence, and breaches of strict increase against it.
struct TokenSequence {
  bool any = false;
  uint64_t token_max = 0;
  size_t event_max = kNoEvent;
  std::vector<FencingBreach> breaches;

  // strict: a token must exceed the maximum (issued tokens); otherwise equal is fine (accesses).
  void see(const HistoryEvent& e, bool strict, bool judge, FencingKind kind, size_t max) {
    const bool stale = strict ? e.token <= token_max : e.token < token_max;
    if (any && judge && stale && breaches.size() < max) {
      breaches.push_back(FencingBreach{e.index, event_max, kind});
    }
    if (!any || e.token > token_max) {
      token_max = e.token;
      event_max = e.index;
    }
    any = true;
  }
};

struct KeyFencing {
  TokenSequence issues;  // tokens a server issued apart from its grants, in the order it did
  TokenSequence grants;
  TokenSequence acquires;
  TokenSequence accesses;
  // The tokens clients received, matched to the servers' grants. A client's attempts are
  // sequential and the successful one is its last, so a successful acquire belongs to the latest
  // grant that client got before it (an earlier grant may have been given up: it arrived after
  // its TTL). Judged in grant order, so a client that sees its reply late (a pause, a slow clock)
  // is not mistaken for one that got an older token.
  std::map<int, size_t> last_grant;                 // client -> its latest unmatched grant
  std::vector<std::pair<size_t, size_t>> received;  // (grant index, acquire completion index)
};

void match_received_token(KeyFencing& key, const HistoryEvent& e) {
  if (e.kind == EventKind::grant) {
    key.last_grant[e.client] = e.index;
    return;
  }
  if (e.kind != EventKind::complete || e.op != Op::acquire || e.outcome != Outcome::ok ||
      !e.has_token)
    return;
  auto it = key.last_grant.find(e.client);
  if (it == key.last_grant.end()) return;
  key.received.emplace_back(it->second, e.index);
  key.last_grant.erase(it);
}

// The received tokens in grant order, as a sequence that must strictly increase. A token equal to
// the one its grant carried is the grant sequence's to judge (one fact, one violation); only
// tokens the server did not issue, or grants that carry none, are judged here.
TokenSequence received_in_grant_order(const History& history, KeyFencing& key, size_t max) {
  std::sort(key.received.begin(), key.received.end());
  TokenSequence sequence;
  for (const auto& [grant, completion] : key.received) {
    const bool as_issued =
        history[grant].has_token && history[grant].token == history[completion].token;
    sequence.see(history[completion], true, !as_issued, FencingKind::acquire_order, max);
  }
  return sequence;
}

void see_fencing_event(KeyFencing& key, const HistoryEvent& e, size_t max) {
  match_received_token(key, e);
  if (!e.has_token) return;
  if (e.kind == EventKind::token) {
    key.issues.see(e, true, true, FencingKind::issue_order, max);
  } else if (e.kind == EventKind::grant) {
    key.grants.see(e, true, true, FencingKind::grant_order, max);
  } else if (e.kind == EventKind::complete && e.op == Op::acquire && e.outcome == Outcome::ok) {
    key.acquires.see(e, true, true, FencingKind::acquire_order, max);
  } else if (e.kind == EventKind::access) {
    // Refused accesses are what fencing is for; only served ones can break it.
    key.accesses.see(e, false, e.outcome == Outcome::ok, FencingKind::stale_access, max);
  }
}

Violation fencing_violation(const History& history, const FencingBreach& breach) {
  const HistoryEvent& at = history[breach.at];
  const HistoryEvent& prior = history[breach.prior];
  std::string detail;
  if (breach.kind == FencingKind::stale_access) {
    detail = fmt::format(
        "the resource served {}'s {} on key {} with token {} at {}us after it had seen token {} "
        "({}'s {} at {}us)",
        client_name(at.client), to_string(at.op), at.key, at.token, at.time_us, prior.token,
        client_name(prior.client), to_string(prior.op), prior.time_us);
  } else {
    const char* what = breach.kind == FencingKind::grant_order   ? "granted"
                       : breach.kind == FencingKind::issue_order ? "issued"
                                                                 : "acquired";
    detail = fmt::format(
        "token {} {} to {} on key {} at {}us is not greater than token {} {} to {} at {}us",
        at.token, what, client_name(at.client), at.key, at.time_us, prior.token, what,
        client_name(prior.client), prior.time_us);
  }
  return make_violation(Invariant::fencing, at.time_us, at.key, {prior.client, at.client},
                        {breach.prior, breach.at}, std::move(detail));
}

// Collects every key's token sequences in the walk; judges them at the end.
class FencingPass final : public CheckerPass {
 public:
  FencingPass(const History& history, size_t max)
      : CheckerPass({EventKind::grant, EventKind::complete, EventKind::access, EventKind::token}),
        history_(history),
        max_(max) {}

  void see(const HistoryEvent& e) override { see_fencing_event(keys_[e], e, max_); }

  std::vector<Violation> finish() override {
    std::vector<FencingBreach> breaches;
    for (size_t k = 0; k < keys_.size(); ++k) judge_key(keys_.state(k), breaches);
    // Each key kept its earliest max; the earliest max overall are among them. Index order is
    // time order, and every breach has its own event.
    std::sort(breaches.begin(), breaches.end(),
              [](const FencingBreach& a, const FencingBreach& b) { return a.at < b.at; });
    if (breaches.size() > max_) breaches.resize(max_);
    std::vector<Violation> found;
    for (const FencingBreach& breach : breaches) {
      found.push_back(fencing_violation(history_, breach));
    }
    return found;
  }

 private:
  void judge_key(KeyFencing& fencing, std::vector<FencingBreach>& breaches) const {
    if (history_.meta.monotonic_tokens) {
      // Grants are the servers' own record; what clients received must follow their order too
      // (a client handed another token than the server issued). A server that issues tokens by
      // a step of its own (token events) is judged in the order it issued them: two clients may
      // learn theirs in the other order. Without either, acquires alone.
      if (fencing.issues.any) {
        append(breaches, fencing.issues.breaches);
      } else if (fencing.grants.any) {
        append(breaches, fencing.grants.breaches);
        append(breaches, received_in_grant_order(history_, fencing, max_).breaches);
      } else {
        append(breaches, fencing.acquires.breaches);
      }
    }
    if (history_.meta.fencing_on) append(breaches, fencing.accesses.breaches);
  }

  static void append(std::vector<FencingBreach>& to, const std::vector<FencingBreach>& from) {
    to.insert(to.end(), from.begin(), from.end());
  }

  const History& history_;
  size_t max_;
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
