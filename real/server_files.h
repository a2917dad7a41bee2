#pragma once
// The files of a server process the harness starts: a fresh private directory for its data and
// logs, and the tail of a log for error messages.
#include <cstddef>
#include <string>
#include <string_view>

namespace lockstep::real {

// A new directory under the system temp dir, "lockstep-<kind>-<pid>-XXXXXX" (mkdtemp: mode
// 0700), registered so that a fatal signal removes it (process_registry.h). First removes what
// a killed run left: dirs of that form whose pid no longer exists (never a live process's).
// Throws std::system_error when it cannot be made.
std::string make_server_dir(std::string_view kind);

// Removes a directory made by make_server_dir and everything in it (errors ignored: it is a
// temp dir), unregisters it, and clears `dir`. No-op when dir is empty.
void remove_server_dir(std::string& dir);

// Removes the dirs "lockstep-<kind>-<pid>-XXXXXX" under parent whose pid is not a live process
// (SIGKILLed runs leave them). Returns how many it removed.
size_t remove_stale_server_dirs(const std::string& parent);

// Removes the files named PREFIX<pid> under dir whose pid no longer exists: a library's per-process
// files (shared-memory counters) that a process killed by a signal leaves, and that the next
// process given that pid would trip over. Returns how many it removed.
size_t remove_stale_pid_files(const std::string& dir, const std::string& prefix);

// The last bytes_max of the file at path; "" when it cannot be read.
std::string tail_of_file(const std::string& path, size_t bytes_max);

}  // namespace lockstep::real
