// Prng, Random and its implementations: determinism, ranges, edge cases.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "lockstep/random.h"

namespace lockstep {
namespace {

// An independent transcription of the published reference algorithms (prng.di.unimi.it:
// splitmix64.c and xoshiro256starstar.c), so Prng is checked against them, not against itself.
struct Reference {
  std::array<uint64_t, 4> s{};

  static uint64_t splitmix(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  static Reference seeded(uint64_t seed) {
    Reference r;
    for (auto& word : r.s) word = splitmix(seed);
    return r;
  }
  uint64_t next() {
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }
};

TEST_CASE("the reference transcription reproduces the published test vectors", "[random]") {
  uint64_t x = 1234567;  // splitmix64, seed 1234567
  CHECK(Reference::splitmix(x) == 6457827717110365317ULL);
  CHECK(Reference::splitmix(x) == 3203168211198807973ULL);
  CHECK(Reference::splitmix(x) == 9817491932198370423ULL);

  Reference r{.s = {1, 2, 3, 4}};  // xoshiro256**, state {1, 2, 3, 4}
  CHECK(r.next() == 11520ULL);
  CHECK(r.next() == 0ULL);
  CHECK(r.next() == 1509978240ULL);
  CHECK(r.next() == 1215971899390074240ULL);
}

TEST_CASE("Prng is xoshiro256** seeded through splitmix64", "[random]") {
  for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{42}, ~uint64_t{0}}) {
    Prng prng(seed);
    Reference reference = Reference::seeded(seed);
    for (int i = 0; i < 64; ++i) REQUIRE(prng.next_u64() == reference.next());
  }
}

TEST_CASE("Prng(1) keeps its first outputs (regression: traces depend on them)", "[random]") {
  Prng prng(1);
  CHECK(prng.next_u64() == 12966619160104079557ULL);
  CHECK(prng.next_u64() == 9600361134598540522ULL);
  CHECK(prng.next_u64() == 10590380919521690900ULL);
  CHECK(prng.next_u64() == 7218738570589545383ULL);
}

TEST_CASE("equal seeds give equal sequences, different seeds different ones", "[random]") {
  Prng a(99), b(99), c(100);
  bool all_equal_to_c = true;
  for (int i = 0; i < 100; ++i) {
    const uint64_t value = a.next_u64();
    REQUIRE(value == b.next_u64());
    all_equal_to_c = all_equal_to_c && value == c.next_u64();
  }
  CHECK_FALSE(all_equal_to_c);
}

TEST_CASE("below() stays in range for small, odd and huge bounds", "[random]") {
  Prng prng(3);
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  for (uint64_t bound : {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{7}, uint64_t{1000},
                         (uint64_t{1} << 63) + 1, max}) {
    for (int i = 0; i < 2000; ++i) REQUIRE(prng.below(bound) < bound);
  }
  for (int i = 0; i < 100; ++i) REQUIRE(prng.below(1) == 0);
}

TEST_CASE("below() is roughly uniform", "[random]") {
  Prng prng(5);
  constexpr int kDraws = 100'000;
  std::array<int, 10> counts{};
  for (int i = 0; i < kDraws; ++i) ++counts[prng.below(10)];
  // Expected 10,000 each, standard deviation ~95: 6 sd of slack, and the seed is fixed.
  for (int count : counts) CHECK(std::abs(count - kDraws / 10) < 600);
}

TEST_CASE("below() is unbiased where modulo would not be", "[random]") {
  // With bound = 2/3 * 2^64, x % bound lands in the lower half 3/4 of the time; unbiased: 1/2.
  Prng prng(11);
  const uint64_t bound = std::numeric_limits<uint64_t>::max() / 3 * 2;
  int lower_half = 0;
  constexpr int kDraws = 20'000;
  for (int i = 0; i < kDraws; ++i) lower_half += prng.below(bound) < bound / 2 ? 1 : 0;
  CHECK(std::abs(lower_half - kDraws / 2) < 600);  // sd ~71
}

TEST_CASE("between() is inclusive and handles the full int64 range", "[random]") {
  Prng prng(8);
  CHECK(prng.between(5, 5) == 5);
  std::set<int64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    const int64_t value = prng.between(-3, 3);
    REQUIRE(value >= -3);
    REQUIRE(value <= 3);
    seen.insert(value);
  }
  CHECK(seen.size() == 7);
  bool negative = false, positive = false;
  for (int i = 0; i < 100; ++i) {
    const int64_t value =
        prng.between(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    negative = negative || value < 0;
    positive = positive || value > 0;
  }
  CHECK(negative);
  CHECK(positive);
}

TEST_CASE("chance() edge ratios are exact and every call takes one draw", "[random]") {
  Prng prng(13);
  for (int i = 0; i < 1000; ++i) {
    REQUIRE_FALSE(prng.chance(0, 7));
    REQUIRE(prng.chance(7, 7));
    REQUIRE(prng.chance(1, 1));
  }
  int heads = 0;
  for (int i = 0; i < 10'000; ++i) heads += prng.chance(1, 2) ? 1 : 0;
  CHECK(std::abs(heads - 5000) < 300);  // sd 50

  Prng a(21), b(21);
  a.chance(0, 5);
  b.next_u64();
  CHECK(a.next_u64() == b.next_u64());
}

TEST_CASE("fork() takes one draw and yields an independent stream", "[random]") {
  Prng parent(17), twin(17);
  Prng child = parent.fork();
  twin.next_u64();
  CHECK(parent.next_u64() == twin.next_u64());  // the parent moved by exactly one draw

  Prng again(17);
  Prng child_again = again.fork();
  Prng sibling = again.fork();
  int equal_to_parent = 0, equal_to_sibling = 0;
  for (int i = 0; i < 100; ++i) {
    const uint64_t value = child.next_u64();
    REQUIRE(value == child_again.next_u64());  // forks are deterministic
    equal_to_parent += value == parent.next_u64() ? 1 : 0;
    equal_to_sibling += value == sibling.next_u64() ? 1 : 0;
  }
  CHECK(equal_to_parent == 0);
  CHECK(equal_to_sibling == 0);
}

TEST_CASE("hex_token() is lowercase hex of the drawn bytes, low byte first", "[random]") {
  SeededRandom random(23);
  Prng prng(23);
  const uint64_t first = prng.next_u64();
  const std::string token = random.hex_token(8);
  REQUIRE(token.size() == 16);
  for (int i = 0; i < 8; ++i) {
    const auto byte = static_cast<unsigned>((first >> (8 * i)) & 0xff);
    CHECK(std::stoul(token.substr(2 * static_cast<size_t>(i), 2), nullptr, 16) == byte);
  }
  for (int bytes : {1, 9, 16}) {
    const std::string t = random.hex_token(bytes);
    CHECK(t.size() == 2 * static_cast<size_t>(bytes));
    CHECK(t.find_first_not_of("0123456789abcdef") == std::string::npos);
  }
  CHECK(random.hex_token() != random.hex_token());
  CHECK(random.hex_token().size() == 32);
}

TEST_CASE("Random::below() over a seeded source is deterministic and in range", "[random]") {
  SeededRandom a(29), b(29);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t value = a.below(6);
    REQUIRE(value < 6);
    REQUIRE(value == b.below(6));
  }
}

TEST_CASE("SystemRandom instances differ and one is safe to share between threads", "[random]") {
  SystemRandom first, second;
  CHECK(first.hex_token() != second.hex_token());

  constexpr int kThreads = 4, kDraws = 1000;
  std::vector<std::vector<uint64_t>> drawn(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&first, &out = drawn[static_cast<size_t>(t)]] {
      for (int i = 0; i < kDraws; ++i) out.push_back(first.next_u64());
    });
  }
  for (auto& thread : threads) thread.join();
  std::set<uint64_t> distinct;
  for (const auto& values : drawn) distinct.insert(values.begin(), values.end());
  CHECK(distinct.size() == kThreads * kDraws);  // a torn state would repeat values
}

