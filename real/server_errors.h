#pragma once
// Typed errors of the real world's server processes.
//
// ServerUnavailable: the environment lacks something (a server binary, libfaketime). The message
// names what is missing and how to get it; the CLI maps it to exit code 3 and tests skip on it.
// ServerStartError: everything needed was there, but the server did not start or answer in time
// (a bad option, a port taken on restart). The message carries the tail of the server's log.
#include <stdexcept>

namespace lockstep::real {

class ServerUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ServerStartError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace lockstep::real
