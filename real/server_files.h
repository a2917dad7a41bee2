#pragma once
// The files of a server process the harness starts: a fresh private directory for its data and
// logs, and the tail of a log for error messages.
#include <cstddef>
#include <string>
#include <string_view>

namespace lockstep::real {

// A new directory under the system temp dir, "lockstep-<kind>-XXXXXX" (mkdtemp: mode 0700).
// Throws std::system_error when it cannot be made.
std::string make_server_dir(std::string_view kind);

// Removes a directory made by make_server_dir and everything in it (errors ignored: it is a
// temp dir), and clears `dir`. No-op when dir is empty.
void remove_server_dir(std::string& dir);

// The last bytes_max of the file at path; "" when it cannot be read.
std::string tail_of_file(const std::string& path, size_t bytes_max);

}  // namespace lockstep::real
