// The process guards (cli/process_guards.h): threads reserve kThreadStackBytes of stack, and an
// allocation failure that escapes a thread ends the process with exit 3 and one stderr line, its
// registered temp dirs removed, while any other escape still aborts. Each case runs in a forked
// child, whose stderr and end the parent reads.
#include <catch2/catch.hpp>

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <filesystem>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>

#include "cli/process_guards.h"
#include "real/process_registry.h"
#include "run/runner.h"

namespace lockstep {
namespace {

struct ChildEnd {
  int status = 0;
  std::string err;
};

// Runs body() in a forked child with the guards installed (exit 0 when body returns).
ChildEnd in_guarded_child(const std::function<void()>& body) {
  std::array<int, 2> ends{};
  REQUIRE(pipe(ends.data()) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(ends[0]);
    dup2(ends[1], STDERR_FILENO);
    std::signal(SIGABRT, SIG_DFL);  // as a fresh process has it (not the test runner's handler)
    set_program_name("guarded");
    bound_thread_stacks();
    end_out_of_memory_within_contract();
    body();
    _exit(0);
  }
  close(ends[1]);
  ChildEnd end;
  std::array<char, 4096> chunk{};
  for (ssize_t n; (n = read(ends[0], chunk.data(), chunk.size())) > 0;)
    end.err.append(chunk.data(), static_cast<size_t>(n));
  close(ends[0]);
  REQUIRE(waitpid(pid, &end.status, 0) == pid);
  return end;
}

void throw_on_a_thread(const std::function<void()>& throwing) {
  std::thread thread(throwing);
  thread.join();
}

TEST_CASE("a thread reserves kThreadStackBytes of stack", "[guards]") {
  const ChildEnd end = in_guarded_child([] {
    size_t stack_bytes = 0;
    std::thread thread([&stack_bytes] {
      pthread_attr_t attributes;
      if (pthread_getattr_np(pthread_self(), &attributes) != 0) return;
      pthread_attr_getstacksize(&attributes, &stack_bytes);
      pthread_attr_destroy(&attributes);
    });
    thread.join();
    if (stack_bytes != kThreadStackBytes) _exit(1);
  });
  CHECK(WIFEXITED(end.status));
  CHECK(WEXITSTATUS(end.status) == 0);
}

TEST_CASE("an allocation failure on a thread is exit 3 with one line, temp dirs removed",
          "[guards]") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("lockstep-guards-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "data");
  const ChildEnd end = in_guarded_child([&dir] {
    real::register_temp_dir(dir.string());
    throw_on_a_thread([] { throw std::bad_alloc(); });
  });
  const bool removed = !std::filesystem::exists(dir);
  std::filesystem::remove_all(dir);
  CHECK(removed);
  REQUIRE(WIFEXITED(end.status));
  CHECK(WEXITSTATUS(end.status) == 3);
  CHECK(end.err == std::string("guarded: ") + kOutOfMemoryWhy + "\n");
}

TEST_CASE("a forked worker out of memory ends with exit 3 and leaves the line to its parent",
          "[guards]") {
  const ChildEnd end = in_guarded_child([] {
    const pid_t worker = fork();
    if (worker < 0) _exit(1);
    if (worker == 0) throw_on_a_thread([] { throw std::bad_alloc(); });
    int status = 0;
    if (waitpid(worker, &status, 0) != worker) _exit(1);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
  });
  REQUIRE(WIFEXITED(end.status));
  CHECK(WEXITSTATUS(end.status) == 3);
  CHECK(end.err.empty());
}

TEST_CASE("any other exception escaping a thread still aborts", "[guards]") {
  const ChildEnd end =
      in_guarded_child([] { throw_on_a_thread([] { throw std::logic_error("a bug"); }); });
  REQUIRE(WIFSIGNALED(end.status));
  CHECK(WTERMSIG(end.status) == SIGABRT);
  CHECK(end.err.find("a bug") != std::string::npos);  // the replaced handler's report
}

}  // namespace
}  // namespace lockstep
