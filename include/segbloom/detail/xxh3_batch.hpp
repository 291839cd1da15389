// segbloom: XXH3-128 of many keys at once, 8 keys per AVX-512 round: 4- or 8-byte keys
// (integers, or byte arrays of that size) and 16-byte byte arrays (std::array<char, 16>:
// UUIDs, 128-bit IDs, 16-character hex IDs).
//
// Batched operations (contains_many, insert_many) hash a group of keys before using any
// of them, so the hashes can be computed side by side. For inputs of 4 to 16 bytes
// XXH3-128 is a fixed sequence of 64-bit operations, which AVX-512 runs on 8 lanes: a
// 64 x 64 -> 128 product from four 32 x 32 -> 64 products (vpmuludq), 64-bit products
// with vpmullq (AVX-512DQ). Inputs of 4 to 8 bytes (xxhash.h, XXH3_len_4to8_128b):
//
//   v      = the 8 input bytes as a little-endian integer; for 4 bytes, x + (x << 32)
//   keyed  = v ^ ((S16 ^ S24) + (seed ^ (bswap32(low 32 bits of seed) << 32)))
//            (Sn: the 64-bit word at byte n of XXH3's default secret)
//   hi:lo  = keyed * (PRIME64_1 + 4 len), the full 128-bit product
//   hi    += lo << 1;   lo ^= hi >> 3
//   lo     = xorshift(lo, 35) * 0x9FB21C651E98DF25, then xorshift(lo, 28)
//   hi     = avalanche(hi) = xorshift(hi, 37) * 0x165667919E3779F9, then xorshift(hi, 32)
//
// Inputs of 16 bytes (XXH3_len_9to16_128b at len = 16), a = bytes 0-7, b = bytes 8-15:
//
//   mhi:mlo = (a ^ b ^ ((S32 ^ S40) - seed)) * PRIME64_1;   mlo += 15 << 54
//   b'      = b ^ ((S48 ^ S56) + seed);   mhi += b' + low32(b') * (PRIME32_2 - 1)
//   mlo    ^= bswap64(mhi)
//   hi:lo   = mlo * PRIME64_2, the full product;   hi += mhi * PRIME64_2
//   lo, hi  = avalanche(lo), avalanche(hi)
//
// The digests are identical to xxh3_digest's (tested against the library on batches of
// lengths 0 to 40, eleven key types, seeds of every shape); where the CPU lacks AVX-512DQ
// or BW (only the 16-byte kernel needs BW; no CPU has DQ without it), or SEGBLOOM_SIMD
// caps SIMD below AVX-512, the AVX2 kernels (below) take 4 keys a round, and without AVX2
// the caller hashes key by key. Included by hashing.hpp, whose hash_keys() is the entry
// point; this header needs nothing of it.
// Measured, 4-8 bytes (Sapphire Rapids, 26 Nov 2026): hashing alone 1.7 -> 1.1-1.2 ns a
// key; contains_many over 10^6 u64 keys in a 1 % blocked filter 5.0 -> 3.6 ns a key.
// 16-byte keys are read straight from an array of them: two loads and two permutes give 8
// keys' halves. (AMD EPYC, 27 Nov 2026: hashing alone 2.1 -> 0.7 ns a key; contains_many
// over 10^6 such keys, blocked 4.5 -> 2.8 ns, classic 7.2 -> 5.8.) Strings (std::string,
// string_view) stay key by key: gathering the bytes of 8 separate strings cost 5.5 ns a
// key, against 2.6 for the library key by key (Sapphire Rapids).
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
inline constexpr std::uint64_t kXxhPrime64_2 = 0xC2B2AE3D27D4EB4FULL;
inline constexpr std::uint64_t kXxhPrime32_2 = 0x85EBCA77U;
inline constexpr std::uint64_t kXxhSecretFlip = 0xc4f023344dc994acULL;      // S16 ^ S24
inline constexpr std::uint64_t kXxhSecretFlipLow = 0x59973f0033362349ULL;   // S32 ^ S40
inline constexpr std::uint64_t kXxhSecretFlipHigh = 0xc202797692d63d58ULL;  // S48 ^ S56

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

