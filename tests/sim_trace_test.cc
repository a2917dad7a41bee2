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

TEST_CASE("trace: the hash is FNV-1a 64 over newline-terminated lines", "[sim][trace]") {
  Trace t;
  CHECK(t.hash() == 0xcbf29ce484222325ULL);  // the FNV offset basis: nothing hashed yet
  CHECK(t.hash_hex() == "cbf29ce484222325");
  t.add(5, "hello");
  CHECK(t.hash_hex() == "e85d700f9d2f7946");  // FNV-1a 64 of "5 hello\n", computed independently
  t.add(12, "node 2 pause 15000us");
  CHECK(t.hash_hex() == "733fd3eadd5b761d");
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
