#include "segbloom/sizing.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace segbloom {
namespace {

constexpr double kLn2 = std::numbers::ln2;
constexpr double kSigmas = 6.0;
// Largest slice: 2^46 bits (8 TiB). Far beyond any real slice, far below overflow.
constexpr double kMaxSliceBits = 70368744177664.0;

std::uint64_t round_up_to_words(double bits) {
  const auto whole = static_cast<std::uint64_t>(std::ceil(bits));
  const std::uint64_t words = (whole + 63) / 64;
  return (words == 0 ? 1 : words) * 64;
}

// Distance of the half-full point beyond `items` inserts, in bits, minus the margin:
// m/2 - E[set] - z * sigma[set]. Increasing in m; we want the smallest m where >= 0.
double spare_bits(double items, double probes, double bits) {
  const double a = items * probes / bits;
  const double empty = std::exp(-a);
  const double variance = bits * empty * (1.0 - (1.0 + a) * empty);
  return bits * (empty - 0.5) - kSigmas * std::sqrt(variance > 0 ? variance : 0.0);
}

}  // namespace

double bits_per_element(double p) { return -std::log(p) / (kLn2 * kLn2); }

unsigned probes_for_rate(double p) {
  const double exact = kLn2 * bits_per_element(p);  // = -log2 p
  const double k = std::ceil(exact - 1e-9);
  return k < 1 ? 1u : static_cast<unsigned>(k);
}

std::uint64_t textbook_bits(std::uint64_t items, double p) {
  return round_up_to_words(static_cast<double>(items) * bits_per_element(p));
}

std::uint64_t capacity_bits(std::uint64_t items, unsigned probes) {
  const double n = static_cast<double>(items);
  const double k = probes;
  double lo = n * k / kLn2;  // expected half-full exactly at n: spare < 0
  double hi = lo * 1.25 + 512;
  while (spare_bits(n, k, hi) < 0) hi *= 2;
  for (int i = 0; i < 80 && hi - lo > 1.0; ++i) {
    const double mid = (lo + hi) / 2;
    (spare_bits(n, k, mid) < 0 ? lo : hi) = mid;
  }
  return round_up_to_words(hi);
}

double expected_fill(std::uint64_t items, unsigned probes, std::uint64_t bits) {
  // 1 - (1 - 1/m)^(k n), computed without cancellation.
  const double t = static_cast<double>(items) * probes;
  return -std::expm1(t * std::log1p(-1.0 / static_cast<double>(bits)));
}

double rate_at_fill(double fill, unsigned probes) { return std::pow(fill, probes); }

// --- Blocked layout -------------------------------------------------------------

namespace {

constexpr double kBlockMiss = 1.0 - 1.0 / kBlockBits;  // q: a probe misses a given bit

// Sums f(j) * Poisson(j; lambda) over the j that matter (+-12 sigma), in log space so
// that large lambdas do not underflow.
template <class F>
double poisson_expectation(double lambda, F&& f) {
  const double spread = 12.0 * std::sqrt(lambda) + 40.0;
  const auto lo = static_cast<long>(std::max(0.0, std::floor(lambda - spread)));
  const auto hi = static_cast<long>(std::ceil(lambda + spread));
  double sum = 0;
  for (long j = lo; j <= hi; ++j) {
    const double jd = static_cast<double>(j);
    const double log_p = -lambda + (j == 0 ? 0.0 : jd * std::log(lambda)) - std::lgamma(jd + 1);
    sum += std::exp(log_p) * f(jd);
  }
  return sum;
}

// Keys per block where the mean fill reaches 1/2: 1 - exp(-lambda (1 - q^k)) = 1/2.
double blocked_half_fill_load(unsigned k) { return kLn2 / (1.0 - std::pow(kBlockMiss, k)); }

// Expected set bits of one block, and their variance, at mean load lambda. A block
// with j keys has kj uniform probes over 512 bits: occupancy mean and variance exact.
void blocked_block_moments(double lambda, unsigned k, double& mean, double& variance) {
  const double b = kBlockBits;
  const auto set_mean = [&](double j) { return b * (1.0 - std::pow(kBlockMiss, k * j)); };
  const auto set_square = [&](double j) {
    const double empty1 = std::pow(kBlockMiss, k * j);
    const double empty2 = std::pow(1.0 - 2.0 / b, k * j);
    const double var = std::max(0.0, b * empty1 + b * (b - 1) * empty2 - b * b * empty1 * empty1);
    const double mu = b * (1.0 - empty1);
    return var + mu * mu;
  };
  mean = poisson_expectation(lambda, set_mean);
  variance = std::max(0.0, poisson_expectation(lambda, set_square) - mean * mean);
}

}  // namespace

