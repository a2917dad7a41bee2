#include "lockstep/random.h"

#include <pthread.h>
#include <sys/random.h>

#include <array>
#include <cerrno>
#include <mutex>

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

// getrandom(2) returns at most what was asked; up to 256 bytes (a whole buffer) never come short
// once the pool is ready, but a short or interrupted call is retried for the rest. The bound only
// guards against a kernel that keeps failing.
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

namespace {

// Each thread draws from its own buffer, refilled by one getrandom: a draw per call was two
// system calls per lock value, as much as a tenth of a Redis lock pair's time on loopback.
struct SystemRandomBuffer {
  static_assert(kSystemRandomBufferWords * sizeof(uint64_t) <= 256, "getrandom fills it whole");
  std::array<uint64_t, kSystemRandomBufferWords> words{};
  size_t left = 0;  // words[0, left) are undrawn
};
thread_local SystemRandomBuffer t_buffer;

// In a fork()ed child only the forking thread lives on, with a copy of its buffer: emptied here,
// so the child never draws the values its parent will.
void empty_buffer_in_child() { t_buffer.left = 0; }

void refill(SystemRandomBuffer& buffer) {
  static std::once_flag registered;
  std::call_once(registered, [] {
    LOCKSTEP_CHECK(pthread_atfork(nullptr, nullptr, empty_buffer_in_child) == 0,
                   "a fork handler registers");
  });
  auto* bytes = reinterpret_cast<unsigned char*>(buffer.words.data());
  const size_t wanted = sizeof(buffer.words);
  size_t got = 0;
  for (int tries = 0; tries < kGetrandomTriesMax && got < wanted; ++tries) {
    const ssize_t n = getrandom(bytes + got, wanted - got, 0);
    LOCKSTEP_CHECK(n >= 0 || errno == EINTR, "getrandom failed");
    if (n > 0) got += static_cast<size_t>(n);
  }
  LOCKSTEP_CHECK(got == wanted, "getrandom kept returning short reads");
  buffer.left = buffer.words.size();
}

}  // namespace

uint64_t SystemRandom::next_u64() {
  SystemRandomBuffer& buffer = t_buffer;
  if (buffer.left == 0) refill(buffer);
  LOCKSTEP_CHECK(buffer.left > 0 && buffer.left <= buffer.words.size(), "a filled buffer");
  const uint64_t value = buffer.words[--buffer.left];
  buffer.words[buffer.left] = 0;  // a value drawn is not kept
  return value;
}

}  // namespace lockstep
