// segbloom: the sizing maths, in one place.
//
// A slice sized for n items at rate p uses k = ceil(-log2 p) probes; the textbook
// size is m = n * bpe bits with bpe = -ln p / ln^2 2 (p = 1 %: bpe 9.585, k 7;
// p = 0.1 %: bpe 14.378, k 10).
//
// A slice counts as full when half of its cells are set. With k probes per item the
// expected fill after n items is 1 - exp(-k n / m), which reaches 1/2 at
// n = m ln 2 / k. Because k is rounded up, the textbook m reaches half-full a little
// before n items (p = 1 %: at 0.95 n). segbloom therefore sizes a slice so that the
// half-full point lies six standard deviations of the fill beyond n items: a slice
// then takes its full capacity except with probability about 1e-9. That costs
// +5.3 % bits over the textbook at p = 1 % (k rounding) and +0.4 % at p = 0.1 %, plus
// the six-sigma margin: +2.8 % at 2 000 items, +0.9 % at 20 000, +0.1 % at 10^6.
//
// At the half-full trigger a slice's false-positive rate is (1/2)^k <= p by the
// choice of k, so the rate guarantee holds at every load, not only at design load.
#pragma once

#include <cstdint>

#include "segbloom/options.hpp"

namespace segbloom {

// Bits per element of the textbook sizing: -ln p / (ln 2)^2.
double bits_per_element(double false_positive_rate);

// Probes k = ceil(ln 2 * bpe) = ceil(-log2 p). Exact powers of two are not rounded up
// by floating-point noise: p = 1/8 gives k = 3.
unsigned probes_for_rate(double false_positive_rate);

// Textbook size: ceil(n * bpe) rounded up to whole 64-bit words.
std::uint64_t textbook_bits(std::uint64_t items, double false_positive_rate);

// Size that lets `items` items with `probes` probes each be inserted before half of
// the bits are set, with a six-sigma margin; whole 64-bit words, at least one word.
std::uint64_t capacity_bits(std::uint64_t items, unsigned probes);

// Expected fraction of cells set after `items` items with `probes` probes each.
double expected_fill(std::uint64_t items, unsigned probes, std::uint64_t bits);

// False-positive rate of one slice whose fraction `fill` of cells is set: fill^k.
double rate_at_fill(double fill, unsigned probes);

// Compound rate of independent slices: 1 - prod(1 - p_i). Accumulate with
// `combine_rates(acc, p_i)` starting from acc = 0.
double combine_rates(double accumulated, double slice_rate);

// The plan for one slice of a filter.
struct SliceShape {
  std::uint64_t capacity = 0;      // items it takes before it fills
  double false_positive_rate = 0;  // p_i, its share of the filter's target
  unsigned probes = 0;             // k_i
  std::uint64_t bits = 0;          // m_i, a multiple of 64

  friend bool operator==(const SliceShape&, const SliceShape&) = default;
};

// Shape of slice `index` (0 = first) for `options`, which must be valid.
// Growing mode: n_i = ceil(n * growth^i), p_i = p * (1 - r) * r^i (sum of all p_i = p).
// Window mode (W slices): n_i = ceil(n / W), p_i = p / W.
// `max_probes` clamps k (LevelDB's format stores at most 30).
// Throws std::length_error when the slice would exceed the representable size.
SliceShape slice_shape(const Options& options, std::uint32_t index, unsigned max_probes = 255);

}  // namespace segbloom