// Digests of the first n - n % 8 of n 16-byte inputs, stored back to back at `keys`,
// under `seed`, stored at `out` as (lo, hi) pairs; returns how many it hashed.
__attribute__((target("avx512f,avx512dq,avx512bw"))) inline std::size_t xxh3_16_many_avx512(
    const void* keys, std::size_t n, std::uint64_t seed, void* out) noexcept {
  const auto* bytes = static_cast<const unsigned char*>(keys);
  const __m512i flip_low = broadcast64(kXxhSecretFlipLow - seed);
  const __m512i flip_high = broadcast64(kXxhSecretFlipHigh + seed);
  const __m512i length_term = broadcast64(std::uint64_t{15} << 54);  // (len - 1) << 54
  const __m512i prime32_2_less_1 = broadcast64(kXxhPrime32_2 - 1);
  // Within each 64-bit lane, bytes 7..0: a byte swap for vpshufb.
  const __m512i swap_bytes = _mm512_set_epi8(
      8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7,
      8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
  const __m512i firsts = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
  const __m512i seconds = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m512i keys_0to3 = _mm512_loadu_si512(bytes + 16 * i);
    const __m512i keys_4to7 = _mm512_loadu_si512(bytes + 16 * i + 64);
    const __m512i a = _mm512_maskz_permutex2var_epi64(kAllLanes, keys_0to3, firsts, keys_4to7);
    const __m512i b = _mm512_maskz_permutex2var_epi64(kAllLanes, keys_0to3, seconds, keys_4to7);
    __m512i mlo, mhi;
    multiply_128(_mm512_ternarylogic_epi64(a, b, flip_low, 0x96), kXxhPrime64_1, mlo, mhi);  // a ^ b ^ flip_low
    mlo = _mm512_add_epi64(mlo, length_term);
    const __m512i b2 = _mm512_xor_si512(b, flip_high);
    mhi = _mm512_add_epi64(mhi, _mm512_add_epi64(b2, _mm512_maskz_mul_epu32(kAllLanes, b2, prime32_2_less_1)));
    mlo = _mm512_xor_si512(mlo, _mm512_shuffle_epi8(mhi, swap_bytes));
    __m512i lo, hi;
    multiply_128(mlo, kXxhPrime64_2, lo, hi);
    hi = _mm512_add_epi64(hi, times(mhi, kXxhPrime64_2));
    store_digests(avalanche(lo), avalanche(hi), static_cast<unsigned char*>(out) + 16 * i);
  }
  return i;
}

// --- AVX2: 4 keys of 4, 8 or 16 bytes a round ---------------------------------------
// The same sequences on 4 lanes, for CPUs without AVX-512 (AVX2 has no 64-bit low product:
// times_avx2 builds it from three 32 x 32 -> 64 products). Measured on an AMD EPYC Zen 3
// (AVX2 only), 64 keys a call, one process: u64 keys 2.82 -> 1.74 ns a key, 16-byte keys
// 4.83 / 3.35 -> 3.04 / 2.54 ns (two runs; median ratio of 30 paired rounds 0.64 / 0.76).

__attribute__((target("avx2"))) inline __m256i broadcast64_avx2(std::uint64_t x) noexcept {
  return _mm256_set1_epi64x(static_cast<long long>(x));
}

// multiply_128 on 4 lanes.
__attribute__((target("avx2"))) inline void multiply_128_avx2(__m256i a, std::uint64_t c, __m256i& lo,
                                                              __m256i& hi) noexcept {
  const __m256i c_lo = broadcast64_avx2(c & 0xFFFFFFFF);
  const __m256i c_hi = broadcast64_avx2(c >> 32);
  const __m256i a_hi = _mm256_srli_epi64(a, 32);
  const __m256i ll = _mm256_mul_epu32(a, c_lo);
  const __m256i lh = _mm256_mul_epu32(a, c_hi);
  const __m256i hl = _mm256_mul_epu32(a_hi, c_lo);
  const __m256i hh = _mm256_mul_epu32(a_hi, c_hi);
  const __m256i mask32 = broadcast64_avx2(0xFFFFFFFF);
  const __m256i cross =
      _mm256_add_epi64(_mm256_add_epi64(_mm256_srli_epi64(ll, 32), _mm256_and_si256(hl, mask32)), lh);
  hi = _mm256_add_epi64(_mm256_add_epi64(_mm256_srli_epi64(hl, 32), _mm256_srli_epi64(cross, 32)), hh);
  lo = _mm256_or_si256(_mm256_slli_epi64(cross, 32), _mm256_and_si256(ll, mask32));
}

// The low 64 bits of x * c: ll + ((lh + hl) << 32).
__attribute__((target("avx2"))) inline __m256i times_avx2(__m256i x, std::uint64_t c) noexcept {
  const __m256i c_lo = broadcast64_avx2(c & 0xFFFFFFFF);
  const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(x, broadcast64_avx2(c >> 32)),
                                         _mm256_mul_epu32(_mm256_srli_epi64(x, 32), c_lo));
  return _mm256_add_epi64(_mm256_mul_epu32(x, c_lo), _mm256_slli_epi64(cross, 32));
}

template <unsigned kShift>
__attribute__((target("avx2"))) inline __m256i xorshift_avx2(__m256i x) noexcept {
  return _mm256_xor_si256(x, _mm256_srli_epi64(x, kShift));
}

__attribute__((target("avx2"))) inline __m256i avalanche_avx2(__m256i h) noexcept {
  return xorshift_avx2<32>(times_avx2(xorshift_avx2<37>(h), 0x165667919E3779F9ULL));
}

