// Keys for the benchmarks, the same in every file: integers from splitmix64's finaliser
// and 16-character hex strings (like video IDs) made from them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace bench {

// splitmix64's finaliser, a bijection on 64-bit words: distinct inputs give distinct
// keys, so key streams drawn from disjoint input ranges never collide or repeat.
inline std::uint64_t mix(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

using Str16 = std::array<char, 16>;

// The key of input x, by key type (the pointer only selects the overload).
inline std::uint64_t make_key(std::uint64_t x, std::uint64_t*) { return mix(x); }
inline Str16 make_key(std::uint64_t x, Str16*) {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::uint64_t v = mix(x);
  Str16 s;
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = kHex[(v >> (60 - 4 * i)) & 15];
  return s;
}

}  // namespace bench
