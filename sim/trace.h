#pragma once
// The trace: one compact line per event of a run, and its hash.
//
// The hash (FNV-1a 64 over every line, newline-terminated) identifies the run: the same scenario,
// seed and build give the same hash on every run and machine. Lines are kept in memory up to a
// bound (keep_lines_max) so reports can print excerpts; the hash covers every line either way.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/time.h"

namespace lockstep::sim {

class Trace {
 public:
  explicit Trace(size_t keep_lines_max = 2'000'000) : keep_lines_max_(keep_lines_max) {}

  // Appends "<t_us> <text>" and returns the line's index.
  size_t add(TimeUs t_us, std::string_view text);

  uint64_t hash() const { return hash_; }
  std::string hash_hex() const;  // 16 lowercase hex digits
  size_t size() const { return count_; }
  // Line i, or "" if it was not kept.
  std::string_view line(size_t i) const;
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  size_t keep_lines_max_;
  size_t count_ = 0;
  uint64_t hash_ = 14695981039346656037ULL;
  std::vector<std::string> lines_;
};

}  // namespace lockstep::sim
