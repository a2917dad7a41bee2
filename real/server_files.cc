#include "real/server_files.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <system_error>

#include "real/process_registry.h"
#include "real/server_errors.h"

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

namespace {

// Visits at most kStaleScanEntriesMax entries of dir (none if it cannot be read); visit returns
// whether it removed the entry. Returns how many it removed.
size_t remove_entries(const std::string& dir,
                      const std::function<bool(const std::filesystem::directory_entry&)>& visit) {
  size_t removed = 0;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  for (size_t seen = 0;
       !ec && it != std::filesystem::directory_iterator() && seen < kStaleScanEntriesMax;
       it.increment(ec), ++seen) {
    if (visit(*it)) ++removed;
  }
  return removed;
}

bool owned_by_dead_process(pid_t owner) {
  return owner > 0 && owner != getpid() && !process_exists(owner);
}

// The pid of a file named PREFIX<pid>; 0 for any other name.
pid_t pid_file_owner(const std::string& name, const std::string& prefix) {
  if (name.rfind(prefix, 0) != 0 || name.size() <= prefix.size() || name.size() > prefix.size() + 9)
    return 0;
  pid_t pid = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return 0;
    pid = pid * 10 + (name[i] - '0');
  }
  return pid;
}

}  // namespace

size_t remove_stale_server_dirs(const std::string& parent) {
  return remove_entries(parent, [](const std::filesystem::directory_entry& entry) {
    std::error_code ignored;
    if (!owned_by_dead_process(owner_of(entry.path().filename().string())) ||
        !entry.is_directory(ignored))
      return false;
    std::filesystem::remove_all(entry.path(), ignored);
    return true;
  });
}

size_t remove_stale_pid_files(const std::string& dir, const std::string& prefix) {
  return remove_entries(dir, [&prefix](const std::filesystem::directory_entry& entry) {
    std::error_code ignored;
    return owned_by_dead_process(pid_file_owner(entry.path().filename().string(), prefix)) &&
           std::filesystem::remove(entry.path(), ignored);
  });
}

std::string make_server_dir(std::string_view kind) {
  // A temp dir that cannot hold a server's files is the environment's: exit 3 naming TMPDIR.
  const char* tmpdir = std::getenv("TMPDIR");
  const auto unusable = [&](const std::string& why) {
    return ServerUnavailable(
        "the temp directory (" + (tmpdir != nullptr ? "TMPDIR=" + std::string(tmpdir) : "/tmp") +
        ") cannot hold a server's files: " + why + "; set TMPDIR to a writable directory");
  };
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::temp_directory_path(ec);
  if (ec) throw unusable(ec.message());
  remove_stale_server_dirs(parent.string());
  const std::string name =
      "lockstep-" + std::string(kind) + "-" + std::to_string(getpid()) + "-XXXXXX";
  std::string pattern = (parent / name).string();
  // Checked before the dir exists: the process registry keeps paths of bounded length (so its
  // signal handler can remove them), and a dir it cannot keep would be left behind.
  if (pattern.size() >= kTempDirPathMax) {
    throw unusable("its path is too long (" + std::to_string(pattern.size()) +
                   " bytes with the server's dir, at most " + std::to_string(kTempDirPathMax - 1) +
                   ")");
  }
  if (mkdtemp(pattern.data()) == nullptr) throw unusable(std::strerror(errno));
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
