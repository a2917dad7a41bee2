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
  fmt::memory_buffer line;
  fmt::format_to(std::back_inserter(line), "{} {}", t_us, text);
  const std::string_view view(line.data(), line.size());
  hash_ = fnv1a(fnv1a(hash_, view), "\n");
  if (lines_.size() < keep_lines_max_) lines_.emplace_back(view);
  return count_++;
}

std::string Trace::hash_hex() const { return fmt::format("{:016x}", hash_); }

std::string_view Trace::line(size_t i) const {
  return i < lines_.size() ? std::string_view(lines_[i]) : std::string_view();
}

}  // namespace lockstep::sim
