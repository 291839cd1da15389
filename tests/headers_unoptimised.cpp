// Compiled without optimisation (tests/meson.build): the headers must build at -O0 too,
// where some compilers define intrinsics as macros (GCC 12's _mm256_extract_epi32 is then a
// statement expression, which a pack expansion cannot hold). The function instantiates the
// filters' insert and lookup paths, per key and batched, in both layouts.
#include <cstddef>
#include <cstdint>
#include <span>

#include "segbloom/concurrent_filter.hpp"
#include "segbloom/counting_bloom_filter.hpp"
#include "segbloom/segbloom.hpp"
#include "segbloom/transition_filter.hpp"

extern "C" std::size_t segbloom_headers_unoptimised(const std::uint64_t* keys, std::size_t n, bool* found) {
  std::size_t total = 0;
  for (const auto layout : {segbloom::Layout::classic, segbloom::Layout::blocked}) {
    segbloom::Options options;
    options.layout = layout;
    const std::span<const std::uint64_t> batch(keys, n);
    const std::span<bool> answers(found, n);
    segbloom::ScalableBloomFilter plain(options);
    total += plain.insert(keys[0]) + plain.insert_many(batch) + plain.contains_many(batch, answers);
    segbloom::ConcurrentScalableBloomFilter concurrent(options);
    total += concurrent.insert(keys[0]) + concurrent.insert_many(batch) + concurrent.contains_many(batch, answers);
    segbloom::CountingBloomFilter counting(options);
    total += counting.insert(keys[0]) + counting.insert_many(batch) + counting.contains_many(batch, answers);
  }
  return total;
}
