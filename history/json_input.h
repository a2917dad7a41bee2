#pragma once
// Bounded input for every reader of a file someone hands lockstep (a history, a report, a sweep
// shard): such a file may be anything, so what it can make the reader do is bounded before the
// reader looks at what it says.
//
// - Only a regular file is read: a FIFO with no writer would block for ever, a device may never
//   end. The file is opened without blocking and checked on the open descriptor.
// - A file is read up to a byte bound, a line up to its own bound.
// - JSON nests at most kJsonDepthMax levels (the parser refuses deeper input; nothing recursive
//   ever walks a deeper value, such as printing it in a message).
// - Values shown in a message are cut (json_brief), and JSON written out never throws on bytes
//   that are not UTF-8 (json_text replaces them).
// Errors are InputError, a UsageError-like std::invalid_argument with one line naming the file.
#include <cstddef>
#include <cstdint>
#include <istream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lockstep {

inline constexpr int kJsonDepthMax = 64;
// A report or a shard is a few KiB to a few MiB (a report keeps at most 250 k trace lines, but
// in its .trace file, not its JSON).
inline constexpr size_t kJsonFileBytesMax = 64 * 1024 * 1024;
// One history line is one event: a few hundred bytes, a detail of a few KiB.
inline constexpr size_t kHistoryLineBytesMax = 1024 * 1024;

class InputError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The whole file, if it is a regular file of at most bytes_max bytes; InputError naming `path`
// and what it is otherwise.
std::string read_input_file(const std::string& path, size_t bytes_max = kJsonFileBytesMax);

// Opens `path` for reading only if it is a regular file (checked on the open descriptor, opened
// without blocking); InputError otherwise. The caller closes the descriptor.
int open_regular_file(const std::string& path);

// Parses JSON nested at most depth_max levels. Throws nlohmann's parse_error for malformed text
// and InputError for deeper nesting.
nlohmann::json parse_json_bounded(std::string_view text, int depth_max = kJsonDepthMax);

// The next line of `in` without its '\n' into `line`: false at the end of the input; InputError
// when a line is longer than bytes_max (nothing more of it is kept).
bool read_bounded_line(std::istream& in, std::string& line, size_t bytes_max);

// A value for a one-line message: compact JSON cut to about chars_max bytes ("..." when cut),
// invalid UTF-8 replaced.
std::string json_brief(const nlohmann::json& value, size_t chars_max = 80);

// JSON text for output (indent as dump's), with bytes that are not UTF-8 replaced by U+FFFD
// instead of an exception: a file name, a driver's command or a driver's bytes may be anything.
std::string json_text(const nlohmann::json& value, int indent = 2);

// A JSON integer within [min, max], or nullopt: a float, a string, or a number outside the range
// (nlohmann's get<int>() would wrap 2^32 to 0).
std::optional<int64_t> json_integer(const nlohmann::json& value, int64_t min, int64_t max);

}  // namespace lockstep
