// segbloom: XXH3-128 of many 4- or 8-byte keys at once, 8 keys per AVX-512 round.
//
// Batched operations (contains_many, insert_many) hash a group of keys before using any
// of them, so the hashes can be computed side by side. For inputs of 4 to 8 bytes
// XXH3-128 is a fixed sequence of 64-bit operations (xxhash.h, XXH3_len_4to8_128b):
//
//   v      = the 8 input bytes as a little-endian integer; for 4 bytes, x + (x << 32)
//   keyed  = v ^ ((S16 ^ S24) + (seed ^ (bswap32(low 32 bits of seed) << 32)))
//            (S16, S24: 64-bit words at bytes 16 and 24 of XXH3's default secret)
//   hi:lo  = keyed * (PRIME64_1 + 4 len), the full 128-bit product
//   hi    += lo << 1;   lo ^= hi >> 3
//   lo     = xorshift(lo, 35) * 0x9FB21C651E98DF25, then xorshift(lo, 28)
//   hi     = avalanche(hi) = xorshift(hi, 37) * 0x165667919E3779F9, then xorshift(hi, 32)
//
// which AVX-512 runs on 8 lanes: the 64 x 64 -> 128 product from four 32 x 32 -> 64
// products (vpmuludq), the 64-bit products with vpmullq (AVX-512DQ). The digests are
// identical to xxh3_digest's (tested against the library on 82 000 batches of lengths
// 0 to 40, four key types, seeds of every shape); where the CPU lacks AVX-512DQ the
// caller hashes key by key. Included by hashing.hpp, whose hash_keys() is the entry point; this header
// needs nothing of it.
// Measured, this machine, 26 Nov 2026 at load average 1-2: hashing alone 1.7 -> 1.1-1.2 ns
// a key; contains_many over 10^6 u64 keys in a 1 % blocked filter 5.0 -> 3.6 ns a key.
// Strings of 9-16 bytes (XXH3_len_9to16_128b: two 128-bit products, two avalanches) were
// tried the same way: 1.6 ns a key in registers, but 5.5 with their bytes gathered from
// 8 separate strings, against 2.6 for the library key by key; so strings go key by key.
#pragma once

#include <cstddef>
#include <cstdint>

#include "segbloom/detail/simd_level.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SEGBLOOM_XXH3_BATCH 1
#endif

namespace segbloom::detail {

inline constexpr std::uint64_t kXxhPrime64_1 = 0x9E3779B185EBCA87ULL;
inline constexpr std::uint64_t kXxhSecretFlip = 0xc4f023344dc994acULL;  // S16 ^ S24

// The seed-dependent part of `keyed` above.
inline std::uint64_t xxh3_4to8_bitflip(std::uint64_t seed) noexcept {
  const auto low = static_cast<std::uint32_t>(seed);
  return kXxhSecretFlip + (seed ^ (static_cast<std::uint64_t>(__builtin_bswap32(low)) << 32));
}

#ifdef SEGBLOOM_XXH3_BATCH

inline constexpr __mmask8 kAllLanes = 0xFF;  // zero-masked forms: GCC 12's plain ones warn

__attribute__((target("avx512f"))) inline __m512i broadcast64(std::uint64_t x) noexcept {
  return _mm512_set1_epi64(static_cast<long long>(x));
}

// The full products a * c (c a constant) of 8 lanes: low and high 64 bits.
__attribute__((target("avx512f"))) inline void multiply_128(__m512i a, std::uint64_t c, __m512i& lo,
                                                            __m512i& hi) noexcept {
  const __m512i c_lo = broadcast64(c & 0xFFFFFFFF);
  const __m512i c_hi = broadcast64(c >> 32);
  const __m512i a_hi = _mm512_maskz_srli_epi64(kAllLanes, a, 32);
  // a * c = ll + (lh + hl) 2^32 + hh 2^64, each a 32 x 32 -> 64 product.
  const __m512i ll = _mm512_maskz_mul_epu32(kAllLanes, a, c_lo);
  const __m512i lh = _mm512_maskz_mul_epu32(kAllLanes, a, c_hi);
  const __m512i hl = _mm512_maskz_mul_epu32(kAllLanes, a_hi, c_lo);
  const __m512i hh = _mm512_maskz_mul_epu32(kAllLanes, a_hi, c_hi);
  // cross < 2^64: (ll >> 32) + (hl mod 2^32) + lh <= 2 (2^32 - 1) + (2^32 - 1)^2.
  const __m512i mask32 = broadcast64(0xFFFFFFFF);
  const __m512i cross = _mm512_add_epi64(
      _mm512_add_epi64(_mm512_maskz_srli_epi64(kAllLanes, ll, 32), _mm512_and_si512(hl, mask32)), lh);
  hi = _mm512_add_epi64(
      _mm512_add_epi64(_mm512_maskz_srli_epi64(kAllLanes, hl, 32), _mm512_maskz_srli_epi64(kAllLanes, cross, 32)),
      hh);
  lo = _mm512_or_si512(_mm512_maskz_slli_epi64(kAllLanes, cross, 32), _mm512_and_si512(ll, mask32));
}

template <unsigned kShift>
__attribute__((target("avx512f"))) inline __m512i xorshift(__m512i x) noexcept {
  return _mm512_xor_si512(x, _mm512_maskz_srli_epi64(kAllLanes, x, kShift));
}

__attribute__((target("avx512f,avx512dq"))) inline __m512i times(__m512i x, std::uint64_t c) noexcept {
  return _mm512_maskz_mullo_epi64(kAllLanes, x, broadcast64(c));
}

__attribute__((target("avx512f,avx512dq"))) inline __m512i avalanche(__m512i h) noexcept {
  return xorshift<32>(times(xorshift<37>(h), 0x165667919E3779F9ULL));
}

// Stores 8 digests {lo_i, hi_i} at `out` (the layout of 8 Digest128s).
__attribute__((target("avx512f"))) inline void store_digests(__m512i lo, __m512i hi, void* out) noexcept {
  const __m512i first = _mm512_maskz_permutex2var_epi64(
      kAllLanes, lo, _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11), hi);
  const __m512i second = _mm512_maskz_permutex2var_epi64(
      kAllLanes, lo, _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15), hi);
  _mm512_storeu_si512(out, first);
  _mm512_storeu_si512(static_cast<unsigned char*>(out) + 64, second);
}

