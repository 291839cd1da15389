// segbloom: packed 4-bit counters, the cell type of counting filters.
//
// A "cell" is one counter in [0, 15]; it is "set" when it is non-zero. Sixteen counters
// share a 64-bit word, so a counter costs half a byte: a slice of m cells takes m / 2
// bytes instead of the m / 8 of a bit array (4x the memory of a plain slice).
//
// Storage format (fixed: serialized filters depend on it): counter i is bits
// 4 * (i % 16) .. 4 * (i % 16) + 3 of word i / 16, least significant bit first.
//
// Saturation. A counter that reaches 15 is saturated: it never changes again, neither
// up nor down. Its true count is unknown (15 or more), so decrementing it could take
// it to zero while keys that still need it remain; freezing it keeps every such key
// found (a saturated cell only costs a little false-positive rate). With k probes into
// a half-full slice of distinct keys, counts are about Poisson(ln 2):
// P(counter >= 15) ~ 1e-14, so saturation comes from keys inserted many times (a key
// inserted 15 times saturates all of its counters), not from chance collisions.
//
// set_count() (non-zero counters) and saturated_count() are kept exact on every
// mark/unmark and only recounted by from_words().
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "segbloom/detail/aligned_words.hpp"
#include "segbloom/detail/popcount.hpp"

namespace segbloom {

class CounterCells {
 public:
  static constexpr unsigned kBitsPerCounter = 4;
  static constexpr unsigned kCountersPerWord = 64 / kBitsPerCounter;  // 16
  static constexpr std::uint32_t kSaturated = 15;

  CounterCells() = default;
  // `cells` counters, all zero. Throws std::invalid_argument unless a multiple of 16
  // (slice sizes are multiples of 64).
  explicit CounterCells(std::uint64_t cells) : words_(checked_words(cells)) {}

  std::uint64_t size() const noexcept { return words_.size() * kCountersPerWord; }
  // Counters that are non-zero (saturated ones included).
  std::uint64_t set_count() const noexcept { return set_; }
  // Counters stuck at 15.
  std::uint64_t saturated_count() const noexcept { return saturated_; }

  // The value of counter i (i < size()).
  std::uint32_t value(std::uint64_t i) const noexcept {
    return static_cast<std::uint32_t>((words_[i / kCountersPerWord] >> shift(i)) & kSaturated);
  }
  bool test(std::uint64_t i) const noexcept { return value(i) != 0; }

  // Increments counter i unless it is saturated; returns true when it went 0 -> 1.
  bool mark(std::uint64_t i) noexcept {
    return mark_all([i](auto&& mark_counter) { mark_counter(i); }) != 0;
  }

  // mark(i) for every counter i that for_each(mark) passes to mark (which returns true:
  // go on); returns how many went 0 -> 1. The counts are updated once, after the last
  // counter (see BitCells::mark_all).
  template <class ForEach>
  std::uint64_t mark_all(ForEach&& for_each) noexcept {
    std::uint64_t* const words = words_.data();
    std::uint64_t newly = 0, saturated = 0;
    for_each([words, &newly, &saturated](std::uint64_t i) {
      std::uint64_t& word = words[i / kCountersPerWord];
      const unsigned s = shift(i);
      const std::uint64_t c = (word >> s) & kSaturated;
      if (c != kSaturated) {
        word += std::uint64_t{1} << s;  // c < 15: no carry into the next counter
        newly += c == 0;
        saturated += c == kSaturated - 1;
      }
      return true;
    });
    set_ += newly;
    saturated_ += saturated;
    return newly;
  }

  // Decrements counter i unless it is zero or saturated (both left as they are);
  // returns true when it went 1 -> 0.
  bool unmark(std::uint64_t i) noexcept {
    std::uint64_t& word = words_[i / kCountersPerWord];
    const unsigned s = shift(i);
    const std::uint64_t c = (word >> s) & kSaturated;
    if (c == 0 || c == kSaturated) return false;
    word -= std::uint64_t{1} << s;  // c > 0: no borrow from the next counter
    set_ -= c == 1;
    return c == 1;
  }

