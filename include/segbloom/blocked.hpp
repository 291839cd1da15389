// segbloom: the blocked layout's probing, one 64-byte cache line per key per slice.
//
// A key's block is reduce_range(digest.low, blocks). Inside the block, probe i sets bit
//     position_i = (h * salt_i) >> 23    (9 bits: 0..511),   h = low 32 bits of digest.high
// with 48 fixed odd 32-bit salts (so k <= 48). Bit p of a block is bit p % 64 of its
// 64-bit word p / 64 (the BitCells order), which on a little-endian host is also bit
// p % 32 of its 32-bit word p / 32: the view the SIMD paths gather from.
//
// One function answers "are all k bits set?" in three implementations with identical
// answers: portable (scalar, one branch), AVX2 (8 probes per gather) and AVX-512 (16 per
// gather). `contains` uses the widest one the CPU has, chosen once at run time (inlined
// when the compiler itself targets AVX-512); all stay callable for tests.
#pragma once

#include <cstdint>

#include "segbloom/hashing.hpp"
#include "segbloom/probing.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SEGBLOOM_X86_SIMD 1
#endif

namespace segbloom::blocked {

inline constexpr unsigned kWordsPerBlock = 8;

// Salts for probes 0..47, padded to 64 with zeros so SIMD rounds may load 16 at a time.
alignas(64) inline constexpr std::uint32_t kSalt[64] = {
    0xd837115f, 0x026f4c85, 0x50a74cff, 0x73e1d037, 0x8f8de0e9, 0x3eb459c9, 0xf11fc8df, 0x0977e471,
    0x856980bb, 0x658ef30d, 0x2e7abed5, 0xab3e1d35, 0x7ad367d5, 0xc3c79559, 0xf99e6ae5, 0x1f99f50d,
    0x4c1d5c6b, 0xf1217709, 0x73d9c869, 0xd7bfc82d, 0xc059f535, 0x0dd6a32d, 0x9c86269b, 0xd9f0b7c1,
    0xa2729d41, 0xc1ace0d9, 0x4fa930d7, 0xdd1c84e5, 0xa380626b, 0xdaaf6ec5, 0xbe06f2fd, 0x0b1f3791,
    0x06744ffb, 0x48ecf043, 0xea3d9d21, 0xb99a14f9, 0x90cf3f1d, 0x2d4579ff, 0x151bc8cd, 0x3dd4d0f3,
    0x46d1d9af, 0x6f67594f, 0xaac30727, 0xfc1a4093, 0x539bc951, 0xc7836f95, 0x3de54e17, 0x5f1bfb25,
};

inline std::uint64_t block_of(const Digest128& digest, std::uint64_t blocks) noexcept {
  return reduce_range(digest.low, blocks);
}
inline std::uint32_t in_block_hash(const Digest128& digest) noexcept {
  return static_cast<std::uint32_t>(digest.high);
}
inline unsigned position(std::uint32_t h, unsigned i) noexcept {
  return static_cast<unsigned>((h * kSalt[i]) >> 23);
}

// Visits the k bit positions (0..511) of a key inside its block.
template <class Visit>
bool probe(std::uint32_t h, unsigned k, Visit&& visit) {
  for (unsigned i = 0; i < k; ++i) {
    if (!visit(position(h, i))) return false;
  }
  return true;
}

// Tests all k bits and branches once: an early exit would cost a mispredicted branch
// on most negative lookups, more than the few extra tests within one cache line.
inline bool contains_portable(const std::uint64_t* block, std::uint32_t h, unsigned k) noexcept {
  std::uint64_t all = 1;
  for (unsigned i = 0; i < k; ++i) {
    const unsigned p = position(h, i);
    all &= block[p >> 6] >> (p & 63);
  }
  return (all & 1) != 0;
}

#ifdef SEGBLOOM_X86_SIMD
__attribute__((target("avx2"))) inline bool contains_avx2(const std::uint64_t* block,
                                                          std::uint32_t h, unsigned k) noexcept {
  const __m256i hv = _mm256_set1_epi32(static_cast<int>(h));
  const __m256i low5 = _mm256_set1_epi32(31);
  const __m256i one = _mm256_set1_epi32(1);
  const int* words = reinterpret_cast<const int*>(block);
  for (unsigned r = 0; r < k; r += 8) {
    const __m256i salt = _mm256_load_si256(reinterpret_cast<const __m256i*>(kSalt + r));
    const __m256i pos = _mm256_srli_epi32(_mm256_mullo_epi32(hv, salt), 23);
    const __m256i word = _mm256_i32gather_epi32(words, _mm256_srli_epi32(pos, 5), 4);
    const __m256i bit = _mm256_and_si256(_mm256_srlv_epi32(word, _mm256_and_si256(pos, low5)), one);
    const unsigned lanes = k - r >= 8 ? 0xFFu : (1u << (k - r)) - 1;
    const auto set = static_cast<unsigned>(
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(bit, one))));
    if ((set & lanes) != lanes) return false;
  }
  return true;
}

__attribute__((target("avx512f"))) inline bool contains_avx512(const std::uint64_t* block,
                                                               std::uint32_t h,
                                                               unsigned k) noexcept {
  const __m512i hv = _mm512_set1_epi32(static_cast<int>(h));
  const __m512i low5 = _mm512_set1_epi32(31);
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i zero = _mm512_setzero_si512();
  for (unsigned r = 0; r < k; r += 16) {
    // Masked forms with an explicit zero source: the unmasked ones start from an
    // undefined register, which GCC 12 warns about inside its own headers.
    const __mmask16 lanes = k - r >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (k - r)) - 1);
    const __m512i salt = _mm512_load_si512(kSalt + r);
    const __m512i pos = _mm512_maskz_srli_epi32(lanes, _mm512_mullo_epi32(hv, salt), 23);
    const __m512i word = _mm512_mask_i32gather_epi32(zero, lanes, _mm512_maskz_srli_epi32(lanes, pos, 5),
                                                     block, 4);
    const __m512i bit = _mm512_maskz_srlv_epi32(lanes, word, _mm512_and_si512(pos, low5));
    if (_mm512_mask_test_epi32_mask(lanes, bit, one) != lanes) return false;
  }
  return true;
}
#endif

using ContainsFn = bool (*)(const std::uint64_t*, std::uint32_t, unsigned) noexcept;

// The widest implementation this CPU runs, chosen once at run time (so an ordinary
// build, without -mavx2, still uses AVX2 or AVX-512 where the CPU has them).
inline ContainsFn best_contains() noexcept {
#ifdef SEGBLOOM_X86_SIMD
  if (__builtin_cpu_supports("avx512f")) return &contains_avx512;
  if (__builtin_cpu_supports("avx2")) return &contains_avx2;
#endif
  return &contains_portable;
}

// The implementation the lookup path uses.
inline bool contains(const std::uint64_t* block, std::uint32_t h, unsigned k) noexcept {
#if defined(SEGBLOOM_X86_SIMD) && defined(__AVX512F__)
  return contains_avx512(block, h, k);  // the compiler targets it: inline, no dispatch
#else
  static const ContainsFn chosen = best_contains();
  return chosen(block, h, k);
#endif
}

}  // namespace segbloom::blocked
