#pragma once
// Which server lease facts back a client's successful acquire or extend (internal to checkers/),
// whatever the lock calls its keys or stores in them, so that a lock is judged by what it does,
// not by whether it names things the way lockstep's own adapters do.
//
// A completion (a successful acquire or extend) is linked to the lease facts the servers recorded
// between its invocation and its completion, of the kind it asked for (a grant for an acquire; a
// grant or extend for an extend):
//   1. those with the lock value the client was told (any key): servers that store the client's
//      value, as every lock lockstep ships does;
//   2. else those the servers recorded for that client (a grant's `client` is whoever sent the
//      command): a lock that stores something else (a value carrying a deadline, a document).
// Feed it every invoke, grant, extend and complete in index order; linked() answers for the
// completion just seen. Memory is bounded by the operations in flight: a client's facts are
// dropped once none of its operations is open.
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "history/history.h"

namespace lockstep::checker_support {

class LeaseLinker {
 public:
  void see(const HistoryEvent& e) {
    if (e.kind == EventKind::invoke && backs(e.op)) {
      window(e.client).open[{e.key_id, e.op}] = e.index;
    } else if (e.kind == EventKind::grant || e.kind == EventKind::extend) {
      facts_.push_back(Fact{e.index, e.value_id, e.kind == EventKind::grant});
      if (e.client >= 0) window(e.client).facts.push_back(facts_.size() - 1);
      by_value_[e.value_id].push_back(facts_.size() - 1);
    } else if (e.kind == EventKind::complete && backs(e.op)) {
      link(e);
    }
  }

  // The lease facts (history indices, ascending) backing the completion last seen, when it was a
  // successful acquire or extend; empty otherwise, or when the servers recorded none.
  const std::vector<size_t>& linked() const { return linked_; }
  // The invocation of the operation that completion ended (kNoEvent when its invocation was not
  // seen).
  size_t invoked() const { return invoked_; }

 private:
  struct Fact {
    size_t index;
    uint32_t value_id;
    bool grant;
  };
  struct ClientWindow {
    std::map<std::pair<uint32_t, Op>, size_t> open;  // (key, op) -> its invocation
    std::vector<size_t> facts;                       // into facts_, recorded for this client
  };

  static bool backs(Op op) { return op == Op::acquire || op == Op::extend; }

  ClientWindow& window(int client) { return windows_[client]; }

  void link(const HistoryEvent& e) {
    linked_.clear();
    invoked_ = static_cast<size_t>(-1);
    auto w = windows_.find(e.client);
    if (w == windows_.end()) return;
    const auto open = w->second.open.find({e.key_id, e.op});
    if (open == w->second.open.end()) return;
    const size_t invoked = open->second;
    invoked_ = invoked;
    w->second.open.erase(open);
    if (e.outcome == Outcome::ok) {
      const auto fits = [&](const Fact& f) {
        return f.index > invoked && (f.grant || e.op == Op::extend);
      };
      if (!e.value.empty()) {
        if (auto v = by_value_.find(e.value_id); v != by_value_.end()) {
          for (size_t fact : v->second) {
            if (fits(facts_[fact])) linked_.push_back(facts_[fact].index);
          }
        }
      }
      if (linked_.empty()) {
        for (size_t fact : w->second.facts) {
          if (fits(facts_[fact])) linked_.push_back(facts_[fact].index);
        }
      }
    }
    if (w->second.open.empty()) w->second.facts.clear();
  }

  std::vector<Fact> facts_;
  std::map<uint32_t, std::vector<size_t>> by_value_;  // value_id -> into facts_
  std::map<int, ClientWindow> windows_;
  std::vector<size_t> linked_;
  size_t invoked_ = static_cast<size_t>(-1);
};

}  // namespace lockstep::checker_support