double blocked_rate(double lambda, unsigned k) {
  return poisson_expectation(lambda, [k](double j) {
    return std::pow(1.0 - std::pow(kBlockMiss, k * j), static_cast<double>(k));
  });
}

double blocked_rate_at_fill(double fill, unsigned k) {
  if (!(fill > 0)) return 0;
  if (fill >= 1) return 1;
  const double lambda = -std::log1p(-fill) / (1.0 - std::pow(kBlockMiss, k));
  return blocked_rate(lambda, k);
}

double blocked_expected_fill(std::uint64_t items, unsigned k, std::uint64_t bits) {
  const double lambda = static_cast<double>(items) * kBlockBits / static_cast<double>(bits);
  return -std::expm1(-lambda * (1.0 - std::pow(kBlockMiss, k)));
}

unsigned blocked_probes_for_rate(double p) {
  // The rate at half fill falls with k (0.0094 at k 7, 9.7e-4 at 11, 3e-7 at 48), so
  // the first k that reaches p is the cheapest. Computed once, then looked up.
  static const auto half_fill_rates = [] {
    std::array<double, kMaxBlockedProbes + 1> rates{};
    for (unsigned k = 1; k <= kMaxBlockedProbes; ++k) {
      rates[k] = blocked_rate(blocked_half_fill_load(k), k);
    }
    return rates;
  }();
  for (unsigned k = 1; k <= kMaxBlockedProbes; ++k) {
    if (half_fill_rates[k] <= p) return k;
  }
  return 0;
}

std::uint64_t blocked_capacity_bits(std::uint64_t items, unsigned k) {
  const double n = static_cast<double>(items);
  const auto spare = [&](double blocks) {  // half the bits - E[set] - 6 sigma
    double mean = 0, variance = 0;
    blocked_block_moments(n / blocks, k, mean, variance);
    return blocks * (kBlockBits / 2.0 - mean) - kSigmas * std::sqrt(blocks * variance);
  };
  double lo = std::max(1.0, std::floor(n / blocked_half_fill_load(k)));
  double hi = lo * 1.25 + 8;
  while (spare(hi) < 0) hi *= 2;
  while (hi - lo > 1.0) {
    const double mid = std::floor((lo + hi) / 2);
    (spare(mid) < 0 ? lo : hi) = mid;
  }
  return static_cast<std::uint64_t>(hi) * kBlockBits;
}

double slice_rate_at_fill(const SliceShape& shape, double fill) {
  return shape.layout == Layout::blocked ? blocked_rate_at_fill(fill, shape.probes)
                                         : rate_at_fill(fill, shape.probes);
}

double combine_rates(double accumulated, double slice_rate) {
  return 1.0 - (1.0 - accumulated) * (1.0 - slice_rate);
}

SliceShape slice_shape(const Options& options, std::uint32_t index, unsigned max_probes) {
  SliceShape shape;
  shape.index = options.max_slices == 0 ? index : 0;
  double items = 0;
  if (options.max_slices == 0) {
    items = std::ceil(static_cast<double>(options.capacity) * std::pow(options.growth, index));
    shape.false_positive_rate = options.false_positive_rate * (1.0 - options.tightening) *
                                std::pow(options.tightening, index);
  } else {
    items = std::ceil(static_cast<double>(options.capacity) / options.max_slices);
    shape.false_positive_rate = options.false_positive_rate / options.max_slices;
  }
  if (!(shape.false_positive_rate > 0)) {
    throw std::length_error("segbloom: slice " + std::to_string(index) +
                            " would need a false-positive rate below the smallest double");
  }
  shape.probes = probes_for_rate(shape.false_positive_rate);
  if (options.layout == Layout::blocked) {
    if (const unsigned k = blocked_probes_for_rate(shape.false_positive_rate); k != 0) {
      shape.layout = Layout::blocked;
      shape.probes = k;
    }
  }
  if (shape.probes > max_probes) shape.probes = max_probes;
  // Bits grow as n * k / ln 2; check before converting to integers.
  if (!(items * shape.probes / kLn2 * 1.5 < kMaxSliceBits)) {
    throw std::length_error("segbloom: slice " + std::to_string(index) + " for " +
                            std::to_string(items) + " items exceeds the 2^46-bit slice limit");
  }
  shape.capacity = static_cast<std::uint64_t>(items);
  shape.bits = shape.layout == Layout::blocked ? blocked_capacity_bits(shape.capacity, shape.probes)
                                               : capacity_bits(shape.capacity, shape.probes);
  return shape;
}

}  // namespace segbloom
