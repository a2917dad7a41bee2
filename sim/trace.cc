#include "sim/trace.h"

#include <fmt/format.h>

namespace lockstep::sim {
namespace {

constexpr uint64_t kFnvPrime = 1099511628211ULL;

uint64_t fnv1a(uint64_t hash, std::string_view bytes) {
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= kFnvPrime;
  }
  return hash;
}

}  // namespace

size_t Trace::add(TimeUs t_us, std::string_view text) {
  if (!wants_text()) return count_++;
  // The line is hashed in its pieces, as they would be laid out: nothing is built unless kept.
  const fmt::format_int time(t_us);
  const std::string_view stamp(time.data(), time.size());
  if (hashing_) hash_ = fnv1a(fnv1a(fnv1a(fnv1a(hash_, stamp), " "), text), "\n");
  if (lines_.size() < keep_lines_max_) {
    std::string& line = lines_.emplace_back();
    line.reserve(stamp.size() + 1 + text.size());
    line.append(stamp).append(" ").append(text);
  }
  return count_++;
}

std::string Trace::hash_hex() const { return hashing_ ? fmt::format("{:016x}", hash_) : ""; }

std::string_view Trace::line(size_t i) const {
  return i < lines_.size() ? std::string_view(lines_[i]) : std::string_view();
}

}  // namespace lockstep::sim
