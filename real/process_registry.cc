#include "real/process_registry.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "base/check.h"

namespace lockstep::real {
namespace {

std::array<std::atomic<pid_t>, kMaxChildren> g_children{};

struct TempDirSlot {
  std::atomic<bool> used{false};
  char path[kTempDirPathMax] = {};
};
std::array<TempDirSlot, kMaxTempDirs> g_temp_dirs{};
// "DIR/PREFIX" of each registered pid file; the pid is appended in the handler.
std::array<TempDirSlot, kPidFilesMax> g_pid_files{};

constexpr std::array<int, 3> kFatalSignals = {SIGINT, SIGTERM, SIGHUP};
// The action each signal had before ours; the handler hands the signal on to it.
std::array<struct sigaction, kFatalSignals.size()> g_previous{};
std::mutex g_install_mutex;

// Removes what dir_fd holds, depth levels deep at most. Async-signal-safe: no allocation, no
// stdio, only system calls on a stack buffer.
void remove_contents(int dir_fd, int depth) {
  if (depth > kTempDirDepthMax) return;
  alignas(8) char buffer[4096];
  for (int batch = 0; batch < 1024; ++batch) {  // bounded: 1024 reads of directory entries
    const long read = syscall(SYS_getdents64, dir_fd, buffer, sizeof buffer);
    if (read <= 0) return;
    for (long offset = 0; offset < read;) {
      const auto* entry = reinterpret_cast<const struct dirent64*>(buffer + offset);
      offset += entry->d_reclen;
      const char* name = entry->d_name;
      if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
      if (unlinkat(dir_fd, name, 0) == 0) continue;
      const int child = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (child < 0) continue;
      remove_contents(child, depth + 1);
      close(child);
      unlinkat(dir_fd, name, AT_REMOVEDIR);
    }
    lseek(dir_fd, 0, SEEK_SET);  // entries removed: read again from the start until empty
  }
}

// Unlinks every registered DIR/PREFIX<our pid>. Async-signal-safe: digits by hand, one unlink each.
void unlink_own_pid_files() {
  for (const TempDirSlot& slot : g_pid_files) {
    if (!slot.used.load()) continue;
    char path[kTempDirPathMax + 16];
    size_t at = 0;
    while (slot.path[at] != '\0' && at < kTempDirPathMax) {
      path[at] = slot.path[at];
      ++at;
    }
    char digits[16];
    size_t count = 0;
    for (pid_t pid = getpid(); pid > 0 && count < sizeof digits; pid /= 10)
      digits[count++] = static_cast<char>('0' + pid % 10);
    while (count > 0 && at + 1 < sizeof path) path[at++] = digits[--count];
    path[at] = '\0';
    unlink(path);
  }
}

void on_fatal_signal(int signal_number) {
  kill_registered_children();
  unlink_own_pid_files();
  // Reaped before their dirs go: a dying server must not write into a dir being removed.
  for (auto& slot : g_children) {
    const pid_t pid = slot.load();
    if (pid > 0) waitpid(pid, nullptr, 0);
  }
  remove_registered_temp_dirs();
  for (size_t i = 0; i < kFatalSignals.size(); ++i) {
    if (kFatalSignals[i] == signal_number) sigaction(signal_number, &g_previous[i], nullptr);
  }
  raise(signal_number);  // blocked until we return, then delivered to the previous action
}

void install_handlers() {
  const std::lock_guard lock(g_install_mutex);
  for (size_t i = 0; i < kFatalSignals.size(); ++i) {
    struct sigaction current {};
    sigaction(kFatalSignals[i], nullptr, &current);
    if (current.sa_handler == on_fatal_signal || current.sa_handler == SIG_IGN) continue;
    struct sigaction ours {};
    ours.sa_handler = on_fatal_signal;
    sigemptyset(&ours.sa_mask);
    g_previous[i] = current;
    sigaction(kFatalSignals[i], &ours, nullptr);
  }
  static std::once_flag at_exit_once;
  std::call_once(at_exit_once, [] { std::atexit(kill_registered_children); });
}

}  // namespace

void register_child(pid_t pid) {
  LOCKSTEP_CHECK(pid > 0, "a real child pid");
  install_handlers();
  for (auto& slot : g_children) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pid)) return;
  }
  LOCKSTEP_CHECK(false, "at most kMaxChildren child processes at once");
}

void unregister_child(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t expected = pid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

void kill_registered_children() {
  for (auto& slot : g_children) {
    const pid_t pid = slot.load();
    if (pid > 0) kill(pid, SIGKILL);
  }
}

void register_temp_dir(const std::string& path) {
  LOCKSTEP_CHECK(!path.empty() && path.size() < kTempDirPathMax,
                 "a temp dir path of at most kTempDirPathMax bytes");
  install_handlers();
  for (auto& slot : g_temp_dirs) {
    if (slot.used.load()) continue;
    // Claimed by the store of `used` after the path is in place; one registrar at a time.
    static std::mutex claim_mutex;
    const std::lock_guard lock(claim_mutex);
    if (slot.used.load()) continue;
    path.copy(slot.path, path.size());
    slot.path[path.size()] = '\0';
    slot.used.store(true);
    return;
  }
  LOCKSTEP_CHECK(false, "at most kMaxTempDirs temp dirs at once");
}

void register_own_pid_file(const std::string& dir, const std::string& prefix) {
  const std::string path = dir + "/" + prefix;
  LOCKSTEP_CHECK(!dir.empty() && !prefix.empty() && path.size() < kTempDirPathMax,
                 "a pid file path of at most kTempDirPathMax bytes");
  install_handlers();
  static std::mutex claim_mutex;
  const std::lock_guard lock(claim_mutex);
  for (auto& slot : g_pid_files) {
    if (slot.used.load() && path == slot.path) return;  // registered already
  }
  for (auto& slot : g_pid_files) {
    if (slot.used.load()) continue;
    path.copy(slot.path, path.size());
    slot.path[path.size()] = '\0';
    slot.used.store(true);
    return;
  }
  LOCKSTEP_CHECK(false, "at most kPidFilesMax pid files");
}

void unregister_temp_dir(const std::string& path) {
  for (auto& slot : g_temp_dirs) {
    if (slot.used.load() && path == slot.path) {
      slot.used.store(false);
      return;
    }
  }
}

void remove_registered_temp_dirs() {
  for (auto& slot : g_temp_dirs) {
    if (!slot.used.load()) continue;
    const int fd = open(slot.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      remove_contents(fd, 0);
      close(fd);
    }
    rmdir(slot.path);
    slot.used.store(false);
  }
}

size_t registered_child_count() {
  size_t count = 0;
  for (const auto& slot : g_children) count += slot.load() > 0 ? 1 : 0;
  return count;
}

}  // namespace lockstep::real
