#pragma once
// Shared by every test that needs a real server or tool.
//
// When the environment lacks one, a test must never pass silently:
// - outside CI (env CI unset) it prints "skipped: WHAT (HOW TO GET IT)" and exits the process with
//   code 77, which ctest reports as skipped (SKIP_RETURN_CODE 77 in tests/CMakeLists.txt; ctest
//   runs each test case in its own process);
// - in CI (env CI set) it fails loudly: CI must have the server installed.
#include <cstdlib>
#include <iostream>
#include <string>

#include <catch2/catch.hpp>

#include "real/faketime.h"
#include "real/server_errors.h"
#include "services/mongo/real/mongod_server.h"
#include "services/redis/real/redis_server.h"

namespace lockstep::testing {

inline constexpr int kSkipExitCode = 77;

inline void skip_or_fail(const std::string& what) {
  if (std::getenv("CI") != nullptr) FAIL("required in CI: " << what);
  std::cout << "skipped: " << what << std::endl;
  std::exit(kSkipExitCode);
}

inline void require_redis_server() {
  try {
    real::RedisServerProcess::binary_path();
  } catch (const real::ServerUnavailable&) {
    skip_or_fail("redis-server not found (apt-get install redis-server)");
  }
}

inline void require_libfaketime() {
  require_redis_server();
  if (!real::find_libfaketime())
    skip_or_fail("libfaketime not found (apt-get install faketime libfaketime)");
}

// MongoDB is not in Debian, so unlike Redis a missing mongod is a skip in CI too (exit 77 with
// the reason), never a failure and never a silent pass. Returns when there is a deployment to
// test: LOCKSTEP_MONGO_URI is set, or mongod is on PATH.
inline void require_mongo() {
  const char* uri = std::getenv("LOCKSTEP_MONGO_URI");
  if (uri != nullptr && *uri != '\0') return;
  try {
    real::MongodProcess::binary_path();
  } catch (const real::ServerUnavailable&) {
    std::cout << "skipped: no mongod (put mongod on PATH or set LOCKSTEP_MONGO_URI)" << std::endl;
    std::exit(kSkipExitCode);
  }
}

}  // namespace lockstep::testing
