#include "segbloom/sizing.hpp"

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

double combine_rates(double accumulated, double slice_rate) {
  return 1.0 - (1.0 - accumulated) * (1.0 - slice_rate);
}

SliceShape slice_shape(const Options& options, std::uint32_t index, unsigned max_probes) {
  SliceShape shape;
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
  if (shape.probes > max_probes) shape.probes = max_probes;
  // Bits grow as n * k / ln 2; check before converting to integers.
  if (!(items * shape.probes / kLn2 * 1.5 < kMaxSliceBits)) {
    throw std::length_error("segbloom: slice " + std::to_string(index) + " for " +
                            std::to_string(items) + " items exceeds the 2^46-bit slice limit");
  }
  shape.capacity = static_cast<std::uint64_t>(items);
  shape.bits = capacity_bits(shape.capacity, shape.probes);
  return shape;
}

}  // namespace segbloom
