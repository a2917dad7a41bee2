#pragma once
// The Random seam, and the one pseudo-random generator the project uses.
//
// Prng is xoshiro256** seeded through splitmix64: the same seed gives the same sequence on every
// machine and build. No std:: distribution is used anywhere (their output is implementation
// defined); below() and chance() are defined here in integer arithmetic.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace lockstep {

class Prng {
 public:
  explicit Prng(uint64_t seed);

  uint64_t next_u64();
  // Uniform in [0, bound); bound must be > 0. Unbiased (Lemire's multiply-and-reject).
  uint64_t below(uint64_t bound);
  // Uniform in [lo, hi], inclusive; lo <= hi.
  int64_t between(int64_t lo, int64_t hi);
  // True with probability numerator/denominator; 0 <= numerator <= denominator, denominator > 0.
  bool chance(uint64_t numerator, uint64_t denominator);
  // A generator for a sub-stream (a client, a node) that does not disturb this one's sequence
  // beyond the one draw it takes.
  Prng fork();

 private:
  std::array<uint64_t, 4> state_{};
};

// What adapters draw from: unique lock values and retry jitter.
class Random {
 public:
  virtual ~Random() = default;
  virtual uint64_t next_u64() = 0;

  // Uniform in [0, bound); bound must be > 0.
  uint64_t below(uint64_t bound);
  // 2*bytes lowercase hex characters.
  std::string hex_token(int bytes = 16);
};

// A Random over a seeded Prng: deterministic, for the simulator and for tests. Not thread-safe.
class SeededRandom final : public Random {
 public:
  explicit SeededRandom(uint64_t seed) : prng_(seed) {}
  explicit SeededRandom(Prng prng) : prng_(prng) {}
  uint64_t next_u64() override { return prng_.next_u64(); }

 private:
  Prng prng_;
};

// The real world's Random: every draw comes from the OS (getrandom(2)), so lock values are
// unpredictable (hex_token() is 128 bits of it). Each thread takes its draws from a buffer of its
// own (kSystemRandomBufferWords words, one getrandom per refill), so an instance is safe to share
// between threads; a fork()ed child empties the buffer it inherited (pthread_atfork), so it never
// repeats its parent's values as a user-space generator copied with the process would. A failing
// getrandom is an assertion: lock values must never be guessable.
inline constexpr size_t kSystemRandomBufferWords = 32;

class SystemRandom final : public Random {
 public:
  uint64_t next_u64() override;
};

}  // namespace lockstep
