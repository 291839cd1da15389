// segbloom: how a key becomes bytes, and bytes become one 128-bit digest.
//
// Every operation hashes its key exactly once, whatever the number of slices; all
// probe positions in all slices derive from that digest.
//
// Supported keys (the `segbloom::Key` concept):
//   - integers and enums of any width, hashed from their little-endian bytes, so a
//     serialized filter answers the same on every machine (and uint32_t{7} and
//     uint64_t{7} are different keys: widths differ);
//   - std::string, std::string_view, const char* (a NUL-terminated string);
//   - char arrays, string literals among them: the bytes before the first NUL, or all N
//     when there is none ("abc" is 3 bytes; a char[16] holding 16 non-NUL bytes is those
//     16, never read past). Binary IDs, which may hold a NUL, go in std::array<char, N>,
//     unsigned char[N] or a byte span, which hash every byte;
//   - byte spans: std::span<const std::byte>, std::span<const unsigned char>,
//     std::span<const char>;
//   - user types, through the customisation point below.
//
// Customisation point: declare, in your type's namespace,
//     auto segbloom_key(const MyType& value);
// returning any supported key (an integer, a std::string, a byte span, ...). It is
// found by argument-dependent lookup; what it returns is hashed in place of `value`.
#pragma once

#include <array>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL  // inline XXH3: an 8-byte key hashes in a few cycles, no call
#endif
#include <xxhash.h>

#include "segbloom/detail/xxh3_batch.hpp"

