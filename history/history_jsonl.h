#pragma once
// A history as JSON Lines: what `lockstep run --report` writes beside its report, and what
// `lockstep check` reads, from lockstep or from any other system that recorded one (the way
// Jepsen's checkers judge histories they did not make). docs/history.schema.json is the format.
//
// Line 1 is {"meta": {...}} (HistoryMeta: clients, servers, quorum, fencing_on,
// monotonic_tokens, end_us, heal_us, liveness_bound_us, keyed); every further line is one event
// in true-time order: {"time_us", "kind", ...} with the fields of HistoryEvent that are not at
// their defaults. Reading is strict: an unknown field or kind, a wrong type, a number outside its
// range (never cut to fit), a time that goes backwards, a missing meta line, a line longer than
// kHistoryLineBytesMax, JSON nested deeper than kJsonDepthMax, or a broken rule of the schema
// (history_rules.h: ids in range, each completion after its invocation, each exit after its
// enter, fault windows well formed) is a HistoryFormatError naming the line and the field or rule.
#include <cstddef>
#include <istream>
#include <ostream>
#include <stdexcept>
#include <string>

#include "history/history.h"

namespace lockstep {

class HistoryFormatError : public std::invalid_argument {
 public:
  HistoryFormatError(size_t line, const std::string& field, const std::string& what);
  size_t line() const { return line_; }

 private:
  size_t line_;
};

void write_history_jsonl(const History& history, std::ostream& out);
// Events beyond events_max are refused (a bound on what one file can make us hold).
// The default is what a run records at most (kHistoryEventsMax in run/runner.h).
History read_history_jsonl(std::istream& in, size_t events_max = 1'000'000);

}  // namespace lockstep
