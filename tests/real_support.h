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

#include "scenarios/real/faketime.h"
#include "scenarios/real/server_errors.h"
#include "scenarios/real/redis_server.h"

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
  if (!real::find_libfaketime()) skip_or_fail("libfaketime not found (apt-get install faketime libfaketime)");
}

}  // namespace lockstep::testing
