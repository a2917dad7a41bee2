#pragma once
// What the postgres tests share: skip (exit 77) or, in CI, fail when PostgreSQL 15 is missing;
// statements that must succeed.
#include <string>

#include <catch2/catch.hpp>

#include "real/server_errors.h"
#include "services/postgres/client/pg_connection.h"
#include "services/postgres/real/pg_server.h"
#include "tests/real_support.h"

namespace lockstep::testing {

// PostgreSQL is a Debian package this project installs (services/postgres/packages.txt): in CI
// its absence fails the test.
inline void require_postgres() {
  try {
    real::PgServerProcess::bin_dir();
  } catch (const real::ServerUnavailable& e) {
    skip_or_fail(e.what());
  }
}

inline PgResult must(PgConnection& connection, const std::string& sql) {
  PgResult result = connection.execute(sql);
  INFO(sql << " -> " << describe(result));
  REQUIRE(result.ok());
  return result;
}

}  // namespace lockstep::testing
