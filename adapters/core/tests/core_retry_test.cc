// RetrySettings validation: coherent shapes pass, each contradiction or out-of-range value fails
// with a ValidationError that names the parameter and says why.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "adapters/core/errors.h"
#include "adapters/core/retry.h"

namespace lockstep {
namespace {

int64_t one_ms(const RetryAttempt&) { return 1; }

// Requires validate() to fail naming `parameter`, with every one of `mentions` in the message.
void require_invalid(const RetrySettings& settings, const std::string& parameter,
                     const std::vector<std::string>& mentions = {}) {
  try {
    validate(settings);
    FAIL("validate() accepted settings that should name " << parameter);
  } catch (const ValidationError& error) {
    INFO(error.what());
    CHECK(error.parameter() == parameter);
    CHECK_THAT(error.what(), Catch::Contains(parameter));
    for (const auto& mention : mentions) CHECK_THAT(error.what(), Catch::Contains(mention));
  }
}

TEST_CASE("coherent settings are valid", "[retry]") {
  CHECK_NOTHROW(validate(RetrySettings{}));
  CHECK_NOTHROW(validate(RetrySettings::none()));
  CHECK_NOTHROW(validate({.retry_delay_ms = 200, .retry_times = 10}));
  CHECK_NOTHROW(validate({.retry_delay_ms = 200, .retry_times = 0}));
  CHECK_NOTHROW(validate(
      {.retry_delay_ms = 200, .retry_times = 10, .total_time_ms = 1000, .retry_jitter_ms = 50}));
  CHECK_NOTHROW(validate({.retry_delay_fn = one_ms}));
  CHECK_NOTHROW(validate({.retry_times = 3, .retry_delay_fn = one_ms}));
  CHECK_NOTHROW(validate({.total_time_ms = 1000, .retry_delay_fn = one_ms}));
}

TEST_CASE("the limits themselves are valid", "[retry]") {
  CHECK_NOTHROW(validate({.retry_delay_ms = kRetryDelayMaxMs,
                          .retry_times = kMaxRetryTimes,
                          .total_time_ms = kTotalTimeMaxMs,
                          .retry_jitter_ms = kRetryDelayMaxMs}));
}

TEST_CASE("a delay function and a fixed delay contradict each other", "[retry]") {
  require_invalid({.retry_delay_ms = 100, .retry_times = 3, .retry_delay_fn = one_ms},
                  "retry_delay_ms", {"retry_delay_fn", "not both"});
}

TEST_CASE("jitter belongs to a fixed delay only", "[retry]") {
  require_invalid({.retry_jitter_ms = 10, .retry_delay_fn = one_ms}, "retry_jitter_ms",
                  {"retry_delay_fn"});
  require_invalid({.retry_times = 0, .retry_jitter_ms = 10}, "retry_jitter_ms", {"retry_delay_ms"});
  require_invalid(RetrySettings{.retry_jitter_ms = 10}, "retry_jitter_ms", {"retry_delay_ms"});
}

TEST_CASE("a fixed delay needs both the delay and the count", "[retry]") {
  require_invalid(RetrySettings{.retry_delay_ms = 100}, "retry_times", {"retry_delay_ms"});
  require_invalid(RetrySettings{.retry_times = 3}, "retry_delay_ms", {"retry_times"});
}

TEST_CASE("a total time without any retry configured is rejected", "[retry]") {
  require_invalid(RetrySettings{.total_time_ms = 1000}, "total_time_ms", {"no retries"});
}

TEST_CASE("out-of-range values name the parameter and the allowed range", "[retry]") {
  for (int64_t delay : {int64_t{0}, int64_t{-1}, kRetryDelayMaxMs + 1}) {
    require_invalid({.retry_delay_ms = delay, .retry_times = 1}, "retry_delay_ms",
                    {"must be in", std::to_string(delay)});
  }
  for (int times : {-1, kMaxRetryTimes + 1}) {
    require_invalid({.retry_delay_ms = 10, .retry_times = times}, "retry_times",
                    {"must be in", std::to_string(times)});
  }
  for (int64_t jitter : {int64_t{-1}, kRetryDelayMaxMs + 1}) {
    require_invalid({.retry_delay_ms = 10, .retry_times = 1, .retry_jitter_ms = jitter},
                    "retry_jitter_ms", {"must be in", std::to_string(jitter)});
  }
  for (int64_t total : {int64_t{0}, int64_t{-5}, kTotalTimeMaxMs + 1}) {
    require_invalid({.retry_delay_ms = 10, .retry_times = 1, .total_time_ms = total},
                    "total_time_ms", {"must be in", std::to_string(total)});
  }
}

TEST_CASE("a ValidationError is a LockError whose message starts with the parameter", "[retry]") {
  const ValidationError error("retry_times", "must be >= 0");
  const LockError& base = error;
  CHECK(std::string(base.what()) == "invalid retry_times: must be >= 0");
  CHECK(error.parameter() == "retry_times");
}

}  // namespace
}  // namespace lockstep
