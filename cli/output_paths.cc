#include "cli/output_paths.h"

#include <unistd.h>

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

}  // namespace

void check_output_dir(std::string_view flag, const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) refuse(flag, dir, fmt::format("cannot create the directory: {}", ec.message()));
  if (!std::filesystem::is_directory(dir, ec)) refuse(flag, dir, "not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    refuse(flag, dir, fmt::format("cannot create files in it: {}", std::strerror(errno)));
  }
}

void check_output_file(std::string_view flag, const std::string& file) {
  if (file.empty()) return;
  std::error_code ec;
  const std::filesystem::path path(file);
  if (std::filesystem::is_directory(path, ec)) refuse(flag, file, "is a directory, not a file");
  if (std::filesystem::exists(path, ec)) {
    if (::access(file.c_str(), W_OK) != 0) refuse(flag, file, std::strerror(errno));
    return;
  }
  const std::string parent = path.has_parent_path() ? path.parent_path().string() : ".";
  std::filesystem::create_directories(parent, ec);
  if (ec) refuse(flag, file, fmt::format("cannot create its directory: {}", ec.message()));
  if (::access(parent.c_str(), W_OK | X_OK) != 0) {
    refuse(flag, file, fmt::format("cannot create it: {}", std::strerror(errno)));
  }
}

void write_output_file(const std::string& path, const std::string& text) {
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (out == nullptr)
    throw OutputError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  const bool written = std::fwrite(text.data(), 1, text.size(), out) == text.size();
  const int saved_errno = errno;
  const bool closed = std::fclose(out) == 0;
  if (!written || !closed) {
    throw OutputError(
        fmt::format("cannot write {}: {}", path, std::strerror(written ? errno : saved_errno)));
  }
}

}  // namespace lockstep
