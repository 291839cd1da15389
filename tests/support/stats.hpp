// Test support: binomial bounds and deterministic key streams.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
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

// The smallest c with P(Poisson(mean) > c) < 1e-9 (the risk binomial_upper takes), for
// means far below 1, where binomial_upper's normal-approximation floor (~19) is too loose.
// Poisson's tail is above the binomial's of the same mean, so this bound is safe for both.
// Refuses means of 50 or more (exp(-mean) would underflow past ~745, and the 200-term tail
// sum is short for large means): there binomial_upper's normal approximation is good.
inline std::uint64_t poisson_upper(double mean) {
  if (!(mean >= 0 && mean < 50)) throw std::invalid_argument("poisson_upper: mean outside [0, 50); use binomial_upper");
  for (std::uint64_t c = 0;; ++c) {
    double term = std::exp(-mean);  // P(X = j), from j = 0
    for (std::uint64_t j = 1; j <= c + 1; ++j) term *= mean / double(j);
    double tail = 0;  // P(X > c), summed directly: 1 - cdf would cancel to 0
    for (std::uint64_t j = c + 1; j < c + 200; ++j) {
      tail += term;
      term *= mean / double(j + 1);
    }
    if (tail < 1e-9) return c;
  }
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
