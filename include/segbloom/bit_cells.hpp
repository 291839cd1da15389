// segbloom: a bit array that counts its set bits as they are set.
//
// The cell type of the plain filters. A "cell" is one bit; a cell is "set" when it
// is 1. The count of set cells drives the half-full trigger, so it is kept exact on
// every `mark` and never recounted on the insert path.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>

#include "segbloom/detail/aligned_words.hpp"
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

  // Sets cell i; returns true when it was clear.
  bool mark(std::uint64_t i) noexcept {
    std::uint64_t& word = words_[i >> 6];
    const std::uint64_t bit = std::uint64_t{1} << (i & 63);
    const bool was_clear = (word & bit) == 0;
    word |= bit;
    set_ += was_clear;
    return was_clear;
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
    BitCells cells(words.size() * 64);
    if (!words.empty()) std::memcpy(cells.words_.data(), words.data(), words.size_bytes());
    cells.set_ = detail::count_bits(words);
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
