// segbloom: DoubleHashingScheme's lookup (probing.hpp) for 4 keys at a time, in AVX2:
// what classic batched lookups run on AVX2 CPUs.
//
// all_set_in spends most of a lookup on positions, not loads: two multiply-shifts, a step
// check and a fold a probe, one key at a time. Here each of those is one vector
// instruction for 4 keys, in the same order and with the same folds, so that every
// answer is all_set_in's; only the words are still read one at a time and inserted into
// a vector. Positives gain (they test all k probes); negatives come out even: at half
// fill most stop after 4 probes either way (a group of 4 goes on while any of its keys
// has all its probes so far set: about 1 group in 4). Measured on an AMD EPYC Zen 4
// (29 Nov 2026), one program timing the former code and this alternately, 512 keys a
// call, 21 rounds, new / old medians of 2-5 runs: one slice (10^4 or 10^6 keys at p = 1 %,
// k = 7; 10^6 at 0.1 %, k = 10), positives 0.67-0.76, negatives 0.94-1.06, which is this
// harness's spread with the same code on both sides; a user's filter of 3 slices (p =
// 0.1 %, k = 13, in L1), positives 0.73 (an older slice skips the groups a newer one
// holds) and negatives 0.97. Callgrind, instructions a key in a scratch loop (its hash
// and key making included): 10^6 keys, negatives 103 -> 82, positives 162 -> 112; the
// user's filter, negatives 239 -> 174. AVX2 gathers instead of the scalar loads measured
// 1.04-1.25x slower on that CPU, and setting aside the groups that go on past 4 probes,
// to take them after the others without a branch, 1.06-1.30x.
//
// Positions need m < 2^32 (the multiply-shift below works on 32-bit halves): slices of
// up to 512 MiB. Larger ones, and k < 4, take all_set_in. The caller checks the CPU
// (detail::avx2_allowed).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "segbloom/hashing.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SEGBLOOM_DOUBLE_HASHING_AVX2 1
#endif

namespace segbloom::detail {

#ifdef SEGBLOOM_DOUBLE_HASHING_AVX2

// reduce_range(x, m) in each 64-bit lane, for m < 2^32: with x = 2^32 xh + xl,
// (x m) >> 64 = (xh m + ((xl m) >> 32)) >> 32, and the sum stays below 2^64.
__attribute__((target("avx2"), always_inline)) inline __m256i reduce_range_x4(__m256i x, __m256i m) noexcept {
  const __m256i low = _mm256_mul_epu32(x, m);
  const __m256i high = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), m);
  return _mm256_srli_epi64(_mm256_add_epi64(high, _mm256_srli_epi64(low, 32)), 32);
}

// sum < 2m folded into [0, m), as DoubleHashingScheme::fold: the subtraction's sign picks.
__attribute__((target("avx2"), always_inline)) inline __m256i fold_x4(__m256i sum, __m256i m) noexcept {
  const __m256d less = _mm256_castsi256_pd(_mm256_sub_epi64(sum, m));
  return _mm256_castpd_si256(_mm256_blendv_pd(less, _mm256_castsi256_pd(sum), less));
}

// Bit p % 64 of word p / 64 of each lane's position p, at bit 0 (higher bits: garbage).
template <class Word>
__attribute__((target("avx2"), always_inline)) inline __m256i bit_x4(Word word, __m256i p) noexcept {
  alignas(32) std::uint64_t at[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(at), _mm256_srli_epi64(p, 6));
  const __m256i words = _mm256_setr_epi64x(static_cast<long long>(word(at[0])), static_cast<long long>(word(at[1])),
                                           static_cast<long long>(word(at[2])), static_cast<long long>(word(at[3])));
  return _mm256_srlv_epi64(words, _mm256_and_si256(p, _mm256_set1_epi64x(63)));
}

