#include "services/ext/driver/node_drivers.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "real/child_process.h"
#include "real/server_errors.h"

namespace lockstep::ext {

namespace {

// The packages services/ext/node/package.json pins; each must be under node_modules.
constexpr std::array<const char*, 5> kPinned = {"@kontsedal/locco", "redlock", "redis-semaphore",
                                                "ioredis", "@sinonjs/fake-timers"};
constexpr int kNodeMajorMin = 20;

bool exists(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0;
}

// `node --version` -> "v20.1.2" -> 20; 0 when it cannot tell.
int node_major(const std::string& node) {
  const std::string command = fmt::format("'{}' --version 2>/dev/null", node);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return 0;
  std::array<char, 64> buffer{};
  if (fgets(buffer.data(), static_cast<int>(buffer.size()), pipe.get()) == nullptr) return 0;
  return buffer[0] == 'v' ? std::atoi(buffer.data() + 1) : 0;
}

}  // namespace

std::string node_driver_dir() {
  if (const char* dir = std::getenv("LOCKSTEP_EXT_NODE_DIR"); dir != nullptr && *dir != '\0')
    return dir;
  return default_node_driver_dir();
}

std::string require_node_drivers() {
  const std::string setup_hint =
      "scripts/setup.sh installs it (apt-get install nodejs npm; npm ci --prefix "
      "services/ext/node)";
  const std::optional<std::string> node = real::find_on_path("node");
  if (!node) throw real::ServerUnavailable("node not found on PATH; " + setup_hint);
  static const int major = node_major(*node);  // one `node --version` per process
  if (major < kNodeMajorMin) {
    throw real::ServerUnavailable(fmt::format(
        "node {} is older than {} (or did not answer --version)", major, kNodeMajorMin));
  }
  const std::string dir = node_driver_dir();
  if (dir.empty()) {
    throw real::ServerUnavailable(
        "LOCKSTEP_EXT_NODE_DIR is not set: an installed lockstep has no source tree to find the "
        "Node drivers in; set it to a directory with driver.js and node_modules (the package "
        "installs them without node_modules in PREFIX/share/lockstep/ext/node: run `npm ci` "
        "there)");
  }
  if (!exists(dir + "/driver.js"))
    throw real::ServerUnavailable(fmt::format("no {}/driver.js", dir));
  for (const char* package : kPinned) {
    if (!exists(fmt::format("{}/node_modules/{}/package.json", dir, package))) {
      throw real::ServerUnavailable(
          fmt::format("{} is not installed in {}/node_modules; {}", package, dir, setup_hint));
    }
  }
  return *node;
}

std::vector<std::string> node_driver_args(const std::string& lib, const std::vector<int>& ports,
                                          int64_t command_timeout_ms,
                                          std::string_view endpoints_flag) {
  std::vector<std::string> args = {node_driver_dir() + "/driver.js", "--lib", lib};
  if (!ports.empty()) {
    std::string endpoints;
    for (int port : ports)
      endpoints += fmt::format("{}127.0.0.1:{}", endpoints.empty() ? "" : ",", port);
    args.emplace_back(endpoints_flag);
    args.push_back(endpoints);
  }
  if (command_timeout_ms > 0) {
    args.push_back("--command-timeout-ms");
    args.push_back(std::to_string(command_timeout_ms));
  }
  return args;
}

}  // namespace lockstep::ext
