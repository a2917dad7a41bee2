#include "checkers/checkers.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "base/check.h"
#include "checkers/checker_pass.h"
#include "checkers/checker_support.h"

// liveness: see checkers.h for the definition this judges.

namespace lockstep {

namespace {

using namespace checker_support;

struct SlowAcquire {
  TimeUs at = 0;  // when the bound was broken: the completion, or wait start + bound if pending
  size_t invoke = kNoEvent;
  size_t complete = kNoEvent;  // kNoEvent: still pending at the end
  TimeUs start_us = 0;
};

// Earliest first; the invoke index breaks ties, so the order is total.
bool operator<(const SlowAcquire& a, const SlowAcquire& b) {
  return std::tie(a.at, a.invoke) < std::tie(b.at, b.invoke);
}

std::optional<SlowAcquire> judge_acquire(const History& history, size_t invoke, size_t complete) {
  const HistoryMeta& meta = history.meta;
  const TimeUs start_us = std::max(history[invoke].time_us, meta.heal_us);
  const TimeUs bound_us = meta.liveness_bound_us;
  if (complete == kNoEvent) {
    if (meta.end_us - start_us < bound_us) return std::nullopt;
    return SlowAcquire{start_us + bound_us, invoke, kNoEvent, start_us};
  }
  const HistoryEvent& done = history[complete];
  const TimeUs waited_us = done.time_us - start_us;
  const bool ok = done.outcome == Outcome::ok;
  // A success exactly at the bound is in time; a failure at the bound means no progress.
  if (ok ? waited_us <= bound_us : waited_us < bound_us) return std::nullopt;
  return SlowAcquire{done.time_us, invoke, complete, start_us};
}

std::string wait_start_text(const History& history, const SlowAcquire& slow) {
  const TimeUs invoked_us = history[slow.invoke].time_us;
  if (slow.start_us == invoked_us) return fmt::format("{}us", invoked_us);
  return fmt::format("{}us when the faults healed (invoked at {}us)", slow.start_us, invoked_us);
}

Violation liveness_violation(const History& history, const SlowAcquire& slow) {
  const HistoryEvent& invoke = history[slow.invoke];
  const TimeUs bound_us = history.meta.liveness_bound_us;
  const std::string who =
      fmt::format("{}'s acquire of key {}", client_name(invoke.client), invoke.key);
  const std::string since = wait_start_text(history, slow);
  std::string detail;
  if (slow.complete == kNoEvent) {
    detail = fmt::format(
        "{}, waiting since {}, was still pending at the end of the run at {}us "
        "(bound {}us)",
        who, since, history.meta.end_us, bound_us);
  } else {
    const HistoryEvent& done = history[slow.complete];
    const std::string how = done.outcome == Outcome::ok
                                ? std::string("succeeded only")
                                : fmt::format("ended {}", to_string(done.outcome));
    detail = fmt::format("{} {} at {}us, {}us after its wait began at {} (bound {}us)", who, how,
                         done.time_us, done.time_us - slow.start_us, since, bound_us);
  }
  return make_violation(Invariant::liveness, slow.at, invoke.key, {invoke.client},
                        {slow.invoke, slow.complete}, std::move(detail));
}

// Every stuck event: a client parked with nothing left to wake it, judged with or without a
// bound. events: the operation it was stuck in (its invocation), and the stuck event itself.
// Fed the invokes, completions and stuck events in order, in the same walk as the bound's.
class StuckClients {
 public:
  void see(const History& history, const HistoryEvent& e, std::vector<Violation>& found) {
    if (e.kind == EventKind::invoke && e.client >= 0) pending_of(e.client) = e.index;
    if (e.kind == EventKind::complete && e.client >= 0) pending_of(e.client) = kNoEvent;
    if (e.kind != EventKind::stuck) return;
    const size_t invoke = e.client >= 0 ? pending_of(e.client) : kNoEvent;
    const std::string where =
        e.op == Op::none
            ? std::string("parked outside any lock operation")
            : fmt::format("waiting in {}{}", to_string(e.op),
                          e.key.empty() ? std::string() : fmt::format(" on key {}", e.key));
    const std::string since = invoke == kNoEvent
                                  ? std::string()
                                  : fmt::format(", invoked at {}us,", history[invoke].time_us);
    found.push_back(make_violation(
        Invariant::liveness, e.time_us, e.key, {e.client}, {invoke, e.index},
        fmt::format("{} was still {}{} when the run ended at {}us (nothing will ever wake it)",
                    client_name(e.client), where, since, e.time_us)));
  }

