#include "cli/output_paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace lockstep {
namespace {

[[noreturn]] void refuse(std::string_view flag, const std::string& path, std::string_view why) {
  throw OutputError(fmt::format("{} {}: {}", flag, path, why));
}

// Probed for real (root passes access(2) on any directory): the missing part of the path is
// created, a file created and removed in it, and what was created removed again, so a command
// refused later leaves nothing behind.
void check_creatable_dir(std::string_view flag, const std::string& shown, const std::string& dir) {
  std::error_code ec;
  std::filesystem::path existing = std::filesystem::absolute(dir, ec);
  while (!std::filesystem::exists(existing, ec) && existing != existing.parent_path()) {
    existing = existing.parent_path();
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) refuse(flag, shown, fmt::format("cannot create {}: {}", dir, ec.message()));
  if (!std::filesystem::is_directory(dir, ec)) refuse(flag, shown, dir + " is not a directory");
  const std::string probe = (std::filesystem::path(dir) / ".lockstep-write-probe").string();
  std::FILE* f = std::fopen(probe.c_str(), "w");
  const int saved_errno = errno;
  if (f != nullptr) {
    std::fclose(f);
    std::filesystem::remove(probe, ec);
  }
  for (std::filesystem::path at = std::filesystem::absolute(dir, ec);
       at != existing && at != at.parent_path(); at = at.parent_path()) {
    std::filesystem::remove(at, ec);  // only the empty directories this probe created
  }
  if (f == nullptr) {
    refuse(flag, shown,
           fmt::format("cannot create files in {}: {}", dir, std::strerror(saved_errno)));
  }
}

}  // namespace

void check_output_dir(std::string_view flag, const std::string& dir) {
  if (dir.empty()) return;
  check_creatable_dir(flag, dir, dir);
}

void check_output_file(std::string_view flag, const std::string& file) {
  if (file.empty()) return;
  std::error_code ec;
  const std::filesystem::path path(file);
  if (std::filesystem::is_directory(path, ec)) refuse(flag, file, "is a directory, not a file");
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status) &&
      !std::filesystem::is_character_file(status)) {
    refuse(flag, file, "is not a regular file (a FIFO or a socket would block the write)");
  }
  if (std::filesystem::exists(path, ec)) {
    if (::access(file.c_str(), W_OK) != 0) refuse(flag, file, std::strerror(errno));
    return;
  }
  check_creatable_dir(flag, file, path.has_parent_path() ? path.parent_path().string() : ".");
}

void write_output_file(const std::string& path, const std::string& text) {
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);  // fopen names a failure
  // O_NONBLOCK: a FIFO with no reader fails at once (ENXIO) instead of blocking the open.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0) throw OutputError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode))) {
    ::close(fd);
    throw OutputError(fmt::format("cannot write {}: not a regular file", path));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::FILE* out = ::fdopen(fd, "w");
  if (out == nullptr) {
    ::close(fd);
    throw OutputError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  }
  const bool written = std::fwrite(text.data(), 1, text.size(), out) == text.size();
  const int saved_errno = errno;
  const bool closed = std::fclose(out) == 0;
  if (!written || !closed) {
    throw OutputError(
        fmt::format("cannot write {}: {}", path, std::strerror(written ? errno : saved_errno)));
  }
}

void print_out(std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::ferror(stdout)) {
    throw StdoutError(std::strerror(errno));
  }
}

namespace {
void ignore_signal(int) {}
}  // namespace

void write_errors_instead_of_sigpipe() {
  struct sigaction action {};
  action.sa_handler = ignore_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGPIPE, &action, nullptr);
}

}  // namespace lockstep
