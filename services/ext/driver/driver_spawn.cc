#include "services/ext/driver/driver_spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "base/check.h"
#include "real/process_registry.h"

extern char** environ;

namespace lockstep::ext {

namespace {

// In the child: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(const char* path, char* const* argv, int stdin_fd, int stdout_fd,
                             int stderr_fd, pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(126);  // the parent died before prctl took effect
  if (dup2(stdin_fd, STDIN_FILENO) < 0 || dup2(stdout_fd, STDOUT_FILENO) < 0 ||
      dup2(stderr_fd, STDERR_FILENO) < 0) {
    _exit(126);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGPIPE, SIG_DFL);
  execve(path, argv, environ);
  _exit(127);
}

[[noreturn]] void fail(const char* call, std::initializer_list<int> fds) {
  const int error = errno;
  for (int fd : fds) ::close(fd);
  throw std::system_error(error, std::generic_category(), call);
}

}  // namespace

SpawnedDriver spawn_driver(const std::string& program, const std::vector<std::string>& args,
                           bool stderr_nonblocking) {
  LOCKSTEP_CHECK(!program.empty() && program.front() == '/', "an absolute program path");
  int in_pair[2];
  int out_pair[2];
  int err_pipe[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_pair) != 0) fail("socketpair", {});
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, out_pair) != 0)
    fail("socketpair", {in_pair[0], in_pair[1]});
  if (pipe2(err_pipe, O_CLOEXEC | (stderr_nonblocking ? O_NONBLOCK : 0)) != 0)
    fail("pipe2", {in_pair[0], in_pair[1], out_pair[0], out_pair[1]});
  std::vector<std::string> argv_strings{program};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    fail("fork", {in_pair[0], in_pair[1], out_pair[0], out_pair[1], err_pipe[0], err_pipe[1]});
  }
  if (pid == 0)
    exec_child(program.c_str(), argv.data(), in_pair[1], out_pair[1], err_pipe[1], parent);
  real::register_child(pid);
  ::close(in_pair[1]);
  ::close(out_pair[1]);
  ::close(err_pipe[1]);
  return {.pid = pid,
          .to_driver_fd = in_pair[0],
          .from_driver_fd = out_pair[0],
          .stderr_fd = err_pipe[0]};
}

}  // namespace lockstep::ext