namespace segbloom {

// The 128-bit XXH3 digest of a key's bytes under a seed.
struct Digest128 {
  std::uint64_t low = 0;
  std::uint64_t high = 0;
  friend bool operator==(const Digest128&, const Digest128&) = default;
};

// The digest of exactly N bytes. `flatten` inlines XXH3 here, where the known size
// removes the code for other sizes, whatever the inliner decides about the caller. Left
// to its heuristics, an unrelated change in a caller's loop could make this a call of
// the whole of XXH3: a different kernel call in the blocked lookup did so in one build
// of the benchmarks (16-byte keys, blocked per-key lookups: 8.4 -> 10.5 ns), and the
// benchmarks' set-up loops over 16-byte keys called it before this.
inline Digest128 to_digest(XXH128_hash_t h) noexcept { return {h.low64, h.high64}; }

template <std::size_t N>
[[gnu::flatten]] inline Digest128 xxh3_digest_of_size(const void* data, std::uint64_t seed) noexcept {
  return to_digest(XXH3_128bits_withSeed(data, N, seed));
}

// XXH3 is inlined only where the compiler knows the size (integer keys; a size it knows
// removes the long-input paths). A string key's size is known at run time only, so the
// two common ID widths, 16 and 8 bytes, are passed as constants (16-byte keys, blocked
// per-key lookups at 10^6 keys, bench_filter.cpp: negative 10.2 -> 8.7 ns, positive
// 9.6 -> 7.8 ns). Other sizes call XXH3.
inline Digest128 xxh3_digest(const void* data, std::size_t size, std::uint64_t seed) noexcept {
  if (size == 16) return xxh3_digest_of_size<16>(data, seed);
  if (size == 8) return xxh3_digest_of_size<8>(data, seed);
  return to_digest(XXH3_128bits_withSeed(data, size, seed));
}

namespace detail {

template <class T>
concept Integer = std::is_integral_v<T> || std::is_enum_v<T>;

// char[N] (const or not): a C string within its array, never read past its end (a char
// array converts to std::string_view through const char*, which would call strlen).
template <class T>
concept CharArray = std::is_bounded_array_v<T> && std::is_same_v<std::remove_cv_t<std::remove_extent_t<T>>, char>;

template <class T>
concept StringLike = std::is_convertible_v<const T&, std::string_view> && !Integer<T>;

template <class T>
concept ByteSpan = std::is_convertible_v<const T&, std::span<const std::byte>> ||
                   std::is_convertible_v<const T&, std::span<const unsigned char>> ||
                   (std::is_convertible_v<const T&, std::span<const char>> && !StringLike<T>);

template <class T>
concept Customised = !Integer<T> && !StringLike<T> && !ByteSpan<T> && requires(const T& v) {
  segbloom_key(v);
};

// The unsigned integer of the same width as an integer, enum or bool key.
template <class T, bool = std::is_enum_v<T>>
struct UnsignedOf {
  using type = std::make_unsigned_t<std::conditional_t<std::is_same_v<T, bool>, unsigned char, T>>;
};
template <class T>
struct UnsignedOf<T, true> : UnsignedOf<std::underlying_type_t<T>> {};

// N for a std::array of N chars, unsigned chars or std::bytes (a byte-span key of fixed
// size, held in the key itself), 0 for any other type. A span of such keys is N-byte
// inputs back to back, which hash_keys reads without a gather.
template <class T>
inline constexpr std::size_t kByteArraySize = 0;
template <std::size_t N>
inline constexpr std::size_t kByteArraySize<std::array<char, N>> = N;
template <std::size_t N>
inline constexpr std::size_t kByteArraySize<std::array<unsigned char, N>> = N;
template <std::size_t N>
inline constexpr std::size_t kByteArraySize<std::array<std::byte, N>> = N;

// The input size of the batch hash that hash_keys uses for keys of type K: 4 or 8
// (integers of that width on a little-endian host; byte arrays of that size), 16 (16-byte
// byte arrays), or 0: key by key.
template <class K>
inline constexpr std::size_t kBatchHashBytes = [] {
  if constexpr (Integer<K>) {
    const bool fits = (sizeof(K) == 4 || sizeof(K) == 8) && std::endian::native == std::endian::little;
    return fits ? sizeof(K) : 0;
  } else {
    constexpr std::size_t n = kByteArraySize<K>;
    return (n == 4 || n == 8 || n == 16) && sizeof(K) == n ? n : 0;  // sizeof: no padding
  }
}();

}  // namespace detail

template <class T>
concept Key = detail::Integer<T> || detail::StringLike<T> || detail::ByteSpan<T> ||
              detail::Customised<T>;

// Calls visit(const void* data, size) with the bytes that represent `key`. The size is a
// std::size_t, or for integer keys a std::integral_constant<std::size_t, width> (which
// converts to one), so that a visitor can use the width at compile time.
template <Key K, class Visit>
decltype(auto) with_key_bytes(const K& key, Visit&& visit) {
  if constexpr (detail::Integer<K>) {
    using U = typename detail::UnsignedOf<K>::type;
    U value = static_cast<U>(key);
    if constexpr (std::endian::native == std::endian::little) {
      // The integer's own bytes are already little-endian. (Building them byte by byte
      // costs 2 ns a key: eight byte stores that the hash's wider loads cannot forward.)
      return visit(static_cast<const void*>(&value), std::integral_constant<std::size_t, sizeof(U)>{});
    } else {
      unsigned char bytes[sizeof(U)];
      for (std::size_t i = 0; i < sizeof(U); ++i) {
        bytes[i] = static_cast<unsigned char>(value >> (8 * i));  // little-endian on any host
      }
      return visit(static_cast<const void*>(bytes), std::integral_constant<std::size_t, sizeof(U)>{});
    }
  } else if constexpr (detail::CharArray<K>) {
    const char* end = std::char_traits<char>::find(key, std::extent_v<K>, '\0');
    const std::size_t size = end == nullptr ? std::extent_v<K> : static_cast<std::size_t>(end - key);
    return visit(static_cast<const void*>(key), size);
  } else if constexpr (detail::StringLike<K>) {
    const std::string_view view(key);
    return visit(static_cast<const void*>(view.data()), view.size());
  } else if constexpr (std::is_convertible_v<const K&, std::span<const std::byte>>) {
    const std::span<const std::byte> view(key);
    return visit(static_cast<const void*>(view.data()), view.size());
  } else if constexpr (std::is_convertible_v<const K&, std::span<const unsigned char>>) {
    const std::span<const unsigned char> view(key);
    return visit(static_cast<const void*>(view.data()), view.size());
  } else if constexpr (detail::ByteSpan<K>) {
    const std::span<const char> view(key);
    return visit(static_cast<const void*>(view.data()), view.size());
  } else {
    const auto& replacement = segbloom_key(key);
    return with_key_bytes(replacement, static_cast<Visit&&>(visit));
  }
}

// The digest every classic-layout filter uses for `key`.
template <Key K>
Digest128 hash_key(const K& key, std::uint64_t seed) {
  return with_key_bytes(key, [seed](const void* data, auto size) {
    if constexpr (std::is_same_v<decltype(size), std::size_t>) {
      return xxh3_digest(data, size, seed);
    } else {
      return xxh3_digest_of_size<decltype(size)::value>(data, seed);  // an integer's width
    }
  });
}

// out[i] = hash_key(keys[i], seed) for every i < keys.size() (`out` must have room for
// keys.size() digests): the digests of a batch of keys. Where the CPU has AVX-512, keys
// of 4 or 8 bytes (integers, or std::arrays of chars, unsigned chars or std::bytes) and
// 16-byte std::arrays are hashed 8 at a time; with AVX2 only, the same keys 4 at a time
// (detail/xxh3_batch.hpp; same digests); other keys one by one.
template <Key K>
void hash_keys(std::span<const K> keys, std::uint64_t seed, Digest128* out) {
  std::size_t done = 0;
#ifdef SEGBLOOM_XXH3_BATCH
  static_assert(sizeof(Digest128) == 16 && std::is_standard_layout_v<Digest128>);
  constexpr std::size_t kBytes = detail::kBatchHashBytes<K>;
  if constexpr (kBytes != 0) {
    if (detail::xxh3_batch_available()) {
      if constexpr (kBytes == 16) {
        done = detail::xxh3_16_many_avx512(keys.data(), keys.size(), seed, out);
      } else {
        done = detail::xxh3_4to8_many_avx512<kBytes>(keys.data(), keys.size(), seed, out);
      }
    } else if (detail::xxh3_batch_avx2_available()) {
      if constexpr (kBytes == 16) {
        done = detail::xxh3_16_many_avx2(keys.data(), keys.size(), seed, out);
      } else {
        done = detail::xxh3_4to8_many_avx2<kBytes>(keys.data(), keys.size(), seed, out);
      }
    }
  }
#endif
  for (std::size_t i = done; i < keys.size(); ++i) out[i] = hash_key(keys[i], seed);
}

}  // namespace segbloom
