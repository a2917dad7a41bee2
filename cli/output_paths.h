#pragma once
// Output paths (--report DIR, --junit FILE) are checked before any run starts, so an hour-long
// matrix never ends in an error about where its results should have gone; and every write of a
// result file is checked, so a full disk is never exit 0. Both throw OutputError, which the CLI
// maps to exit 3 with the flag and the path.

#include <stdexcept>
#include <string>
#include <string_view>

#include "harness/usage_error.h"

namespace lockstep {

// DIR is a directory a file can be created in, or can be created (nothing is created here).
// "" is no flag.
void check_output_dir(std::string_view flag, const std::string& dir);

// FILE is not a directory and can be written: it exists writable, or it can be created.
// "" is no flag.
void check_output_file(std::string_view flag, const std::string& file);

// Writes TEXT to PATH (creating its directory), or throws OutputError naming the path and the reason.
// Only a regular file or a character device (/dev/null) is written: opening a FIFO with no
// reader would wait for ever.
void write_output_file(const std::string& path, const std::string& text);

// stdout could not take the output (a full disk, a closed pipe): exit 3, naming stdout.
class StdoutError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Writes TEXT to stdout, or throws StdoutError with the reason.
void print_out(std::string_view text);

// A closed stdout or output file must end as exit 3 naming it, not as a silent death by SIGPIPE:
// SIGPIPE gets a handler that does nothing, so the write fails with EPIPE instead. A handler, not
// SIG_IGN, because an ignored signal stays ignored in the servers and drivers lockstep starts,
// while a handler is reset by exec.
void write_errors_instead_of_sigpipe();

}  // namespace lockstep
