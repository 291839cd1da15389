// segbloom: counting set bits of a word array at hardware speed.
//
// Without -mpopcnt, std::popcount compiles to a libgcc call (about 0.85 GB/s here);
// loading a stored filter recounts its bits, so that call would cap load speed. The
// POPCNT version is chosen once at run time on x86-64 CPUs that have it.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

namespace segbloom::detail {

inline std::uint64_t count_bits_portable(std::span<const std::uint64_t> words) noexcept {
  std::uint64_t total = 0;
  for (std::uint64_t w : words) total += static_cast<std::uint64_t>(std::popcount(w));
  return total;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("popcnt"))) inline std::uint64_t count_bits_popcnt(
    std::span<const std::uint64_t> words) noexcept {
  std::uint64_t total = 0;
  for (std::uint64_t w : words) total += static_cast<std::uint64_t>(__builtin_popcountll(w));
  return total;
}
#endif

inline std::uint64_t count_bits(std::span<const std::uint64_t> words) noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__POPCNT__)
  static const bool has_popcnt = __builtin_cpu_supports("popcnt");
  if (has_popcnt) return count_bits_popcnt(words);
#endif
  return count_bits_portable(words);
}

}  // namespace segbloom::detail
