#include "cli/process_guards.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <new>
#include <string>

#include "base/check.h"
#include "cli/exit_codes.h"
#include "real/process_registry.h"
#include "run/runner.h"

namespace lockstep {

namespace {

std::terminate_handler previous_terminate = nullptr;
pid_t guarded_pid = 0;

bool escaping_out_of_memory() {
  const std::exception_ptr escaping = std::current_exception();
  if (!escaping) return false;
  try {
    std::rethrow_exception(escaping);
  } catch (const std::bad_alloc&) {
    return true;
  } catch (...) {
    return false;
  }
}

void write_stderr(const char* text, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, size);
    if (n <= 0) return;  // nothing more can be said
    text += n;
    size -= static_cast<size_t>(n);
  }
}

// Allocates nothing: the allocator just failed.
[[noreturn]] void on_terminate() {
  if (!escaping_out_of_memory()) {
    if (previous_terminate != nullptr) previous_terminate();
    std::abort();
  }
  real::kill_registered_children();
  real::remove_registered_temp_dirs();
  if (::getpid() == guarded_pid) {
    const std::string& program = program_name();
    write_stderr(program.data(), program.size());
    write_stderr(": ", 2);
    write_stderr(kOutOfMemoryWhy, sizeof(kOutOfMemoryWhy) - 1);
    write_stderr("\n", 1);
  }
  ::_exit(kExitEnvironment);
}

}  // namespace

void bound_thread_stacks() {
  pthread_attr_t attributes;
  LOCKSTEP_CHECK(pthread_attr_init(&attributes) == 0, "thread attributes initialise");
  LOCKSTEP_CHECK(pthread_attr_setstacksize(&attributes, kThreadStackBytes) == 0,
                 "kThreadStackBytes is a valid stack size");
  LOCKSTEP_CHECK(pthread_setattr_default_np(&attributes) == 0,
                 "the default thread attributes take a stack size");
  pthread_attr_destroy(&attributes);
}

void end_out_of_memory_within_contract() {
  guarded_pid = ::getpid();
  std::terminate_handler replaced = std::set_terminate(on_terminate);
  if (replaced != on_terminate) previous_terminate = replaced;
}

}  // namespace lockstep
