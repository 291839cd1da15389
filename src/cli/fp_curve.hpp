// segbloom demo: the measured false-positive rate against items inserted, for the
// segmented filter next to one fixed-size Bloom filter of the same initial size.
//
// The segmented filter is a ScalableBloomFilter in growing mode (capacity C, target
// p). The fixed filter is exactly its first slice (same bits, same k) that never
// grows: it keeps taking inserts past its design load, as a single filter sized once
// must. Up to C items both answer alike; past C the fixed filter's rate climbs
// towards 1 while the segmented one opens larger, tighter slices and stays under p.
//
// At each checkpoint (a multiple of C) both are asked about `probes` keys never
// inserted (disjoint from the inserted ones by their top bit); the rate measured is
// the fraction called present, with a resolution of 1 / probes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace segbloom::cli {

struct CurveConfig {
  std::uint64_t capacity = 10'000;   // C
  double rate = 0.001;               // p
  double max_multiple = 16;          // last checkpoint: 16 C items
  std::uint64_t probes = 200'000;    // absent keys asked at each checkpoint
  std::uint64_t seed = 1;
};

struct CurvePoint {
  std::uint64_t items = 0;
  double multiple = 0;                 // items / C
  std::uint64_t segmented_hits = 0;    // absent keys called present
  std::uint64_t fixed_hits = 0;
  std::uint64_t probes = 0;
  std::size_t segmented_slices = 0;
  std::uint64_t segmented_bytes = 0;   // cell bytes
  std::uint64_t fixed_bytes = 0;
  double segmented_estimate = 0;       // the filter's own estimate from its fill

  double segmented_rate() const noexcept {
    return static_cast<double>(segmented_hits) / static_cast<double>(probes);
  }
  double fixed_rate() const noexcept {
    return static_cast<double>(fixed_hits) / static_cast<double>(probes);
  }
};

// Checkpoints at 1/4, 1/2, 3/4 of C, then every C/2 up to max_multiple C.
// Throws std::invalid_argument for options out of range.
std::vector<CurvePoint> measure_fp_curve(const CurveConfig& config);

}  // namespace segbloom::cli