 private:
  size_t& pending_of(int client) {
    if (static_cast<size_t>(client) >= pending_.size()) {
      pending_.resize(static_cast<size_t>(client) + 1, kNoEvent);
    }
    return pending_[static_cast<size_t>(client)];
  }
  std::vector<size_t> pending_;  // client -> the invoke of its uncompleted operation, or kNoEvent
};

// Stuck clients always; with a bound, every acquire's wait too.
class LivenessPass final : public CheckerPass {
 public:
  LivenessPass(const History& history, size_t max)
      : CheckerPass(history.meta.liveness_bound_us > 0
                        ? EventKinds{EventKind::invoke, EventKind::complete, EventKind::stuck,
                                     EventKind::fault}
                        : EventKinds{EventKind::invoke, EventKind::complete, EventKind::stuck}),
        history_(history),
        max_(max),
        bounded_(history.meta.liveness_bound_us > 0) {}

  void see(const HistoryEvent& e) override {
    stuck_clients_.see(history_, e, found_);
    if (bounded_) see_wait(e);
  }

  std::vector<Violation> finish() override {
    if (bounded_) judge_waits();
    sort_and_cap(found_, max_);
    return std::move(found_);
  }

 private:
  void see_wait(const HistoryEvent& e) {
    if (e.kind == EventKind::fault && e.kills_client && e.client >= 0)
      died_us_.try_emplace(e.client, e.time_us);
    if (e.kind == EventKind::stuck) stuck_.insert(e.client);
    if (e.op != Op::acquire) return;
    std::map<int, size_t>& on_key = waiting_[e];
    if (e.kind == EventKind::invoke) on_key.try_emplace(e.client, e.index);  // keep the first
    if (e.kind != EventKind::complete) return;
    auto it = on_key.find(e.client);
    if (it == on_key.end()) return;  // a completion without an invocation shows nothing
    if (auto judged = judge_acquire(history_, it->second, e.index)) slow_.push_back(*judged);
    on_key.erase(it);
  }

  void judge_waits() {
    for (size_t k = 0; k < waiting_.size(); ++k) {
      for (const auto& [client, invoke] : waiting_.state(k)) {
        if (stuck_.count(client) != 0) continue;
        auto died = died_us_.find(client);
        if (died != died_us_.end() && died->second >= history_[invoke].time_us) continue;
        if (auto judged = judge_acquire(history_, invoke, kNoEvent)) slow_.push_back(*judged);
      }
    }
    // Only the earliest can be reported: build just those.
    std::sort(slow_.begin(), slow_.end());
    if (slow_.size() > max_) slow_.resize(max_);
    for (const SlowAcquire& s : slow_) found_.push_back(liveness_violation(history_, s));
  }

  const History& history_;
  size_t max_;
  bool bounded_;
  std::vector<Violation> found_;
  StuckClients stuck_clients_;
  PerKey<std::map<int, size_t>> waiting_;  // key -> client -> its acquire's invoke
  std::vector<SlowAcquire> slow_;
  // A client that died while it waited will never complete: nothing to wait for.
  std::map<int, TimeUs> died_us_;
  // A stuck client's pending acquire is reported as stuck (above), which says more than "pending".
  std::set<int> stuck_;
};

}  // namespace

std::unique_ptr<CheckerPass> checker_support::liveness_pass(const History& history,
                                                            const CheckOptions& options) {
  return std::make_unique<LivenessPass>(history, options.per_invariant_max);
}

std::vector<Violation> check_liveness(const History& history, const CheckOptions& options) {
  return run_alone(history, liveness_pass(history, options));
}

}  // namespace lockstep
