#include "real/server_files.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "real/process_registry.h"

namespace lockstep::real {

namespace {

constexpr size_t kMkdtempSuffixBytes = 6;
constexpr size_t kStaleScanEntriesMax = 100'000;  // a bound on one scan of the temp dir

// The owner pid of "lockstep-<kind>-<pid>-XXXXXX", or 0 when the name is not of that form.
pid_t owner_of(const std::string& name) {
  if (name.rfind("lockstep-", 0) != 0 || name.size() < kMkdtempSuffixBytes + 2) return 0;
  const size_t suffix_dash = name.size() - kMkdtempSuffixBytes - 1;
  if (name[suffix_dash] != '-') return 0;
  const size_t pid_dash = name.rfind('-', suffix_dash - 1);
  if (pid_dash == std::string::npos || pid_dash < 9 || pid_dash + 1 >= suffix_dash) return 0;
  pid_t pid = 0;
  for (size_t i = pid_dash + 1; i < suffix_dash; ++i) {
    if (name[i] < '0' || name[i] > '9' || pid > 100'000'000) return 0;
    pid = pid * 10 + (name[i] - '0');
  }
  return pid;
}

bool process_exists(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

}  // namespace

size_t remove_stale_server_dirs(const std::string& parent) {
  size_t removed = 0;
  std::error_code ec;
  std::filesystem::directory_iterator it(parent, ec);
  for (size_t seen = 0;
       !ec && it != std::filesystem::directory_iterator() && seen < kStaleScanEntriesMax;
       it.increment(ec), ++seen) {
    const pid_t owner = owner_of(it->path().filename().string());
    if (owner <= 0 || owner == getpid() || process_exists(owner)) continue;
    std::error_code ignored;
    if (!it->is_directory(ignored)) continue;
    std::filesystem::remove_all(it->path(), ignored);
    ++removed;
  }
  return removed;
}

size_t remove_stale_mongoc_counters(const std::string& shm_dir) {
  size_t removed = 0;
  std::error_code ec;
  std::filesystem::directory_iterator it(shm_dir, ec);
  for (size_t seen = 0;
       !ec && it != std::filesystem::directory_iterator() && seen < kStaleScanEntriesMax;
       it.increment(ec), ++seen) {
    const std::string name = it->path().filename().string();
    if (name.rfind("mongoc-", 0) != 0 || name.size() <= 7 || name.size() > 7 + 9) continue;
    pid_t pid = 0;
    bool digits = true;
    for (size_t i = 7; i < name.size(); ++i) {
      digits = digits && name[i] >= '0' && name[i] <= '9';
      pid = digits ? pid * 10 + (name[i] - '0') : 0;
    }
    if (!digits || pid <= 0 || pid == getpid() || process_exists(pid)) continue;
    std::error_code ignored;
    if (std::filesystem::remove(it->path(), ignored)) ++removed;
  }
  return removed;
}

std::string make_server_dir(std::string_view kind) {
  const std::filesystem::path parent = std::filesystem::temp_directory_path();
  remove_stale_server_dirs(parent.string());
  const std::string name =
      "lockstep-" + std::string(kind) + "-" + std::to_string(getpid()) + "-XXXXXX";
  std::string pattern = (parent / name).string();
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
  }
  register_temp_dir(pattern);
  return pattern;
}

void remove_server_dir(std::string& dir) {
  if (dir.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  unregister_temp_dir(dir);
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
