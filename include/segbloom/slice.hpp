// segbloom: one slice, an ordinary Bloom filter = cells + a probing scheme + a shape.
//
// Written once for every cell type: `Cells` is BitCells (plain filters) or a counter
// array (counting filters); it provides size(), set_count(), test(i), mark(i) -> bool
// (true when the cell went from zero to non-zero), clear(), memory_bytes().
#pragma once

#include <cstdint>
#include <utility>

#include "segbloom/sizing.hpp"

namespace segbloom {

template <class Cells, class Scheme>
class Slice {
 public:
  using cells_type = Cells;
  using scheme_type = Scheme;
  using Digest = typename Scheme::Digest;

  explicit Slice(const SliceShape& shape) : shape_(shape), cells_(shape.bits) {}

  // Restores a slice from stored parts; the caller checks cells.size() == shape.bits.
  Slice(const SliceShape& shape, Cells cells, std::uint64_t items)
      : shape_(shape), cells_(std::move(cells)), items_(items) {}

  bool contains(const Digest& digest) const noexcept {
    return Scheme::probe(digest, shape_.bits, shape_.probes,
                         [this](std::uint64_t cell) { return cells_.test(cell); });
  }

  // Marks the key's k cells and counts one item.
  void add(const Digest& digest) noexcept {
    Scheme::probe(digest, shape_.bits, shape_.probes, [this](std::uint64_t cell) {
      cells_.mark(cell);
      return true;
    });
    ++items_;
  }

  // Visits the key's k cells (stops when visit returns false). For cell types with
  // more operations than mark/test, such as counters.
  template <class Visit>
  bool probe(const Digest& digest, Visit&& visit) const {
    return Scheme::probe(digest, shape_.bits, shape_.probes, std::forward<Visit>(visit));
  }

  // Full once half of the cells are set: the fill where its rate is (1/2)^k <= p_i.
  bool full() const noexcept { return 2 * cells_.set_count() >= shape_.bits; }

  const SliceShape& shape() const noexcept { return shape_; }
  std::uint64_t items() const noexcept { return items_; }
  const Cells& cells() const noexcept { return cells_; }
  Cells& cells() noexcept { return cells_; }
  void set_items(std::uint64_t items) noexcept { items_ = items; }

  double fill_ratio() const noexcept {
    return static_cast<double>(cells_.set_count()) / static_cast<double>(shape_.bits);
  }
  double estimated_false_positive_rate() const noexcept {
    return rate_at_fill(fill_ratio(), shape_.probes);
  }
  std::uint64_t memory_bytes() const noexcept { return cells_.memory_bytes(); }

  void clear() noexcept {
    cells_.clear();
    items_ = 0;
  }

  friend bool operator==(const Slice& a, const Slice& b) noexcept {
    return a.shape_ == b.shape_ && a.items_ == b.items_ && a.cells_ == b.cells_;
  }

 private:
  SliceShape shape_;
  Cells cells_;
  std::uint64_t items_ = 0;
};

}  // namespace segbloom
