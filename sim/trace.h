#pragma once
// The trace: one line per event of a run, and its hash.
//
// A writer appends a TraceLine, which can do two things: feed its binary record (its fields, as
// 64-bit words and length-prefixed bytes) to a TraceHasher, and write its text. The hash covers
// every line's true time and record; the text is written only for a line the trace keeps (at most
// keep_lines_max, for reports' excerpts). So a run that hashes but keeps nothing formats no text,
// and the hash is the same whether lines are kept or not.
//
// The hash identifies the run: the same scenario, seed and build give the same hash on every run
// and machine. Its definition is versioned (kHashVersion): a report records the version its
// trace_hash was made with, and a replay of another version says so instead of comparing.
//   version 1: FNV-1a 64 over every line's text, newline-terminated.
//   version 2: word-at-a-time multiply-fold over every line's (true time, binary record).
//   version 3: version 2's fold, over the runs of a build whose judge and workloads record more
//              (a validity's true end on each grant, swarm specs with per-step TTLs, server
//              restarts and pauses): a version-2 report names a run this build no longer makes.
//
// A trace that neither hashes nor keeps lines (hash = false, keep_lines_max = 0) only counts them:
// wants_text() is false, and writers of a plain text line should not make one nobody reads. Nothing
// a run decides may depend on the trace, so such a run is the same run: the same events, history
// and verdict, with no hash (hash_hex() is ""). Sweeps use it for the seeds whose hash nobody
// reports; a seed they report is run again with its hash.
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "sim/time.h"

namespace lockstep::sim {

// Mixes 64-bit words into one value (wyhash's multiply-fold per word). Bytes go in as their
// length, then 8 at a time little-endian (the last word zero-padded), so the value is the same on
// every machine, and two byte strings one after the other are never read as a third.
class TraceHasher {
 public:
  void word(uint64_t w) { state_ = fold(state_ ^ w ^ kSalt, kMultiplier); }
  void bytes(std::string_view s) {
    word(s.size());
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) word(load(s.data() + i, 8));
    if (i < s.size()) word(load(s.data() + i, s.size() - i));
  }
  uint64_t value() const { return state_; }

 private:
  static constexpr uint64_t kSalt = 0xa0761d6478bd642fULL;
  static constexpr uint64_t kMultiplier = 0xe7037ed1a0b428dbULL;
  __extension__ using Wide = unsigned __int128;  // GCC and Clang on 64-bit targets
  static uint64_t fold(uint64_t a, uint64_t b) {
    const Wide product = static_cast<Wide>(a) * b;
    return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
  }
  static uint64_t load(const char* p, size_t n) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
    return w;
  }
  uint64_t state_ = 0x8ebc6af09c88c6e3ULL;
};

// One line, as its writer knows it. Both functions describe the same event: the record must hold
// everything the text says (so different texts never share a record), and neither may change
// anything.
class TraceLine {
 public:
  virtual void hash_into(TraceHasher& hasher) const = 0;
  virtual void write_text(fmt::memory_buffer& out) const = 0;

 protected:
  ~TraceLine() = default;
};

// A line of ready text: its record is the text.
class TextLine final : public TraceLine {
 public:
  explicit TextLine(std::string_view text) : text_(text) {}
  void hash_into(TraceHasher& hasher) const override;
  void write_text(fmt::memory_buffer& out) const override { out.append(text_); }

 private:
  std::string_view text_;
};

// One argument of a formatted line, as record words: numbers and enums as themselves, strings as
// bytes; any other type by its formatted text (correct, and slower: give hot lines plain values).
template <typename T>
void hash_trace_arg(TraceHasher& hasher, const T& value) {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_enum_v<U>) {
    hasher.word(static_cast<uint64_t>(static_cast<std::underlying_type_t<U>>(value)));
  } else if constexpr (std::is_integral_v<U>) {
    hasher.word(static_cast<uint64_t>(value));
  } else if constexpr (std::is_floating_point_v<U>) {
    hasher.word(std::bit_cast<uint64_t>(static_cast<double>(value)));
  } else if constexpr (std::is_convertible_v<const U&, std::string_view>) {
    hasher.bytes(std::string_view(value));
  } else {
    fmt::memory_buffer text;
    fmt::format_to(std::back_inserter(text), "{}", value);
    hasher.bytes({text.data(), text.size()});
  }
}

// A line made from a format string and its arguments (held by reference for the line's life): the
// record is the format string and the arguments, the text is formatted only when kept.
template <typename... Args>
class FormattedLine final : public TraceLine {
 public:
  FormattedLine(fmt::string_view format, const Args&... args) : format_(format), args_(args...) {}
  void hash_into(TraceHasher& hasher) const override {
    hasher.bytes({format_.data(), format_.size()});
    std::apply([&hasher](const Args&... args) { (hash_trace_arg(hasher, args), ...); }, args_);
  }
  void write_text(fmt::memory_buffer& out) const override {
    std::apply(
        [this, &out](const Args&... args) {
          fmt::vformat_to(std::back_inserter(out), format_, fmt::make_format_args(args...));
        },
        args_);
  }

 private:
  fmt::string_view format_;
  std::tuple<const Args&...> args_;
};

class Trace {
 public:
  static constexpr int kHashVersion = 3;

  explicit Trace(size_t keep_lines_max = 2'000'000, bool hash = true)
      : keep_lines_max_(keep_lines_max), hashing_(hash) {}

  // Appends the line at t_us ("<t_us> <text>" if kept) and returns its index.
  size_t add(TimeUs t_us, const TraceLine& line);
  size_t add(TimeUs t_us, std::string_view text) { return add(t_us, TextLine(text)); }
  // Whether add() reads a line at all; when false a writer of ready text may pass "".
  bool wants_text() const { return hashing_ || keep_lines_max_ > 0; }

  uint64_t hash() const;
  std::string hash_hex() const;  // 16 lowercase hex digits; "" when the trace does not hash
  size_t size() const { return count_; }
  // Line i, or "" if it was not kept.
  std::string_view line(size_t i) const;
  const std::vector<std::string>& lines() const { return lines_; }
  // Whether a kept line contains `needle` (for tests that look for an event in the trace).
  bool contains(std::string_view needle) const {
    for (const std::string& kept : lines_) {
      if (kept.find(needle) != std::string::npos) return true;
    }
    return false;
  }

 private:
  size_t keep_lines_max_;
  bool hashing_;
  size_t count_ = 0;
  TraceHasher hasher_;
  std::vector<std::string> lines_;
};

}  // namespace lockstep::sim
