// Test support: binomial bounds and deterministic key streams.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

namespace segbloom::test {

// Upper bound on the count of successes in `trials` Bernoulli(p) trials that is exceeded
// with probability below about 1e-9 (normal approximation with a continuity margin,
// plus a Poisson-style floor for tiny expectations). Used for "rate <= target" checks.
inline double binomial_upper(std::uint64_t trials, double p, double sigmas = 6.0) {
  const double mean = static_cast<double>(trials) * p;
  const double sd = std::sqrt(mean * (1.0 - p));
  return mean + sigmas * sd + 0.5 * sigmas * sigmas + 1.0;
}

// Lower bound, the mirror of binomial_upper (never negative).
inline double binomial_lower(std::uint64_t trials, double p, double sigmas = 6.0) {
  const double mean = static_cast<double>(trials) * p;
  const double sd = std::sqrt(mean * (1.0 - p));
  const double bound = mean - sigmas * sd - 1.0;
  return bound < 0 ? 0 : bound;
}

// Disjoint deterministic key streams: inserted keys and absent keys never collide
// because the top bit tells them apart.
inline std::uint64_t present_key(std::uint64_t i, std::uint64_t salt = 0) {
  std::uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ salt;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return x & ~(std::uint64_t{1} << 63);
}
inline std::uint64_t absent_key(std::uint64_t i, std::uint64_t salt = 0) {
  return present_key(i, salt ^ 0x5555) | (std::uint64_t{1} << 63);
}

}  // namespace segbloom::test
