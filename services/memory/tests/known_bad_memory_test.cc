// The known-bad memory lock: a release that ignores its caller's value, built around the
// production store (which itself stays owner-checked).
#include <catch2/catch.hpp>

#include "lockstep/clock.h"
#include "services/memory/adapter/memory_adapter.h"
#include "services/memory/known_bad/known_bad_memory.h"

namespace lockstep {
namespace {

class FixedClock final : public Clock {
 public:
  int64_t now_us() override { return 5'000'000; }
  int64_t monotonic_us() override { return 5'000'000; }
  void sleep_for_us(int64_t) override {}
};

LockSpec owned_by(std::string key, std::string value) {
  return {.key = std::move(key), .value = std::move(value), .ttl_ms = 100};
}

TEST_CASE("the bad variant releases another owner's lock, which the store alone refuses",
          "[known-bad]") {
  FixedClock clock;
  MemoryAdapter store({.clock = &clock});
  BadMemoryNoOwnerCheck bad(store);
  REQUIRE(bad.create_lock(owned_by("k", "a")).ok());
  CHECK(store.release_lock(owned_by("k", "intruder")).status == AdapterStatus::not_owner);
  CHECK(bad.release_lock(owned_by("k", "intruder")).ok());
  CHECK(bad.is_valid_lock(owned_by("k", "a")).status == AdapterStatus::not_owner);
  CHECK(bad.release_lock(owned_by("k", "intruder")).status ==
        AdapterStatus::not_owner);  // nothing left
  CHECK(bad.create_lock(owned_by("k", "b")).ok());
}

TEST_CASE("the bad variant's release of a key never granted is the store's", "[known-bad]") {
  FixedClock clock;
  MemoryAdapter store({.clock = &clock});
  BadMemoryNoOwnerCheck bad(store);
  CHECK(bad.release_lock(owned_by("free", "x")).status == AdapterStatus::not_owner);
}

}  // namespace
}  // namespace lockstep