  // The word that holds counter i (for prefetching in batched lookups).
  const std::uint64_t* address_of(std::uint64_t i) const noexcept {
    return words_.data() + i / kCountersPerWord;
  }

  void clear() noexcept {
    words_.zero();
    set_ = 0;
    saturated_ = 0;
  }

  // Allocated bytes: half a byte per counter (rounded up to a 64-byte cache line).
  std::uint64_t memory_bytes() const noexcept { return words_.allocated_bytes(); }

  // Raw storage in the layout above.
  std::span<const std::uint64_t> words() const noexcept { return words_.span(); }

  // Rebuilds counters from stored words (the only place counters are recounted).
  // Every 4-bit pattern is a valid counter, so any words are accepted.
  static CounterCells from_words(std::span<const std::uint64_t> words) {
    return from_chunks(words.size(), [words](std::span<std::uint64_t> chunk, std::size_t offset) {
      std::memcpy(chunk.data(), words.data() + offset, chunk.size_bytes());
    });
  }

  // Counters of `words` words that fill(chunk, offset) writes chunk by chunk, in order,
  // each counted while in cache (as BitCells::from_chunks).
  template <class Fill>
  static CounterCells from_chunks(std::size_t words, Fill&& fill) {
    CounterCells cells;
    cells.words_ = detail::filled_in_chunks(
        words, std::forward<Fill>(fill), [&cells](std::span<const std::uint64_t> chunk) {
          for (const std::uint64_t w : chunk) {
            cells.set_ += detail::popcount64(nonzero_lanes(w));
            cells.saturated_ += detail::popcount64(saturated_lanes(w));
          }
        });
    return cells;
  }

  // Bit j of the result (j < 16) is set when counter j of `word` is non-zero. Used by
  // the conversion of a counting slice into a bit array.
  static std::uint32_t nonzero_mask(std::uint64_t word) noexcept {
    std::uint64_t x = nonzero_lanes(word);  // one bit at 4j for each non-zero counter j
    x = (x | (x >> 3)) & 0x0303030303030303ull;   // 2 flags per byte, bits 0-1
    x = (x | (x >> 6)) & 0x000F000F000F000Full;   // 4 flags per 16 bits
    x = (x | (x >> 12)) & 0x000000FF000000FFull;  // 8 flags per 32 bits
    x = (x | (x >> 24)) & 0xFFFFull;              // 16 flags
    return static_cast<std::uint32_t>(x);
  }

  friend bool operator==(const CounterCells& a, const CounterCells& b) noexcept {
    return a.set_ == b.set_ && a.saturated_ == b.saturated_ && a.words_ == b.words_;
  }

 private:
  static constexpr std::uint64_t kLowLanes = 0x1111111111111111ull;  // bit 0 of each counter

  static unsigned shift(std::uint64_t i) noexcept {
    return static_cast<unsigned>(i % kCountersPerWord) * kBitsPerCounter;
  }

  // Bit 4j set when counter j is non-zero.
  static std::uint64_t nonzero_lanes(std::uint64_t w) noexcept {
    const std::uint64_t x = w | (w >> 1);
    return (x | (x >> 2)) & kLowLanes;
  }

  // Bit 4j set when counter j is 15.
  static std::uint64_t saturated_lanes(std::uint64_t w) noexcept {
    return w & (w >> 1) & (w >> 2) & (w >> 3) & kLowLanes;
  }

  static std::size_t checked_words(std::uint64_t cells) {
    if (cells % kCountersPerWord != 0) {
      throw std::invalid_argument("segbloom: counter count " + std::to_string(cells) +
                                  " is not a multiple of 16");
    }
    return static_cast<std::size_t>(cells / kCountersPerWord);
  }

  detail::AlignedWords words_;
  std::uint64_t set_ = 0;
  std::uint64_t saturated_ = 0;
};

}  // namespace segbloom
