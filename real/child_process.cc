#include "real/child_process.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <system_error>
#include <thread>

#include "base/check.h"
#include "real/process_registry.h"

extern char** environ;

namespace lockstep::real {
namespace {

std::string env_name(const std::string& entry) { return entry.substr(0, entry.find('=')); }

// The current environment with `extra` added, an entry of `extra` replacing one of the same name.
std::vector<std::string> merged_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> merged;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string current(*entry);
    bool overridden = false;
    for (const auto& added : extra) overridden = overridden || env_name(added) == env_name(current);
    if (!overridden) merged.push_back(current);
  }
  merged.insert(merged.end(), extra.begin(), extra.end());
  return merged;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& text : strings) pointers.push_back(text.data());
  pointers.push_back(nullptr);
  return pointers;
}

// In the child: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(const char* path, char* const* argv, char* const* envp,
                             const char* output_path, pid_t parent, const RunAs* run_as) {
  // The output file is opened with the harness's rights, before any drop.
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int out_fd = open(output_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (null_fd < 0 || out_fd < 0) _exit(126);
  if (run_as != nullptr &&
      (setgroups(0, nullptr) != 0 || setgid(run_as->gid) != 0 || setuid(run_as->uid) != 0)) {
    _exit(126);
  }
  // After the drop: a change of credentials clears the parent-death signal.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(126);  // the parent died before prctl took effect
  dup2(null_fd, STDIN_FILENO);
  dup2(out_fd, STDOUT_FILENO);
  dup2(out_fd, STDERR_FILENO);
  // Signals ignored or blocked by the harness must not be inherited by the server.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGPIPE, SIG_DFL);
  execve(path, argv, envp);
  _exit(127);
}

}  // namespace

std::optional<std::string> find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream directories(path != nullptr ? path : "/usr/bin:/bin");
  std::string directory;
  while (std::getline(directories, directory, ':')) {
    const std::string candidate = (directory.empty() ? "." : directory) + "/" + name;
    struct stat info {};
    if (stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return std::nullopt;
}

ChildProcess::ChildProcess(const SpawnOptions& options) {
  LOCKSTEP_CHECK(!options.path.empty() && options.path.front() == '/', "an absolute program path");
  LOCKSTEP_CHECK(!options.output_path.empty(), "somewhere for the child's output");
  std::vector<std::string> argv_strings{options.path};
  argv_strings.insert(argv_strings.end(), options.args.begin(), options.args.end());
  std::vector<std::string> env_strings = merged_environment(options.extra_env);
  const std::vector<char*> argv = pointers_to(argv_strings);
  const std::vector<char*> envp = pointers_to(env_strings);
  const pid_t parent = getpid();
  const RunAs* run_as = options.run_as ? &*options.run_as : nullptr;
  pid_ = fork();
  if (pid_ < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid_ == 0) {
    exec_child(options.path.c_str(), argv.data(), envp.data(), options.output_path.c_str(), parent,
               run_as);
  }
  register_child(pid_);
}

ChildProcess::~ChildProcess() {
  if (!reaped_) kill_and_reap();
}

void ChildProcess::mark_reaped() {
  reaped_ = true;
  unregister_child(pid_);
}

void ChildProcess::signal(int signal_number) {
  if (!reaped_) kill(pid_, signal_number);
}

bool ChildProcess::exited_now() {
  if (reaped_) return true;
  int status = 0;
  const pid_t result = waitpid(pid_, &status, WNOHANG);
  if (result == pid_ && (WIFEXITED(status) || WIFSIGNALED(status))) mark_reaped();
  if (result < 0 && errno == ECHILD) mark_reaped();
  return reaped_;
}

bool ChildProcess::wait_exit_for_ms(int64_t timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!exited_now()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // polling a bounded deadline
  }
  return true;
}

// Polls waitpid with `flags` until it reports the state `wanted` says, the child dies, or 5 s pass.
void ChildProcess::wait_for_state(int flags, bool (*wanted)(int status)) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    const pid_t result = waitpid(pid_, &status, flags | WNOHANG);
    if (result == pid_ && (WIFEXITED(status) || WIFSIGNALED(status))) return mark_reaped();
    if (result == pid_ && wanted(status)) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // polling a bounded deadline
  }
  LOCKSTEP_CHECK(false, "the kernel reports a stop or continue within 5 s");
}

void ChildProcess::stop_and_wait() {
  if (reaped_ || stopped_) return;
  kill(pid_, SIGSTOP);
  wait_for_state(WUNTRACED, [](int status) { return WIFSTOPPED(status); });
  stopped_ = true;
}

void ChildProcess::continue_and_wait() {
  if (reaped_ || !stopped_) return;
  kill(pid_, SIGCONT);
  wait_for_state(WCONTINUED, [](int status) { return WIFCONTINUED(status); });
  stopped_ = false;
}

void ChildProcess::terminate(int64_t timeout_ms) {
  if (reaped_) return;
  signal(SIGTERM);
  continue_and_wait();
  if (!wait_exit_for_ms(timeout_ms)) kill_and_reap();
}

void ChildProcess::kill_and_reap() {
  if (reaped_) return;
  kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  mark_reaped();
}

}  // namespace lockstep::real
