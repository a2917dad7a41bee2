#include "history/history_rules.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>

namespace lockstep {

namespace {

bool amount_is_a_size(FaultKind kind) {
  return kind == FaultKind::pause || kind == FaultKind::latency ||
         kind == FaultKind::server_restart || kind == FaultKind::loss ||
         kind == FaultKind::partition;
}

std::optional<std::string> fault_rule(const HistoryEvent& e) {
  if (e.end_us != 0 && e.end_us < e.time_us) {
    return fmt::format("a fault that ends ({}us) before it starts ({}us)", e.end_us, e.time_us);
  }
  if (amount_is_a_size(e.fault) && e.amount < 0) {
    return fmt::format("a {} fault with a negative amount ({})", to_string(e.fault), e.amount);
  }
  if (e.fault == FaultKind::loss && e.amount > 100) {
    return fmt::format("a loss fault of {} percent (at most 100)", e.amount);
  }
  if (e.fault == FaultKind::partition && e.amount > 1) {
    return fmt::format("a partition fault whose amount is {} (1 two-way, 0 one-way)", e.amount);
  }
  return std::nullopt;
}

class RuleWalk {
 public:
  explicit RuleWalk(const History& history) {
    clients_max_ = history.meta.clients > 0 ? history.meta.clients : kHistoryClientsMax;
  }

  std::optional<std::string> see(const HistoryEvent& e) {
    if (e.client >= clients_max_) {
      return fmt::format("client {} is not one of the history's {} clients (meta \"clients\")",
                         e.client, clients_max_);
    }
    const auto on_key = std::make_pair(e.client, e.key);
    switch (e.kind) {
      case EventKind::invoke:
        if ((e.op == Op::release || e.op == Op::extend) && acquired_.count(on_key) == 0) {
          return fmt::format("c{} invokes {} of key {} before it ever acquired it", e.client,
                             to_string(e.op), e.key);
        }
        ++pending_[{e.client, e.op}];
        break;
      case EventKind::complete: {
        auto it = pending_.find({e.client, e.op});
        if (it == pending_.end() || it->second == 0) {
          return fmt::format("c{}'s {} completes without an invocation pending", e.client,
                             to_string(e.op));
        }
        --it->second;
        if (e.op == Op::acquire && e.outcome == Outcome::ok) acquired_.insert(on_key);
        break;
      }
      case EventKind::cs_enter:
        if (!inside_.insert(on_key).second) {
          return fmt::format("c{} enters key {} while it is inside it already", e.client, e.key);
        }
        break;
      case EventKind::cs_exit:
        if (inside_.erase(on_key) == 0) {
          return fmt::format("c{} leaves key {} without having entered it", e.client, e.key);
        }
        break;
      case EventKind::fault: return fault_rule(e);
      case EventKind::access:
        if (e.op == Op::write && e.outcome == Outcome::ok && !written_.count(e.key)) {
          written_.emplace(e.key, e.index);
        }
        break;
      case EventKind::final_value: finals_.insert(e.key); break;
      case EventKind::renewal:
        if (e.client < 0 || acquired_.count(on_key) == 0) {
          return fmt::format("c{} renews key {} before it ever acquired it", e.client, e.key);
        }
        break;
      default: break;
    }
    return std::nullopt;
  }

  std::optional<HistoryRuleBreak> at_end() const {
    for (const auto& [key, first_write] : written_) {
      if (finals_.count(key) == 0) {
        return HistoryRuleBreak{
            first_write,
            fmt::format("the resource accepted writes on key {} but the history has no "
                        "final_value for it (no_lost_update is judged against it)",
                        key)};
      }
    }
    return std::nullopt;
  }

 private:
  int clients_max_ = 0;
  std::map<std::pair<int, Op>, size_t> pending_;
  std::set<std::pair<int, std::string>> acquired_;
  std::set<std::pair<int, std::string>> inside_;
  std::map<std::string, size_t> written_;  // key -> its first accepted write
  std::set<std::string> finals_;
};

}  // namespace

std::optional<HistoryRuleBreak> first_rule_break(const History& history) {
  const HistoryMeta& meta = history.meta;
  if (meta.quorum > std::max(meta.servers, 1)) {
    return HistoryRuleBreak{
        SIZE_MAX,
        fmt::format("meta \"quorum\" {} is more than the {} server(s)", meta.quorum, meta.servers)};
  }
  RuleWalk walk(history);
  for (const HistoryEvent& e : history.events()) {
    if (std::optional<std::string> rule = walk.see(e)) return HistoryRuleBreak{e.index, *rule};
  }
  return walk.at_end();
}

}  // namespace lockstep