TEST_CASE("SystemRandom values differ between a parent and its fork()ed child", "[random]") {
  SystemRandom random;
  (void)random.hex_token();  // the generator has been used before the fork, as in a server
  std::array<int, 2> pipe_fds{};
  REQUIRE(pipe(pipe_fds.data()) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const std::string token = random.hex_token();
    const bool sent =
        write(pipe_fds[1], token.data(), token.size()) == static_cast<ssize_t>(token.size());
    _exit(sent ? 0 : 1);
  }
  close(pipe_fds[1]);
  const std::string mine = random.hex_token();
  std::string childs(32, '\0');
  size_t got = 0;
  while (got < childs.size()) {  // bounded: the child writes 32 bytes, then EOF ends the loop
    const ssize_t n = read(pipe_fds[0], childs.data() + got, childs.size() - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(pipe_fds[0]);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(got == 32);
  CHECK(mine.size() == 32);  // 128 bits
  CHECK(mine != childs);
}

TEST_CASE("precondition violations throw instead of returning garbage", "[random]") {
  Prng prng(31);
  CHECK_THROWS_WITH(prng.below(0), Catch::Contains("bound > 0"));
  CHECK_THROWS_AS(prng.between(2, 1), std::logic_error);
  CHECK_THROWS_AS(prng.chance(3, 2), std::logic_error);
  CHECK_THROWS_AS(prng.chance(0, 0), std::logic_error);
  SeededRandom random(31);
  CHECK_THROWS_AS(random.below(0), std::logic_error);
  CHECK_THROWS_AS(random.hex_token(0), std::logic_error);
}

}  // namespace
}  // namespace lockstep
