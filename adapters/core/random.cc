#include "adapters/core/random.h"

#include <sys/random.h>

#include <cerrno>

#include "base/check.h"

namespace lockstep {
namespace {

__extension__ typedef unsigned __int128 Uint128;  // GCC/Clang; __extension__ quiets -Wpedantic

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// splitmix64 (Steele, Lea, Flood; Vigna's reference), used only to expand a seed into state.
uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A rejection happens with probability < 1/2, so 128 in a row means a broken generator (2^-128).
constexpr int kRejectionsMax = 128;

// Lemire, "Fast Random Integer Generation in an Interval" (2019): the high word of x * bound is
// uniform in [0, bound) once draws whose low word falls below 2^64 mod bound are rejected.
template <class Next>
uint64_t lemire_below(uint64_t bound, Next&& next) {
  LOCKSTEP_CHECK(bound > 0, "below() needs bound > 0");
  Uint128 product = static_cast<Uint128>(next()) * bound;
  auto low = static_cast<uint64_t>(product);
  if (low < bound) {
    const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
    for (int rejections = 0; low < threshold; ++rejections) {
      LOCKSTEP_CHECK(rejections < kRejectionsMax, "generator keeps producing rejected values");
      product = static_cast<Uint128>(next()) * bound;
      low = static_cast<uint64_t>(product);
    }
  }
  return static_cast<uint64_t>(product >> 64);
}

// getrandom(2) returns at most what was asked; 8 bytes never come short once the pool is ready,
// but an interrupted call is retried. The bound only guards against a kernel that keeps failing.
constexpr int kGetrandomTriesMax = 16;

}  // namespace

// splitmix64 is a bijection of its counter, so four consecutive outputs are never all zero: the
// state is always a valid xoshiro state.
Prng::Prng(uint64_t seed) {
  for (uint64_t& word : state_) word = splitmix64(seed);
}

// xoshiro256** 1.0 (Blackman and Vigna), as in the reference xoshiro256starstar.c.
uint64_t Prng::next_u64() {
  auto& s = state_;
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

uint64_t Prng::below(uint64_t bound) {
  return lemire_below(bound, [this] { return next_u64(); });
}

int64_t Prng::between(int64_t lo, int64_t hi) {
  LOCKSTEP_CHECK(lo <= hi, "between() needs lo <= hi");
  // Unsigned arithmetic wraps, so the span of any int64 range is exact; 0 means all 2^64 values.
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
  const uint64_t offset = span == 0 ? next_u64() : below(span);
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + offset);
}

// Always takes one draw, whatever the ratio, so changing a probability never shifts the rest of
// the sequence.
bool Prng::chance(uint64_t numerator, uint64_t denominator) {
  LOCKSTEP_CHECK(denominator > 0, "chance() needs denominator > 0");
  LOCKSTEP_CHECK(numerator <= denominator, "chance() needs numerator <= denominator");
  return below(denominator) < numerator;
}

// The child is seeded (through splitmix64) from one draw of the parent.
Prng Prng::fork() { return Prng(next_u64()); }

uint64_t Random::below(uint64_t bound) {
  return lemire_below(bound, [this] { return next_u64(); });
}

std::string Random::hex_token(int bytes) {
  LOCKSTEP_CHECK(bytes > 0, "hex_token() needs bytes > 0");
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string token;
  token.reserve(2 * static_cast<size_t>(bytes));
  uint64_t word = 0;
  for (int i = 0; i < bytes; ++i) {
    if (i % 8 == 0) word = next_u64();
    const auto byte = static_cast<unsigned>((word >> (8 * (i % 8))) & 0xff);
    token.push_back(kDigits[byte >> 4]);
    token.push_back(kDigits[byte & 0xf]);
  }
  return token;
}

uint64_t SystemRandom::next_u64() {
  uint64_t value = 0;
  for (int tries = 0; tries < kGetrandomTriesMax; ++tries) {
    const ssize_t n = getrandom(&value, sizeof(value), 0);
    if (n == static_cast<ssize_t>(sizeof(value))) return value;
    LOCKSTEP_CHECK(n >= 0 || errno == EINTR, "getrandom failed");
  }
  LOCKSTEP_CHECK(false, "getrandom kept returning short reads");
  return value;
}

}  // namespace lockstep
