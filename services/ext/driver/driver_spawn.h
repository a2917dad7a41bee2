#pragma once
// Starting a driver process (services/ext/PROTOCOL.md), for the real-world driver and the co-simulated one
// alike: its stdin and stdout are Unix sockets (send(MSG_NOSIGNAL) to a dead driver is EPIPE,
// never SIGPIPE), its stderr a pipe. The child dies with this process (PR_SET_PDEATHSIG) and is in
// the process registry, so a fatal signal kills and reaps it. Every descriptor is close-on-exec
// here; the child gets only its three.
#include <sys/types.h>

#include <string>
#include <vector>

namespace lockstep::ext {

struct SpawnedDriver {
  pid_t pid = -1;
  int to_driver_fd = -1;    // the driver's stdin
  int from_driver_fd = -1;  // the driver's stdout
  int stderr_fd = -1;       // the driver's stderr
};

// program is an absolute path. Throws std::system_error naming the call that failed, with nothing
// left open. stderr_nonblocking: the stderr read end is O_NONBLOCK (drained between messages).
SpawnedDriver spawn_driver(const std::string& program, const std::vector<std::string>& args,
                           bool stderr_nonblocking);

}  // namespace lockstep::ext