// Digests of 8 inputs v of length `len` (4 or 8; see the top of the file).
__attribute__((target("avx512f,avx512dq"))) inline void xxh3_4to8_x8(__m512i v, std::size_t len,
                                                                    std::uint64_t bitflip,
                                                                    void* out) noexcept {
  __m512i lo, hi;
  multiply_128(_mm512_xor_si512(v, broadcast64(bitflip)), kXxhPrime64_1 + (len << 2), lo, hi);
  hi = _mm512_add_epi64(hi, _mm512_maskz_slli_epi64(kAllLanes, lo, 1));
  lo = _mm512_xor_si512(lo, _mm512_maskz_srli_epi64(kAllLanes, hi, 3));
  lo = xorshift<28>(times(xorshift<35>(lo), 0x9FB21C651E98DF25ULL));
  store_digests(lo, avalanche(hi), out);
}

// Digests of the first n - n % 8 of n little-endian integers of kBytes (4 or 8) bytes
// under `seed`, stored at `out` as (lo, hi) pairs; returns how many it hashed (the caller
// does the rest).
template <std::size_t kBytes>
__attribute__((target("avx512f,avx512dq"))) inline std::size_t xxh3_4to8_many_avx512(
    const void* keys, std::size_t n, std::uint64_t seed, void* out) noexcept {
  static_assert(kBytes == 4 || kBytes == 8);
  const auto* bytes = static_cast<const unsigned char*>(keys);
  const std::uint64_t bitflip = xxh3_4to8_bitflip(seed);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m512i v;
    if constexpr (kBytes == 8) {
      v = _mm512_loadu_si512(bytes + 8 * i);
    } else {
      const __m512i x = _mm512_maskz_cvtepu32_epi64(
          kAllLanes, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes + 4 * i)));
      v = _mm512_or_si512(x, _mm512_maskz_slli_epi64(kAllLanes, x, 32));
    }
    xxh3_4to8_x8(v, kBytes, bitflip, static_cast<unsigned char*>(out) + 16 * i);
  }
  return i;
}

#endif  // SEGBLOOM_XXH3_BATCH

// True when this CPU runs the kernels above (checked once per process).
inline bool xxh3_batch_available() noexcept {
#ifdef SEGBLOOM_XXH3_BATCH
  static const bool available = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                                simd_cap() >= kSimdAvx512;
  return available;
#else
  return false;
#endif
}

}  // namespace segbloom::detail
