#pragma once
// Output paths (--report DIR, --junit FILE) are checked before any run starts, so an hour-long
// matrix never ends in an error about where its results should have gone; and every write of a
// result file is checked, so a full disk is never exit 0. Both throw OutputError, which the CLI
// maps to exit 3 with the flag and the path.

#include <stdexcept>
#include <string>
#include <string_view>

namespace lockstep {

class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// DIR is a directory a file can be created in, or can be created (nothing is created here).
// "" is no flag.
void check_output_dir(std::string_view flag, const std::string& dir);

// FILE is not a directory and can be written: it exists writable, or it can be created.
// "" is no flag.
void check_output_file(std::string_view flag, const std::string& file);

// Writes TEXT to PATH (creating its directory), or throws OutputError naming the path and the reason.
void write_output_file(const std::string& path, const std::string& text);

}  // namespace lockstep
