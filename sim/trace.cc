#include "sim/trace.h"

namespace lockstep::sim {
namespace {

// Record tags: a text line's record can never read as a formatted line's, nor a line's end as a
// field.
constexpr uint64_t kTextLineTag = 0x007478746c696e65ULL;  // "txtline"
constexpr uint64_t kLineEndTag = 0x00656e646c696e65ULL;   // "endline"

}  // namespace

void TextLine::hash_into(TraceHasher& hasher) const {
  hasher.word(kTextLineTag);
  hasher.bytes(text_);
}

size_t Trace::add(TimeUs t_us, const TraceLine& line) {
  if (hashing_) {
    hasher_.word(static_cast<uint64_t>(t_us));
    line.hash_into(hasher_);
    hasher_.word(kLineEndTag);
  }
  if (lines_.size() < keep_lines_max_) {
    fmt::memory_buffer text;
    const fmt::format_int stamp(t_us);
    text.append(std::string_view(stamp.data(), stamp.size()));
    text.push_back(' ');
    line.write_text(text);
    lines_.emplace_back(text.data(), text.size());
  }
  return count_++;
}

// The line count is folded in last, so a trace and its prefix differ even if a record is empty.
uint64_t Trace::hash() const {
  TraceHasher final = hasher_;
  final.word(count_);
  return final.value();
}

std::string Trace::hash_hex() const { return hashing_ ? fmt::format("{:016x}", hash()) : ""; }

std::string_view Trace::line(size_t i) const {
  return i < lines_.size() ? std::string_view(lines_[i]) : std::string_view();
}

}  // namespace lockstep::sim
