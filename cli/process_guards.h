#pragma once
// Process-wide settings the command line makes once, first thing in cli_main, before any thread
// starts: how much address space a thread reserves for its stack, and how a failed allocation on
// any thread ends the process.
//
// Invariants:
// - After bound_thread_stacks(), every thread started without attributes of its own (std::thread,
//   and a library's pthread_create with none) reserves kThreadStackBytes of stack instead of the
//   8 MiB glibc takes from RLIMIT_STACK. A real-world run starts two threads per client (the
//   client's and its TCP proxy's): at 200 clients the default reserved 3.2 GB of address space, all
//   of it counted by a memory limit (RLIMIT_DATA, a container's), for 50 MB of memory in use.
// - After end_out_of_memory_within_contract(), an allocation failure that escapes a thread (where
//   nothing can catch it: a handler that formats a message allocates too) ends the process with
//   exit 3, the environment's code, after killing the servers and removing the temp dirs the run
//   registered (real/process_registry.h); the process that installed it prints one stderr line
//   first, a forked worker does not (its parent reports the worker's end). Any other exception
//   that escapes a thread is a bug: it still aborts, through the handler it replaced.
#include <cstddef>

namespace lockstep {

inline constexpr size_t kThreadStackBytes = size_t{1} << 20;

// What an exit for want of memory says after the program's name and ": ".
inline constexpr char kOutOfMemoryWhy[] =
    "out of memory: the run needs more memory than this process may have (ulimit -d and -v, or "
    "the container's limit)";

void bound_thread_stacks();
void end_out_of_memory_within_contract();

}  // namespace lockstep
