#include "history/json_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace lockstep {

namespace {

std::string what_it_is(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

}  // namespace

int open_regular_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const std::string what = ::fstat(fd, &st) != 0 ? "cannot be examined" : what_it_is(st.st_mode);
    ::close(fd);
    throw InputError(fmt::format("{} is {}, not a regular file", path, what));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

std::string read_input_file(const std::string& path, size_t bytes_max) {
  const int fd = open_regular_file(path);
  std::string text;
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      ::close(fd);
      throw InputError(fmt::format("cannot read {}: {}", path, std::strerror(saved)));
    }
    if (n == 0) break;
    if (text.size() + static_cast<size_t>(n) > bytes_max) {
      ::close(fd);
      throw InputError(fmt::format("{} is larger than {} bytes", path, bytes_max));
    }
    text.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

nlohmann::json parse_json_bounded(std::string_view text, int depth_max) {
  // The callback sees each value's depth as the parser reaches it: deeper input is refused before
  // anything is built from it.
  return nlohmann::json::parse(
      text.begin(), text.end(),
      [depth_max](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        if (depth > depth_max) {
          throw InputError(fmt::format("JSON nested deeper than {} levels", depth_max));
        }
        return true;
      });
}

bool read_bounded_line(std::istream& in, std::string& line, size_t bytes_max) {
  line.clear();
  std::streambuf* buf = in.rdbuf();
  bool any = false;
  for (;;) {
    const int ch = buf->sbumpc();
    if (ch == std::char_traits<char>::eof()) {
      if (!any) in.setstate(std::ios::eofbit);
      return any;
    }
    any = true;
    if (ch == '\n') return true;
    if (line.size() >= bytes_max) {
      throw InputError(fmt::format("a line is longer than {} bytes", bytes_max));
    }
    line.push_back(static_cast<char>(ch));
  }
}

std::string json_brief(const nlohmann::json& value, size_t chars_max) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > chars_max) text = text.substr(0, chars_max) + "...";
  return text;
}

std::string json_text(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<int64_t> json_integer(const nlohmann::json& value, int64_t min, int64_t max) {
  if (value.is_number_unsigned()) {
    const uint64_t n = value.get<uint64_t>();
    if (n > static_cast<uint64_t>(INT64_MAX) || static_cast<int64_t>(n) > max ||
        static_cast<int64_t>(n) < min)
      return std::nullopt;
    return static_cast<int64_t>(n);
  }
  if (value.is_number_integer()) {
    const int64_t n = value.get<int64_t>();
    if (n < min || n > max) return std::nullopt;
    return n;
  }
  return std::nullopt;
}

}  // namespace lockstep
