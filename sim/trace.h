#pragma once
// The trace: one compact line per event of a run, and its hash.
//
// The hash (FNV-1a 64 over every line, newline-terminated) identifies the run: the same scenario,
// seed and build give the same hash on every run and machine. Lines are kept in memory up to a
// bound (keep_lines_max) so reports can print excerpts; the hash covers every line either way.
//
// A trace that neither hashes nor keeps lines (hash = false, keep_lines_max = 0) only counts them:
// wants_text() is false, and writers should not format a line nobody reads (World::trace_linef
// does not). Nothing a run decides may depend on the text, so such a run is the same run: the same
// events, history and verdict, with no hash (hash_hex() is ""). Sweeps use it for the seeds whose
// hash nobody reports; a seed they report is run again with its hash.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/time.h"

namespace lockstep::sim {

class Trace {
 public:
  explicit Trace(size_t keep_lines_max = 2'000'000, bool hash = true)
      : keep_lines_max_(keep_lines_max), hashing_(hash) {}

  // Appends "<t_us> <text>" and returns the line's index.
  size_t add(TimeUs t_us, std::string_view text);
  // Whether add() reads its text; when false a writer may pass "".
  bool wants_text() const { return hashing_ || keep_lines_max_ > 0; }

  uint64_t hash() const { return hash_; }
  std::string hash_hex() const;  // 16 lowercase hex digits; "" when the trace does not hash
  size_t size() const { return count_; }
  // Line i, or "" if it was not kept.
  std::string_view line(size_t i) const;
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  size_t keep_lines_max_;
  bool hashing_;
  size_t count_ = 0;
  uint64_t hash_ = 14695981039346656037ULL;
  std::vector<std::string> lines_;
};

}  // namespace lockstep::sim
