#include "real/server_files.h"

#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace lockstep::real {

std::string make_server_dir(std::string_view kind) {
  const std::string name = "lockstep-" + std::string(kind) + "-XXXXXX";
  std::string pattern = (std::filesystem::temp_directory_path() / name).string();
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
  }
  return pattern;
}

void remove_server_dir(std::string& dir) {
  if (dir.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  dir.clear();
}

std::string tail_of_file(const std::string& path, size_t bytes_max) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream content;
  content << in.rdbuf();
  const std::string text = content.str();
  return text.size() <= bytes_max ? text : text.substr(text.size() - bytes_max);
}

}  // namespace lockstep::real
