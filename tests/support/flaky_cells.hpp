// Cells whose allocation fails on demand, for tests of what an insert that cannot allocate a
// slice leaves behind. The slice-growth logic is written once for every cell type
// (segmented_filter.hpp), so a filter of these reaches the allocations a write makes when
// it opens, replaces or restarts a slice.
#pragma once

#include <cstdint>
#include <new>

#include "segbloom/segbloom.hpp"

namespace segbloom::test {

struct FlakyCells : BitCells {
  static inline bool fail = false;  // new cell arrays throw std::bad_alloc while set
  FlakyCells() = default;
  explicit FlakyCells(std::uint64_t cells) : BitCells(allocatable(cells)) {}
  static std::uint64_t allocatable(std::uint64_t cells) {
    if (fail) throw std::bad_alloc();
    return cells;
  }
};
// A plain filter of them (as ScalableBloomFilter is of BitCells).
struct FlakyFilter : SegmentedFilter<FlakyCells, DoubleHashingScheme> {
  using SegmentedFilter::SegmentedFilter;
  using SegmentedFilter::insert;
};

// Allocations of FlakyCells fail while one of these lives.
struct FailingAllocations {
  FailingAllocations() noexcept { FlakyCells::fail = true; }
  ~FailingAllocations() { FlakyCells::fail = false; }
  FailingAllocations(const FailingAllocations&) = delete;
  FailingAllocations& operator=(const FailingAllocations&) = delete;
};

}  // namespace segbloom::test
