// The form of a lease that lives in the lock's value: "OWNER:DEADLINE_MS", split at the last ':'.
#include "harness/value_lease.h"

#include <catch2/catch.hpp>

namespace lockstep {
namespace {

TEST_CASE("a value lease is the owner before the last ':' and the deadline after it",
          "[value_lease]") {
  const std::optional<ValueLease> lease = parse_value_lease("client-3:7:1767225601500");
  REQUIRE(lease.has_value());
  CHECK(lease->owner == "client-3:7");
  CHECK(lease->deadline_ms == 1767225601500);
}

TEST_CASE("a value of another form is no value lease", "[value_lease]") {
  CHECK_FALSE(parse_value_lease("owner").has_value());                   // no deadline
  CHECK_FALSE(parse_value_lease(":1767225601500").has_value());          // no owner
  CHECK_FALSE(parse_value_lease("owner:").has_value());                  // empty deadline
  CHECK_FALSE(parse_value_lease("owner:17672256015x").has_value());      // not a number
  CHECK_FALSE(parse_value_lease("owner:-5").has_value());                // negative
  CHECK_FALSE(parse_value_lease("owner:1234567890123456").has_value());  // 16 digits: too long
  CHECK(parse_value_lease("owner:123456789012345").has_value());         // 15 digits: fits
}

}  // namespace
}  // namespace lockstep