// Keys 0-3 of `digests` whose k probes are all set, as bits 0-3, for the keys whose steps
// stay below m (b + k (k - 1) / 2 < m, steps_limit = k (k - 1) / 2) and that are not in
// `known` (bits 0-3: keys already found, whose answers do not matter); the keys whose
// steps reach m, which take all_set_in's general path, as bits 0-3 of `wrap`. The probes
// are all_set_in's: p(0) = a, p(i+1) = fold(p(i) + b + i (i + 1) / 2), tested 4 at a
// time; after each 4, the keys with a clear bit drop out, and the test ends when none is
// left (a negative at half fill usually after the first 4). Needs 4 <= k and m < 2^32;
// word(i) reads word i < ceil(m / 64).
template <class Word>
__attribute__((target("avx2"), always_inline)) inline unsigned all_set_x4(Word word, const Digest128* digests,
                                                                         __m256i m, __m256i steps_limit, unsigned k,
                                                                         unsigned known, unsigned& wrap) noexcept {
  const __m256i keys01 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(digests));
  const __m256i keys23 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(digests + 2));
  // The unpacks work within 128-bit halves (keys 0, 2 | 1, 3): the permutes put keys in order.
  const __m256i step0 = reduce_range_x4(_mm256_permute4x64_epi64(_mm256_unpackhi_epi64(keys01, keys23), 0xD8), m);
  const __m256i below = _mm256_cmpgt_epi64(m, _mm256_add_epi64(step0, steps_limit));
  wrap = ~static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(below))) & 15u;
  __m256i position = reduce_range_x4(_mm256_permute4x64_epi64(_mm256_unpacklo_epi64(keys01, keys23), 0xD8), m);
  __m256i step = step0;
  __m256i all = bit_x4(word, position);
  const auto next_probe = [&](unsigned i) __attribute__((target("avx2"), always_inline)) {  // probe i >= 1
    // Lanes whose steps reach m read position 0 instead: one fold may leave theirs >= m.
    position = _mm256_and_si256(fold_x4(_mm256_add_epi64(position, step), m), below);
    step = _mm256_add_epi64(step, _mm256_set1_epi64x(i));
    all = _mm256_and_si256(all, bit_x4(word, position));
  };
  const auto live = [&]() __attribute__((target("avx2"), always_inline)) {
    return static_cast<unsigned>(
               _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_and_si256(_mm256_slli_epi64(all, 63), below)))) &
           ~known;
  };
  for (unsigned i = 1; i < 4; ++i) next_probe(i);
  unsigned set = live();
  for (unsigned i = 4; set != 0 && i < k; set = live()) {
    for (const unsigned end = std::min(i + 4, k); i < end; ++i) next_probe(i);
  }
  return set;
}

// The answers of 4 keys as 4 bools (bytes 0 or 1), to and from bits 0-3: the multipliers
// move bit j to byte j and back without carries (every partial product lands on a
// different bit).
inline std::uint32_t bools_of(unsigned bits) noexcept { return (bits * 0x00204081u) & 0x01010101u; }
inline unsigned bits_of(std::uint32_t bools) noexcept { return ((bools & 0x01010101u) * 0x01020408u) >> 24; }

// found[i] = all_set_in's answer for key i, for i < n (one(i) gives it); with
// `only_missing`, only for the i with !found[i]. Keys 4 at a time through all_set_x4
// (a group whose keys are all found already skipped); one(i) for those whose steps reach
// m and for the last n % 4. Returns how many it set true. Needs all_set_x4's k and m.
template <class Word, class One>
__attribute__((target("avx2"))) std::size_t all_set_many_avx2(Word word, const Digest128* digests,
                                                              std::size_t n, std::uint64_t cells, unsigned k,
                                                              bool* found, bool only_missing, const One& one) {
  const __m256i m = _mm256_set1_epi64x(static_cast<long long>(cells));
  const __m256i steps_limit = _mm256_set1_epi64x(static_cast<long long>(k * (k - 1) / 2));
  std::size_t hits = 0, i = 0;
  for (; i + 4 <= n; i += 4) {
    std::uint32_t before = 0;
    if (only_missing) std::memcpy(&before, found + i, 4);
    const unsigned had = bits_of(before);
    if (had == 15) continue;
    unsigned wrap = 0;
    unsigned now = all_set_x4(word, digests + i, m, steps_limit, k, had, wrap) | had;
    for (unsigned ask = wrap & ~had; ask != 0; ask &= ask - 1) {  // rare: steps that reach m
      const unsigned lane = static_cast<unsigned>(std::countr_zero(ask));
      if (one(i + lane)) now |= 1u << lane;
    }
    hits += static_cast<std::size_t>(std::popcount(now & ~had));
    const std::uint32_t after = bools_of(now);
    std::memcpy(found + i, &after, 4);
  }
  for (; i < n; ++i) {
    if (only_missing && found[i]) continue;
    found[i] = one(i);
    hits += found[i];
  }
  return hits;
}

#endif  // SEGBLOOM_DOUBLE_HASHING_AVX2

}  // namespace segbloom::detail
