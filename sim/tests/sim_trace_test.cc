#include <catch2/catch.hpp>

#include <string>

#include "sim/trace.h"

using namespace lockstep::sim;

TEST_CASE("trace: lines are '<t_us> <text>' and indexed", "[sim][trace]") {
  Trace t;
  CHECK(t.add(5, "hello") == 0);
  CHECK(t.add(12, "node 2 pause 15000us") == 1);
  CHECK(t.size() == 2);
  CHECK(t.line(0) == "5 hello");
  CHECK(t.line(1) == "12 node 2 pause 15000us");
  CHECK(t.line(2).empty());
}

TEST_CASE("trace: the hash (version 3, version 2's fold) folds each line's time and record",
          "[sim][trace]") {
  // Expected values computed independently (a few lines of Python with big integers) from the
  // definition in sim/trace.h: word(w) = fold((state ^ w ^ salt) * multiplier), bytes as length
  // then little-endian words, a text line as (time, text tag, bytes, end tag), the count last.
  STATIC_REQUIRE(Trace::kHashVersion == 3);
  Trace t;
  CHECK(t.hash_hex() == "55ba897d2af3577c");  // no line: only the count, 0
  t.add(5, "hello");
  CHECK(t.hash_hex() == "6baec7c6ddf61e5c");
  t.add(12, "node 2 pause 15000us");
  CHECK(t.hash_hex() == "15ec19092e85e332");
}

TEST_CASE("trace: a formatted line is its text when kept, and hashed by its arguments",
          "[sim][trace]") {
  const auto hash_of = [](const TraceLine& line) {
    Trace t(0);
    t.add(7, line);
    return t.hash();
  };
  const std::string name = "redis-0";
  Trace kept;
  kept.add(7, FormattedLine<int, std::string, int64_t>("node {} ({}) pause {:+}us", 2, name, 15));
  CHECK(kept.line(0) == "7 node 2 (redis-0) pause +15us");

  const uint64_t base = hash_of(FormattedLine<int, std::string>("node {} {}", 2, name));
  CHECK(base == hash_of(FormattedLine<int, std::string>("node {} {}", 2, name)));
  CHECK(base != hash_of(FormattedLine<int, std::string>("node {} {}", 3, name)));
  CHECK(base != hash_of(FormattedLine<int, std::string>("node {} {}", 2, std::string("redis-1"))));
  CHECK(base != hash_of(FormattedLine<int, std::string>("node {}  {}", 2, name)));
  // Strings are length-prefixed: moving a byte from one argument to the next changes the record.
  CHECK(hash_of(FormattedLine<const char*, const char*>("{}{}", "ab", "c")) !=
        hash_of(FormattedLine<const char*, const char*>("{}{}", "a", "bc")));
  // The same text from a text line and from a format is not the same record.
  CHECK(hash_of(TextLine("node 2 redis-0")) != base);
}

TEST_CASE("trace: the hash is the same whether lines are kept or not", "[sim][trace]") {
  Trace kept;
  Trace unkept(0);
  for (Trace* t : {&kept, &unkept}) {
    t->add(1, "start");
    t->add(3, FormattedLine<int, double>("x={} y={}", 4, 0.5));
  }
  CHECK(kept.lines().size() == 2);
  CHECK(kept.line(1) == "3 x=4 y=0.5");
  CHECK(unkept.lines().empty());
  CHECK(kept.hash() == unkept.hash());
}

TEST_CASE("trace: line boundaries and times are part of the hash", "[sim][trace]") {
  Trace a;
  a.add(1, "ab");
  Trace b;
  b.add(1, "a");
  b.add(1, "b");
  Trace c;
  c.add(2, "ab");
  CHECK(a.hash() != b.hash());
  CHECK(a.hash() != c.hash());
}

TEST_CASE("trace: lines beyond keep_lines_max are hashed but not kept", "[sim][trace]") {
  Trace bounded(2);
  Trace full;
  for (int i = 0; i < 5; ++i) {
    bounded.add(i, "x");
    full.add(i, "x");
  }
  CHECK(bounded.size() == 5);
  CHECK(bounded.lines().size() == 2);
  CHECK(bounded.line(1) == "1 x");
  CHECK(bounded.line(4).empty());
  CHECK(bounded.hash() == full.hash());
  CHECK(full.line(4) == "4 x");

  Trace none(0);
  none.add(0, "x");
  CHECK(none.lines().empty());
  CHECK(none.size() == 1);
}

TEST_CASE("trace: hex is 16 lowercase digits with leading zeros", "[sim][trace]") {
  // Find a line whose hash has a leading zero nibble; hash_hex must still be 16 digits.
  for (int i = 0; i < 10'000; ++i) {
    Trace t;
    t.add(i, "probe");
    if ((t.hash() >> 60) != 0) continue;
    CHECK(t.hash_hex().size() == 16);
    CHECK(t.hash_hex()[0] == '0');
    CHECK(t.hash_hex().find_first_not_of("0123456789abcdef") == std::string::npos);
    return;
  }
  FAIL("no hash with a leading zero nibble found");
}

TEST_CASE("trace: one that neither hashes nor keeps counts lines and reads no text",
          "[sim][trace]") {
  Trace counting(0, false);
  CHECK_FALSE(counting.wants_text());
  CHECK(counting.add(5, "hello") == 0);
  CHECK(counting.add(6, "") == 1);
  CHECK(counting.size() == 2);
  CHECK(counting.hash_hex().empty());  // no hash to report, rather than the basis
  CHECK(Trace(0, true).wants_text());
  CHECK(Trace(1, false).wants_text());
}
