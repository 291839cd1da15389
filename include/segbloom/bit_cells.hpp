// segbloom: a bit array that counts its set bits as they are set.
//
// The cell type of the plain filters. A "cell" is one bit; a cell is "set" when it
// is 1. The count of set cells drives the half-full trigger, so it is kept exact on
// every `mark` and never recounted on the insert path.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <utility>

#include "segbloom/detail/aligned_words.hpp"
#include "segbloom/detail/bits.hpp"
#include "segbloom/detail/popcount.hpp"

namespace segbloom {

class BitCells {
 public:
  BitCells() = default;
  // `cells` must be a multiple of 64.
  explicit BitCells(std::uint64_t cells) : words_(cells / 64) {}

  std::uint64_t size() const noexcept { return words_.size() * 64; }
  std::uint64_t set_count() const noexcept { return set_; }

  bool test(std::uint64_t i) const noexcept { return (words_[i >> 6] >> (i & 63)) & 1; }

  // Sets every cell i that for_each(mark) passes to mark(i) (mark returns true: go on);
  // returns how many of them were clear. The set count is updated once per call (a store
  // to a word may alias set_ as far as the compiler knows, so per-cell updates would load
  // and store the count again at every probe).
  template <class ForEach>
  std::uint64_t mark_all(ForEach&& for_each) noexcept {
    std::uint64_t* const words = words_.data();
    std::uint64_t newly = 0;
    for_each([words, &newly](std::uint64_t i) {
      detail::set_bit(words[i >> 6], i, newly);
      return true;
    });
    set_ += newly;
    return newly;
  }

  // Lets set(words) set cells directly in the word array (e.g. a SIMD kernel that sets a
  // whole block at once); it returns how many it set that were clear, which is counted.
  template <class Set>
  std::uint64_t mark_words(Set&& set) noexcept {
    const std::uint64_t newly = set(words_.data());
    set_ += newly;
    return newly;
  }

  const std::uint64_t* data() const noexcept { return words_.data(); }
  const std::uint64_t* address_of(std::uint64_t i) const noexcept { return words_.data() + (i >> 6); }

  void clear() noexcept {
    words_.zero();
    set_ = 0;
  }

  std::uint64_t memory_bytes() const noexcept { return words_.allocated_bytes(); }

  // Raw storage, little-endian bit order within each word: bit i is bit (i % 64) of
  // word i / 64.
  std::span<const std::uint64_t> words() const noexcept { return words_.span(); }

  // Rebuilds cells from stored words (the only place set bits are counted).
  static BitCells from_words(std::span<const std::uint64_t> words) {
    return from_chunks(words.size(), [words](std::span<std::uint64_t> chunk, std::size_t offset) {
      std::memcpy(chunk.data(), words.data() + offset, chunk.size_bytes());
    });
  }

  // Cells of `words` words that fill(chunk, offset) writes chunk by chunk, in order
  // (deserialization reads straight into the array). Each chunk is counted while it
  // is still in cache, so loading is one pass over memory, not three.
  template <class Fill>
  static BitCells from_chunks(std::size_t words, Fill&& fill) {
    BitCells cells;
    cells.words_ = detail::filled_in_chunks(words, std::forward<Fill>(fill),
                                            [&cells](std::span<const std::uint64_t> chunk) {
                                              cells.set_ += detail::count_bits(chunk);
                                            });
    return cells;
  }

  friend bool operator==(const BitCells& a, const BitCells& b) noexcept {
    return a.set_ == b.set_ && a.words_ == b.words_;
  }

 private:
  detail::AlignedWords words_;
  std::uint64_t set_ = 0;
};

}  // namespace segbloom
