// segbloom: the plain segmented scalable Bloom filter.
//
//   segbloom::Options opts;
//   opts.capacity = 2000;
//   opts.false_positive_rate = 0.001;
//   segbloom::ScalableBloomFilter seen(opts);
//   bool is_new = seen.insert(std::uint64_t{4711});
//   bool was_seen = seen.contains(std::uint64_t{4711});
//
// The full API is SegmentedFilter's (segmented_filter.hpp): insert (test-and-set),
// contains, insert_many, contains_many, size, slice_count, memory_bytes,
// estimated_false_positive_rate, stats, clear, copy, move and equality.
#pragma once

#include "segbloom/bit_cells.hpp"
#include "segbloom/probing.hpp"
#include "segbloom/segmented_filter.hpp"

namespace segbloom {

class ScalableBloomFilter : public SegmentedFilter<BitCells, DoubleHashingScheme> {
 public:
  using SegmentedFilter::SegmentedFilter;
  using SegmentedFilter::insert;         // test-and-set (segmented_filter.hpp)
  using SegmentedFilter::insert_digest;
  using SegmentedFilter::insert_many;
};

}  // namespace segbloom
