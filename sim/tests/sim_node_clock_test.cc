#include <catch2/catch.hpp>

#include <cstdint>
#include <stdexcept>

#include "sim/node_clock.h"

using namespace lockstep::sim;

TEST_CASE("node clock: offset on top of the local epoch, no drift", "[sim][clock]") {
  const NodeClock c({.offset_us = 15'000});
  CHECK(c.local_us(0) == kLocalEpochUs + 15'000);
  CHECK(c.local_us(1'000'000) == kLocalEpochUs + 15'000 + 1'000'000);
  CHECK(c.local_duration(777) == 777);
  CHECK(c.true_duration_for(777) == 777);
}

TEST_CASE("node clock: drift maps durations both ways, rounding toward the sleeper",
          "[sim][clock]") {
  const NodeClock fast({.drift_ppm = 100'000});  // +10%
  CHECK(fast.local_duration(1'000) == 1'100);
  // 1000 / 1.1 = 909.09...: the sleep must not end early, so 910.
  CHECK(fast.true_duration_for(1'000) == 910);
  CHECK(fast.local_duration(910) >= 1'000);
  CHECK(fast.local_duration(909) < 1'000);

  const NodeClock slow({.drift_ppm = -100'000});  // -10%
  CHECK(slow.local_duration(1'000) == 900);
  CHECK(slow.true_duration_for(900) == 1'000);
  CHECK(slow.true_duration_for(901) == 1'002);  // 901 / 0.9 = 1001.1
  CHECK(slow.local_us(1'000) == kLocalEpochUs + 900);

  CHECK(fast.true_duration_for(0) == 0);
  CHECK(fast.true_duration_for(-5) == 0);
}

TEST_CASE("node clock: true_duration_for is the least duration that measures enough",
          "[sim][clock]") {
  for (int64_t drift : {-999'999, -333'333, -1, 0, 1, 7, 250'000, 999'999}) {
    const NodeClock c({.drift_ppm = drift});
    for (int64_t local : {1, 2, 3, 999, 1'000, 123'457, 10'000'000}) {
      const TimeUs t = c.true_duration_for(local);
      INFO("drift " << drift << " local " << local << " -> true " << t);
      CHECK(c.local_duration(t) >= local);
      CHECK(c.local_duration(t - 1) < local);
    }
  }
}

TEST_CASE("node clock: jumps move the wall reading, not durations", "[sim][clock]") {
  NodeClock c({.drift_ppm = 100'000});
  const int64_t before = c.local_us(1'000);
  c.jump(1'000, 5'000'000);
  CHECK(c.local_us(1'000) == before + 5'000'000);
  CHECK(c.local_us(2'000) == before + 5'000'000 + 1'100);
  CHECK(c.true_duration_for(1'000) == 910);
  c.jump(2'000, -20'000'000);
  CHECK(c.local_us(2'000) == before + 5'000'000 + 1'100 - 20'000'000);
  CHECK(c.drift_ppm() == 100'000);
}

TEST_CASE("node clock: the monotonic reading drifts with the oscillator and never jumps",
          "[sim][clock]") {
  NodeClock c({.offset_us = 7'000'000, .drift_ppm = 100'000});
  CHECK(c.monotonic_us(0) == kMonotonicOriginUs);  // the wall offset is not the oscillator's
  CHECK(c.monotonic_us(1'000) == kMonotonicOriginUs + 1'100);
  c.jump(1'000, -5'000'000);  // an NTP step back
  CHECK(c.monotonic_us(1'000) == kMonotonicOriginUs + 1'100);
  CHECK(c.monotonic_us(2'000) == kMonotonicOriginUs + 2'200);
  c.set_drift_ppm(2'000, -500'000);
  CHECK(c.monotonic_us(2'000) == kMonotonicOriginUs + 2'200);  // continuous at the change
  CHECK(c.monotonic_us(4'000) == kMonotonicOriginUs + 3'200);
  c.jump(4'000, 60'000'000);
  CHECK(c.monotonic_us(4'000) == kMonotonicOriginUs + 3'200);
}

TEST_CASE("node clock: a drift change starts a new segment at now", "[sim][clock]") {
  NodeClock c;
  CHECK(c.local_us(1'000'000) == kLocalEpochUs + 1'000'000);
  c.set_drift_ppm(1'000'000, 500'000);
  CHECK(c.local_us(1'000'000) == kLocalEpochUs + 1'000'000);  // continuous at the change
  CHECK(c.local_us(2'000'000) == kLocalEpochUs + 2'500'000);
  CHECK(c.drift_ppm() == 500'000);
  // Reading before the segment start would need history the clock no longer has.
  CHECK_THROWS_AS(c.local_us(999'999), std::logic_error);
}

TEST_CASE("node clock: the true time a wall reading is reached", "[sim][clock]") {
  NodeClock c({.offset_us = -500, .drift_ppm = 100'000});
  const int64_t start = c.local_us(0);
  CHECK(c.true_time_when_local_reaches(start, 0) == 0);
  CHECK(c.true_time_when_local_reaches(start - 10, 0) == 0);  // already past
  const TimeUs t = c.true_time_when_local_reaches(start + 1'000, 0);
  CHECK(t == 910);
  CHECK(c.local_us(t) >= start + 1'000);
  CHECK(c.local_us(t - 1) < start + 1'000);
  CHECK(c.true_time_when_local_reaches(start + 1'000, 5'000) == 5'000);
  c.jump(100, 10'000);
  CHECK(c.true_time_when_local_reaches(start + 1'000, 100) == 100);  // the jump got it there
}

TEST_CASE("node clock: 128-bit intermediates keep long runs exact", "[sim][clock]") {
  const NodeClock c({.drift_ppm = 999'999});
  const TimeUs year_us = 365LL * 24 * 3600 * kUsPerSec;
  // year_us * 1'999'999 overflows int64 (about 6.3e19), the result does not.
  CHECK(c.local_duration(year_us) == year_us * 2 - year_us / 1'000'000);
  CHECK(c.true_duration_for(c.local_duration(year_us)) == year_us);
}

TEST_CASE("node clock: durations are the 128-bit definition's, either side of int64's reach",
          "[sim][clock]") {
  // The definition, in 128 bits: floor(T * rate / 1e6), and the least T that measures local_us.
  __extension__ using Int128 = __int128;
  const auto saturate = [](Int128 v) {
    return v > INT64_MAX ? INT64_MAX : static_cast<int64_t>(v);
  };
  for (const int64_t drift_ppm : {-999'999LL, -123'457LL, -1LL, 0LL, 1LL, 314'159LL, 999'999LL}) {
    const NodeClock c({.drift_ppm = drift_ppm});
    const int64_t rate = 1'000'000 + drift_ppm;
    // Around where the products leave int64, and the extremes.
    const int64_t local_edge = (INT64_MAX - rate) / 1'000'000;
    const int64_t true_edge = INT64_MAX / rate;
    for (const int64_t base : {int64_t{0}, int64_t{1}, local_edge, true_edge, INT64_MAX / 2}) {
      for (int64_t d = -2; d <= 2; ++d) {
        if (d < 0 ? base < -d : base > INT64_MAX - d) continue;  // v must be an int64 >= 0
        const int64_t v = base + d;
        INFO("drift " << drift_ppm << " value " << v);
        CHECK(c.local_duration(v) == saturate(Int128{v} * rate / 1'000'000));
        if (v > 0) {
          CHECK(c.true_duration_for(v) == saturate((Int128{v} * 1'000'000 + rate - 1) / rate));
        }
      }
    }
    CHECK(c.local_duration(INT64_MAX) == saturate(Int128{INT64_MAX} * rate / 1'000'000));
  }
}

TEST_CASE("node clock: drift must keep the clock moving forward", "[sim][clock]") {
  CHECK_THROWS_AS(NodeClock({.drift_ppm = -1'000'000}), std::logic_error);
  CHECK_THROWS_AS(NodeClock({.drift_ppm = 1'000'000}), std::logic_error);
  NodeClock c;
  CHECK_THROWS_AS(c.set_drift_ppm(0, -2'000'000), std::logic_error);
  CHECK(c.drift_ppm() == 0);
}
