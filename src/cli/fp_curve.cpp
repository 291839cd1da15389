// segbloom demo: false-positive rate against items inserted (see fp_curve.hpp).
#include "fp_curve.hpp"

#include <cmath>
#include <stdexcept>

#include "segbloom/scalable_bloom_filter.hpp"

namespace segbloom::cli {
namespace {

// Two disjoint key streams (top bit 0: inserted, 1: absent), scrambled so that they
// look like real 64-bit ids.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
std::uint64_t inserted_key(std::uint64_t i, std::uint64_t seed) {
  return mix(i ^ (seed << 40)) & ~(std::uint64_t{1} << 63);
}
std::uint64_t absent_key(std::uint64_t i, std::uint64_t seed) {
  return mix(i ^ (seed << 40) ^ 0x5bd1e995ull) | (std::uint64_t{1} << 63);
}

}  // namespace

std::vector<CurvePoint> measure_fp_curve(const CurveConfig& config) {
  if (config.probes < 1 || config.probes > 100'000'000) {
    throw std::invalid_argument("--probes must be in [1, 10^8]");
  }
  if (!(config.max_multiple >= 1 && config.max_multiple <= 64)) {
    throw std::invalid_argument("the curve's last checkpoint must be in [1, 64] x capacity");
  }
  Options options;
  options.capacity = config.capacity;
  options.false_positive_rate = config.rate;
  options.max_slices = 0;  // growing
  ScalableBloomFilter segmented(options);  // validates the options
  // The fixed filter: the segmented filter's first slice, which never grows.
  using Slice = ScalableBloomFilter::slice_type;
  Slice fixed(segmented.slices().front().shape());

  std::vector<double> multiples{0.25, 0.5, 0.75};
  for (double m = 1; m <= config.max_multiple + 1e-9; m += 0.5) multiples.push_back(m);

  std::vector<CurvePoint> points;
  std::uint64_t inserted = 0;
  for (const double multiple : multiples) {
    const auto target = static_cast<std::uint64_t>(
        std::llround(multiple * static_cast<double>(config.capacity)));
    for (; inserted < target; ++inserted) {
      const auto digest = segmented.digest(inserted_key(inserted, config.seed));
      segmented.insert_digest(digest);
      fixed.add(digest);  // same digest: the same k positions as the first slice
    }
    CurvePoint point;
    point.items = inserted;
    point.multiple = multiple;
    point.probes = config.probes;
    for (std::uint64_t j = 0; j < config.probes; ++j) {
      const auto digest = segmented.digest(absent_key(j, config.seed));
      point.segmented_hits += segmented.contains_digest(digest);
      point.fixed_hits += fixed.contains(digest);
    }
    point.segmented_slices = segmented.slice_count();
    for (const auto& s : segmented.slices()) point.segmented_bytes += s.memory_bytes();
    point.fixed_bytes = fixed.memory_bytes();
    point.segmented_estimate = segmented.estimated_false_positive_rate();
    points.push_back(point);
  }
  return points;
}

}  // namespace segbloom::cli
