// What triple hashing costs the small slices that take it (sizing.hpp, probing.hpp), against
// double hashing on the same slice: one slice of the shape a window of 4 over 100 items at
// p = 0.1 % plans (25 items at 2.5e-4, k 12), filled to its full point with random keys,
// then asked 512 keys a call, as a request asks a user's filter.
//
//   BM_small_slice_lookup/triple:T/per_key:K/present:P   512 digests asked through
//       contains_group (the batched path, K = 0) or contains key by key (K = 1); absent
//       keys (P = 0) or present ones (P = 1); T = 0 double hashing (the scheme's kernels,
//       SIMD where the CPU has it), T = 1 triple hashing.
//
// ns a key = the reported time / 512 (the counter ns_per_key).
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "segbloom/segbloom.hpp"

namespace {

constexpr std::size_t kAsked = 512;

using SmallSlice = segbloom::Slice<segbloom::BitCells, segbloom::DoubleHashingScheme>;

segbloom::SliceShape small_shape(bool triple) {
  segbloom::Options o;
  o.capacity = 100;
  o.false_positive_rate = 0.001;
  o.max_slices = 4;
  segbloom::SliceShape shape = segbloom::ScalableBloomFilter::planned_shape(o, 0);
  shape.probing = triple ? segbloom::Probing::triple_hashing : segbloom::Probing::scheme;
  return shape;
}

void BM_small_slice_lookup(benchmark::State& state) {
  const bool triple = state.range(0) != 0;
  const bool per_key = state.range(1) != 0;
  const bool present = state.range(2) != 0;
  SmallSlice slice(small_shape(triple));
  std::vector<segbloom::Digest128> inserted;
  for (std::uint64_t i = 0; !slice.full(); ++i) {
    inserted.push_back(segbloom::hash_key(i, 0));
    slice.add(inserted.back());
  }
  std::vector<segbloom::Digest128> asked(kAsked);
  for (std::size_t i = 0; i < kAsked; ++i) {
    asked[i] = present ? inserted[i % inserted.size()] : segbloom::hash_key(std::uint64_t{1} << 40 | i, 0);
  }
  std::unique_ptr<bool[]> found(new bool[kAsked]);
  std::size_t hits = 0;
  for (auto _ : state) {
    if (per_key) {
      for (std::size_t i = 0; i < kAsked; ++i) hits += slice.contains(asked[i]);
    } else {
      hits += slice.contains_group(asked.data(), kAsked, found.get(), false);
    }
    benchmark::DoNotOptimize(hits);
  }
  // kIsRate | kInvert gives CPU seconds / value: with the keys counted in billions, ns a key
  // (until 2 Dec 2026 in keys: seconds a key, 3.758e-09 in the JSON). The console prints
  // "s" after it, Google Benchmark's unit for every inverted rate; the number is ns.
  state.counters["ns_per_key"] = benchmark::Counter(static_cast<double>(state.iterations() * kAsked) * 1e-9,
                                                    benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

BENCHMARK(BM_small_slice_lookup)
    ->ArgNames({"triple", "per_key", "present"})
    ->ArgsProduct({{0, 1}, {0, 1}, {0, 1}});

}  // namespace
