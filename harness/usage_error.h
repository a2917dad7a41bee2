#pragma once
// Bad input, found by whichever stage reads it (an option, an adapter's environment, a report):
// the command line turns it into exit 2 with its one-line message.
#include <stdexcept>

namespace lockstep {

class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Output that could not be written: a result file, a report directory, a replay file a sweep
// saves. The command line turns it into exit 3 naming the path.
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A scenario whose faults this world (or this adapter's backend in it) cannot produce: bad usage
// for `run`, a cell that does not apply for `matrix`.
class WorldUnsupportedError : public UsageError {
 public:
  using UsageError::UsageError;
};

}  // namespace lockstep
