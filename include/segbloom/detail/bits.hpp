// segbloom: testing and setting bit (i % 64) of a 64-bit word, counted without a branch;
// reading a stored word in place (load_le64).
//
// The probe loops of the bit arrays (classic lookups and inserts, the portable blocked
// kernels) do this k times a key. In C++ a test is (word >> i) & 1 and a set needs
// 1 << i first; without BMI2 (the default x86-64 target) a shift by a variable amount
// wants the amount in CL and costs 2 micro-ops on its own. On x86-64, BT and BTS on a
// register take the bit number in any register and leave the old bit in the carry
// flag, which one ADC or SBB adds to a count. Measured at 10^6 u64 keys, p = 1 %, k = 7
// (alternating runs of both builds, best of 6): classic negative lookups 9.5 -> 8.9 ns,
// positive 13.1 -> 11.8 ns, inserts 20.3 -> 17.3 ns; the portable blocked kernels alone,
// insert 10.0 -> 7.8 ns and negative lookup 8.1 -> 6.7 ns. Other targets take the C++
// form; the bits and counts are the same.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace segbloom::detail {

// count += bit (i % 64) of word. Also with BMI2, where the C++ form is SHRX and AND, as
// few micro-ops, BT and ADC measured faster: built for x86-64-v4, classic per-key
// lookups at 10^6 u64 keys, negative 9.5-11.2 -> 9.1-9.3 ns, positive 12.6-13.8 ->
// 12.0-12.3 ns (three sets of 6-12 alternating runs of both builds, best of each).
inline void count_bit(unsigned& count, std::uint64_t word, std::uint64_t i) noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  asm("bt{q %2, %1|\t%1, %2}\n\tadc{l $0, %0|\t%0, 0}"  // AT&T | Intel syntax
      : "+r"(count)
      : "r"(word), "r"(i)
      : "cc");
#else
  count += static_cast<unsigned>((word >> (i & 63)) & 1);
#endif
}

// Sets bit (i % 64) of word; clear_count += 1 when it was clear.
inline void set_bit(std::uint64_t& word, std::uint64_t i, std::uint64_t& clear_count) noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  std::uint64_t w = word;
  // SBB $-1 adds 1 - CF: one when the old bit (CF) was 0.
  asm("bts{q %2, %0|\t%0, %2}\n\tsbb{q $-1, %1|\t%1, -1}"  // AT&T | Intel syntax
      : "+r"(w), "+r"(clear_count)
      : "r"(i)
      : "cc");
  word = w;
#else
  const std::uint64_t bit = std::uint64_t{1} << (i & 63);
  clear_count += (word & bit) == 0;
  word |= bit;
#endif
}

// The little-endian 64-bit word at `at`, any alignment, in host order: how stored cells
// are read in place (FilterView). One unaligned load on little-endian hosts.
inline std::uint64_t load_le64(const unsigned char* at) noexcept {
  std::uint64_t value = 0;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&value, at, sizeof value);
  } else {
    for (unsigned b = 8; b-- > 0;) value = (value << 8) | at[b];
  }
  return value;
}

}  // namespace segbloom::detail