// Digests of the first n - n % 4 of n little-endian integers of kBytes (4 or 8) bytes
// under `seed`, stored at `out` as (lo, hi) pairs; returns how many it hashed.
template <std::size_t kBytes>
__attribute__((target("avx2"))) inline std::size_t xxh3_4to8_many_avx2(const void* keys, std::size_t n,
                                                                       std::uint64_t seed, void* out) noexcept {
  static_assert(kBytes == 4 || kBytes == 8);
  const auto* bytes = static_cast<const unsigned char*>(keys);
  auto* digests = static_cast<unsigned char*>(out);
  const __m256i bitflip = broadcast64_avx2(xxh3_4to8_bitflip(seed));
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256i v;
    if constexpr (kBytes == 8) {
      v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes + 8 * i));
    } else {
      const __m256i x = _mm256_cvtepu32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + 4 * i)));
      v = _mm256_or_si256(x, _mm256_slli_epi64(x, 32));
    }
    __m256i lo, hi;
    multiply_128_avx2(_mm256_xor_si256(v, bitflip), kXxhPrime64_1 + (kBytes << 2), lo, hi);
    hi = _mm256_add_epi64(hi, _mm256_slli_epi64(lo, 1));
    lo = _mm256_xor_si256(lo, _mm256_srli_epi64(hi, 3));
    lo = xorshift_avx2<28>(times_avx2(xorshift_avx2<35>(lo), 0x9FB21C651E98DF25ULL));
    hi = avalanche_avx2(hi);
    // {lo0, hi0, lo2, hi2} and {lo1, hi1, lo3, hi3}; then keys 0-1 and 2-3 in order.
    const __m256i even = _mm256_unpacklo_epi64(lo, hi), odd = _mm256_unpackhi_epi64(lo, hi);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(digests + 16 * i), _mm256_permute2x128_si256(even, odd, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(digests + 16 * i + 32),
                        _mm256_permute2x128_si256(even, odd, 0x31));
  }
  return i;
}

// Digests of the first n - n % 4 of n 16-byte inputs, stored back to back at `keys`,
// under `seed`, stored at `out` as (lo, hi) pairs; returns how many it hashed. The
// sequence of xxh3_16_many_avx512 on 4 lanes. Two loads hold keys 0-1 and 2-3; their
// unpacks give the first and second halves in lane order 0, 2, 1, 3, and the unpacks of
// the results put keys 0-1 and 2-3 back in order, so no permute is needed.
__attribute__((target("avx2"))) inline std::size_t xxh3_16_many_avx2(const void* keys, std::size_t n,
                                                                     std::uint64_t seed, void* out) noexcept {
  const auto* bytes = static_cast<const unsigned char*>(keys);
  auto* digests = static_cast<unsigned char*>(out);
  const __m256i flip_low = broadcast64_avx2(kXxhSecretFlipLow - seed);
  const __m256i flip_high = broadcast64_avx2(kXxhSecretFlipHigh + seed);
  const __m256i length_term = broadcast64_avx2(std::uint64_t{15} << 54);  // (len - 1) << 54
  const __m256i prime32_2_less_1 = broadcast64_avx2(kXxhPrime32_2 - 1);
  const __m256i swap_bytes = _mm256_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8,  //
                                              7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8);
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256i keys_0to1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes + 16 * i));
    const __m256i keys_2to3 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes + 16 * i + 32));
    const __m256i a = _mm256_unpacklo_epi64(keys_0to1, keys_2to3);
    const __m256i b = _mm256_unpackhi_epi64(keys_0to1, keys_2to3);
    __m256i mlo, mhi;
    multiply_128_avx2(_mm256_xor_si256(_mm256_xor_si256(a, b), flip_low), kXxhPrime64_1, mlo, mhi);
    mlo = _mm256_add_epi64(mlo, length_term);
    const __m256i b2 = _mm256_xor_si256(b, flip_high);
    mhi = _mm256_add_epi64(mhi, _mm256_add_epi64(b2, _mm256_mul_epu32(b2, prime32_2_less_1)));
    mlo = _mm256_xor_si256(mlo, _mm256_shuffle_epi8(mhi, swap_bytes));
    __m256i lo, hi;
    multiply_128_avx2(mlo, kXxhPrime64_2, lo, hi);
    hi = _mm256_add_epi64(hi, times_avx2(mhi, kXxhPrime64_2));
    lo = avalanche_avx2(lo);
    hi = avalanche_avx2(hi);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(digests + 16 * i), _mm256_unpacklo_epi64(lo, hi));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(digests + 16 * i + 32), _mm256_unpackhi_epi64(lo, hi));
  }
  return i;
}

#endif  // SEGBLOOM_XXH3_BATCH

// True when this CPU runs the 8-key AVX-512 kernels above, within SEGBLOOM_SIMD (checked
// once per process).
inline bool xxh3_batch_available() noexcept {
#ifdef SEGBLOOM_XXH3_BATCH
  __builtin_cpu_init();  // may run before the CPU-model constructor (static initialisation)
  static const bool available = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                                __builtin_cpu_supports("avx512bw") && simd_cap() >= kSimdAvx512;
  return available;
#else
  return false;
#endif
}

// True when this CPU runs the 4-key AVX2 kernels (xxh3_4to8_many_avx2,
// xxh3_16_many_avx2), within SEGBLOOM_SIMD (checked once per process).
inline bool xxh3_batch_avx2_available() noexcept {
#ifdef SEGBLOOM_XXH3_BATCH
  return avx2_allowed();
#else
  return false;
#endif
}

}  // namespace segbloom::detail
