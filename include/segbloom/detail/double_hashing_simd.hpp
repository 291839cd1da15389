// segbloom: DoubleHashingScheme's lookup (probing.hpp) for several keys at a time in
// vectors: 8 keys in AVX-512, 4 in AVX2. What classic batched lookups run on x86-64 CPUs
// with AVX2, and classic batched inserts on CPUs with AVX-512.
//
// all_set_in spends most of a lookup on positions, not loads: two multiply-shifts, a step
// check and a fold a probe, one key at a time. Here each of those is one vector
// instruction for 4 or 8 keys, in the same order and with the same folds, so that every
// answer is all_set_in's; only the words are still read one at a time and inserted into
// a vector.
//
// AVX2, 4 keys (twenty-seventh round). Positives gain (they test all k probes); negatives
// come out even: at half fill most stop after 4 probes either way (a group of 4 goes on
// while any of its keys has all its probes so far set: about 1 group in 4). Measured on an
// AMD EPYC Zen 4 (29 Nov 2026), one program timing the former code and this alternately,
// 512 keys a call, 21 rounds, new / old medians of 2-5 runs: one slice (10^4 or 10^6 keys
// at p = 1 %, k = 7; 10^6 at 0.1 %, k = 10), positives 0.67-0.76, negatives 0.94-1.06,
// which is this harness's spread with the same code on both sides; a user's filter of 3
// slices (p = 0.1 %, k = 13, in L1), positives 0.73 (an older slice skips the groups a
// newer one holds) and negatives 0.97. Callgrind, instructions a key in a scratch loop (its
// hash and key making included): 10^6 keys, negatives 103 -> 82, positives 162 -> 112; the
// user's filter, negatives 239 -> 174. AVX2 gathers instead of the scalar loads measured
// 1.04-1.25x slower on that CPU, and setting aside the groups that go on past 4 probes,
// to take them after the others without a branch, 1.06-1.30x.
//
// AVX-512, 8 keys (twenty-ninth round): half the vector instructions a key, a fold in two
// (subtract, unsigned minimum) rather than three, masks in k registers, and the first exit
// after 5 probes (kX8FirstExit). Measured on an AMD EPYC Zen 5 (29 Nov 2026), benchmark
// binaries of the former code (AVX2, 4 keys) and this alternating, 3 processes each,
// new / old medians, one slice at p = 1 %: negatives 0.97-0.99 at 10^4 keys, 0.92 at 10^5,
// 0.87-0.88 at 10^6 (u64 5.74 -> 4.97 ns), 0.90-1.00 at 10^7; positives 0.73-0.77 at 10^4
// and 10^5, 0.86-0.90 at 10^6 and 10^7; a user's filter of 3 slices (k = 10-13) 0.81, 6
// slices 0.87, the concurrent filter 0.87-0.91, a transition's view 0.92; 2^16 absent keys
// cycled through one slice whose lines stay in L2 (BM_batch_negative) 1.03-1.04. The first
// exit, in one binary choosing it by an environment variable (alternating processes, 3
// each; after 5 / after 4): negatives 0.89-0.90 at 10^6 keys, 0.92 at 10^5, 0.93-0.95 at
// 10^7, 0.98-1.03 at 10^4; 6 slices 0.88, a user's filter 0.94; positives 0.94-1.00.
// After 6 was as good at 10^6 and 1.06-1.08x at 10^4. Tried, not kept:
//   - no exit for k <= 8 (every probe read): u64 negatives at 10^6 keys 0.84 of the exit
//     after 4, but 1.13-1.20x where the slice's lines stay in L2 and 1.14x at 10^4 keys;
//     no exit for any k: 1.65x for a user's filter (k = 13);
//   - AVX-512 gathers for the words: 1.07-1.12x the time (0.93 with the concurrent
//     filter's words, but a gather is no relaxed atomic load);
//   - the word indices stored and read back rather than extracted: 1.05-1.07x.
//
// Batched classic inserts (thirtieth round, set_many_avx512, now mark_many_avx512): the same positions for 8
// keys, stored, then each key's words read, set and written back in turn. A classic insert
// is bound by instructions more than by memory (16 a probe in the scalar sequence, 11 in
// the read-set-write alone). Zen 5, benchmark binaries alternating, 3 processes each,
// new / old: insert_many of one slice 0.81-0.83 at 10^4-10^6 keys (u64 at 10^6 13.5 ->
// 11.1 ns), 0.93 at 10^7; a 6-slice filter 0.85. Double-buffering the positions (the next
// 8 keys' computed before this group's writes) and storing word indices beside them
// measured within 3 % in a scratch loop (10^4 and 10^6 keys). In the library since the
// thirty-sixth round, with the lines of those positions prefetched in slices past the L2
// (detail::group_insert_prefetch): a profile of insert_many at 10^6 keys had put half of
// the kernel's samples on the bit set after each word's load, waiting on the L3. Batched
// inserts at 10^6 keys then took 0.84-0.88 of the time, at 10^7 0.71-0.72 (bench/results/
// design-notes.md, "Batched inserts into a classic slice").
//
// Since the forty-first round a bit array's marks come in one instance per k up to 16
// (kFixedProbes, detail/fixed_probes.hpp), each key's k marks unrolled. Intel Xeon
// (Emerald Rapids), benchmark binaries alternating, 6 processes each, new / old:
// insert_many at 10^4 keys 0.76-0.80 (u64, p = 1 %: 10.6 -> 8.3 ns); at 10^6 0.91-0.98 in
// one series (u64, p = 1 %: 13.5 -> 12.3 ns) and 0.69-0.89 in a second on a busier host;
// at 10^7 0.86-1.03; the grown filter's batched inserts 0.97. The 16 instances add about
// 32 KB of code (1.8-2.3 KB each) to a program that inserts batches into classic filters.
//
// Counting filters' classic slices (thirty-first round) take the same lookup kernels with
// 4-bit cells (kCellBits = 4: word p / 16, the counter at bit 4 (p % 16), set when not 0;
// bit_x4, bit_x8), where they had been asked key by key through probe(). Their batched
// inserts (thirty-second round) take the same positions: mark_many_avx512 hands each key's
// k positions to a marker (a bit array's set_bit, or CounterCells::mark_all's saturating
// increments), where they had gone key by key with a lookup first. Binaries alternating,
// 3 processes each, new / old: counting insert_many 0.71 at 10^4 keys (22.0 -> 15.6 ns),
// 0.81 at 10^6 (30.0 -> 24.2); the plain filter's 0.98-1.01. (The positions read through a
// pointer step: with k at run time, indexing them as at[8 * i] cost the bit inserts 3
// instructions a probe and 1.07-1.09x the time.) A branchless saturating increment
// measured 1.08-1.10x.
//
// Positions need m < 2^32 (the multiply-shift below works on 32-bit halves): slices of
// up to 512 MiB of bits (2 GiB of counters). Larger ones, and k < 4, take all_set_in (inserts: k > 32 too, one key at
// a time). The caller checks the CPU (detail::avx512_allowed, detail::avx2_allowed).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "segbloom/detail/batch.hpp"
#include "segbloom/detail/bits.hpp"
#include "segbloom/detail/fixed_probes.hpp"
#include "segbloom/detail/prefetch.hpp"
#include "segbloom/detail/xxh3_batch.hpp"  // kAllLanes
#include "segbloom/hashing.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SEGBLOOM_DOUBLE_HASHING_SIMD 1
#endif

namespace segbloom::detail {

#ifdef SEGBLOOM_DOUBLE_HASHING_SIMD

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

// Cells kCellBits wide: 1, a bit array (cell p is bit p % 64 of word p / 64); 4, packed
// 4-bit counters (cell p is bits 4 (p % 16) and up of word p / 16), a counting filter's.
// The word index of each lane's cell p, and the cell's shift in its word.
template <unsigned kCellBits>
inline constexpr int kCellIndexShift = kCellBits == 1 ? 6 : 4;  // log2(cells a word)
template <unsigned kCellBits>
inline constexpr int kCellBitShift = kCellBits == 1 ? 0 : 2;  // log2(kCellBits)

// Whether each lane's position p holds a set cell (a 1 bit, a non-zero counter), at bit 0
// (higher bits: garbage).
template <unsigned kCellBits, class Word>
__attribute__((target("avx2"), always_inline)) inline __m256i bit_x4(Word word, __m256i p) noexcept {
  alignas(32) std::uint64_t at[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(at), _mm256_srli_epi64(p, kCellIndexShift<kCellBits>));
  const __m256i words = _mm256_setr_epi64x(static_cast<long long>(word(at[0])), static_cast<long long>(word(at[1])),
                                           static_cast<long long>(word(at[2])), static_cast<long long>(word(at[3])));
  if constexpr (kCellBits == 1) {
    return _mm256_srlv_epi64(words, _mm256_and_si256(p, _mm256_set1_epi64x(63)));
  } else {  // the counter's 4 bits c, then (c + 15) >> 4: 1 when c != 0 (AVX2 has no 64-bit min)
    const __m256i shift = _mm256_and_si256(_mm256_slli_epi64(p, kCellBitShift<kCellBits>), _mm256_set1_epi64x(63));
    const __m256i counter = _mm256_and_si256(_mm256_srlv_epi64(words, shift), _mm256_set1_epi64x(15));
    return _mm256_srli_epi64(_mm256_add_epi64(counter, _mm256_set1_epi64x(15)), 4);
  }
}

// Keys 0-3 of `digests` whose k probes are all set, as bits 0-3, for the keys whose steps
// stay below m (b + k (k - 1) / 2 < m, steps_limit = k (k - 1) / 2) and that are not in
// `known` (bits 0-3: keys already found, whose answers do not matter); the keys whose
// steps reach m, which take all_set_in's general path, as bits 0-3 of `wrap`. The probes
// are all_set_in's: p(0) = a, p(i+1) = fold(p(i) + b + i (i + 1) / 2), tested 4 at a
// time; after each 4, the keys with a clear bit drop out, and the test ends when none is
// left (a negative at half fill usually after the first 4). Needs 4 <= k and m < 2^32;
// word(i) reads word i < ceil(m / 64) (m / 16 for counters).
template <unsigned kCellBits, class Word>
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
  __m256i all = bit_x4<kCellBits>(word, position);
  const auto next_probe = [&](unsigned i) __attribute__((target("avx2"), always_inline)) {  // probe i >= 1
    // Lanes whose steps reach m read position 0 instead: one fold may leave theirs >= m.
    position = _mm256_and_si256(fold_x4(_mm256_add_epi64(position, step), m), below);
    step = _mm256_add_epi64(step, _mm256_set1_epi64x(i));
    all = _mm256_and_si256(all, bit_x4<kCellBits>(word, position));
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
// `only_missing`, only for the i with !found[i]. Keys kLanes (4 or 8) at a time through
// lanes(digests, known, wrap), a vector test (all_set_x4, all_set_x8: the keys with all
// probes set, as bits; `known`, the keys found already; `wrap` set to the keys whose steps
// reach m), a group whose keys are all found already skipped; one(i) for the keys in
// `wrap` and for the last n % kLanes. Returns how many it set true. Inlined into each
// kernel's caller, which has the kernel's target and is flattened, so that `lanes` is
// inlined too (a function without the target cannot inline the kernel, and without
// `flatten` GCC 12 called it for the concurrent filter's words).
template <unsigned kLanes, class Lanes, class One>
__attribute__((always_inline)) inline std::size_t all_set_lanes(const Digest128* digests, std::size_t n,
                                                                bool* found, bool only_missing,
                                                                const Lanes& lanes, const One& one) {
  constexpr unsigned kAll = (1u << kLanes) - 1;
  std::size_t hits = 0, i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    unsigned had = 0;  // the keys found before, kept
    for (unsigned q = 0; only_missing && q < kLanes; q += 4) {
      std::uint32_t bools;
      std::memcpy(&bools, found + i + q, 4);
      had |= bits_of(bools) << q;
    }
    if (had == kAll) continue;
    unsigned wrap = 0;
    unsigned now = lanes(digests + i, had, wrap) | had;
    for (unsigned ask = wrap & ~had; ask != 0; ask &= ask - 1) {  // rare: steps that reach m
      const unsigned lane = static_cast<unsigned>(std::countr_zero(ask));
      if (one(i + lane)) now |= 1u << lane;
    }
    hits += static_cast<std::size_t>(std::popcount(now & ~had));
    for (unsigned q = 0; q < kLanes; q += 4) {
      const std::uint32_t bools = bools_of((now >> q) & 15u);
      std::memcpy(found + i + q, &bools, 4);
    }
  }
  return hits + answer_group(found + i, n - i, only_missing, [&one, i](std::size_t j) { return one(i + j); });
}

// all_set_lanes with all_set_x4. Needs all_set_x4's k and m.
template <unsigned kCellBits, class Word, class One>
__attribute__((target("avx2"), flatten)) std::size_t all_set_many_avx2(Word word, const Digest128* digests,
                                                              std::size_t n, std::uint64_t cells, unsigned k,
                                                              bool* found, bool only_missing, const One& one) {
  const __m256i m = _mm256_set1_epi64x(static_cast<long long>(cells));
  const __m256i steps_limit = _mm256_set1_epi64x(static_cast<long long>(k * (k - 1) / 2));
  return all_set_lanes<4>(
      digests, n, found, only_missing,
      [&](const Digest128* group, unsigned known, unsigned& wrap) __attribute__((target("avx2"))) {
        return all_set_x4<kCellBits>(word, group, m, steps_limit, k, known, wrap);
      },
      one);
}

// reduce_range_x4 on 8 lanes (m < 2^32). (Zero-masked forms, kAllLanes: GCC 12's plain ones warn.)
__attribute__((target("avx512f"), always_inline)) inline __m512i reduce_range_x8(__m512i x, __m512i m) noexcept {
  const __m512i low = _mm512_maskz_mul_epu32(kAllLanes, x, m);
  const __m512i high = _mm512_maskz_mul_epu32(kAllLanes, _mm512_maskz_srli_epi64(kAllLanes, x, 32), m);
  return _mm512_maskz_srli_epi64(kAllLanes, _mm512_add_epi64(high, _mm512_maskz_srli_epi64(kAllLanes, low, 32)), 32);
}

// bit_x4 on 8 lanes: words read one at a time (gathers were no faster), two 4-word halves.
template <unsigned kCellBits, class Word>
__attribute__((target("avx512f"), always_inline)) inline __m512i bit_x8(Word word, __m512i p) noexcept {
  alignas(64) std::uint64_t at[8];
  _mm512_store_si512(reinterpret_cast<__m512i*>(at), _mm512_maskz_srli_epi64(kAllLanes, p, kCellIndexShift<kCellBits>));
  const __m256i low = _mm256_setr_epi64x(static_cast<long long>(word(at[0])), static_cast<long long>(word(at[1])),
                                         static_cast<long long>(word(at[2])), static_cast<long long>(word(at[3])));
  const __m256i high = _mm256_setr_epi64x(static_cast<long long>(word(at[4])), static_cast<long long>(word(at[5])),
                                          static_cast<long long>(word(at[6])), static_cast<long long>(word(at[7])));
  const __m512i words = _mm512_maskz_inserti64x4(kAllLanes, _mm512_castsi256_si512(low), high, 1);
  if constexpr (kCellBits == 1) {
    return _mm512_maskz_srlv_epi64(kAllLanes, words, _mm512_and_si512(p, _mm512_set1_epi64(63)));
  } else {  // the counter's 4 bits, then min(counter, 1)
    const __m512i shift = _mm512_and_si512(_mm512_maskz_slli_epi64(kAllLanes, p, kCellBitShift<kCellBits>),
                                           _mm512_set1_epi64(63));
    const __m512i counter = _mm512_and_si512(_mm512_maskz_srlv_epi64(kAllLanes, words, shift), _mm512_set1_epi64(15));
    return _mm512_maskz_min_epu64(kAllLanes, counter, _mm512_set1_epi64(1));
  }
}

// The start of 8 keys' probe sequences (keys 0-7 of `digests`): probe 0's positions and
// the first steps, and the keys whose steps stay below m (b + k (k - 1) / 2 < m; the
// others take all_set_in's general path). The digests' halves split by two permutes.
__attribute__((target("avx512f"), always_inline)) inline __mmask8 start_x8(const Digest128* digests, __m512i m,
                                                                         __m512i steps_limit, __m512i& position,
                                                                         __m512i& step) noexcept {
  const __m512i keys0123 = _mm512_loadu_si512(digests);
  const __m512i keys4567 = _mm512_loadu_si512(digests + 4);
  const __m512i lows = _mm512_permutex2var_epi64(keys0123, _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), keys4567);
  const __m512i highs = _mm512_permutex2var_epi64(keys0123, _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15), keys4567);
  step = reduce_range_x8(highs, m);
  position = reduce_range_x8(lows, m);
  return _mm512_cmplt_epu64_mask(_mm512_add_epi64(step, steps_limit), m);
}

// Probe i >= 1 from probe i - 1 on 8 lanes: a fold is sum - m where that does not wrap
// around, else sum (the unsigned minimum of the two); lanes not in `below` read position 0
// (the zeroing mask). Then the next step.
__attribute__((target("avx512f"), always_inline)) inline void next_position_x8(__m512i& position, __m512i& step,
                                                                              unsigned i, __m512i m,
                                                                              __mmask8 below) noexcept {
  const __m512i sum = _mm512_add_epi64(position, step);
  position = _mm512_maskz_min_epu64(below, sum, _mm512_sub_epi64(sum, m));
  step = _mm512_add_epi64(step, _mm512_set1_epi64(i));
}

// The probes all_set_x8 tests before its first exit. A group of 8 negatives at half fill
// goes on past probe j with probability 1 - (1 - 2^-j)^8: 40 % after 4 probes, 22 % after
// 5, 12 % after 6, and the branch is mispredicted each time it does; each probe more reads
// one more word a key. 5 measured best (top of this file); on the Intel Xeon (Emerald
// Rapids, 30 Nov 2026, one binary taking it from the environment, alternating, 3 processes
// each, against 5): after 4, negatives 0.95-0.98 at 10^4 keys but 1.02-1.08 at 10^6, 6
// slices 1.04, a user's filter 1.04; after 6, 1.06-1.13 but for u64 at 10^6 (0.91-0.96).
inline constexpr unsigned kX8FirstExit = 5;

// all_set_x4 on keys 0-7 of `digests` (bits 0-7 of the result, `known` and `wrap`), its
// first exit after kX8FirstExit probes rather than 4 (start_x8, next_position_x8).
template <unsigned kCellBits, class Word>
__attribute__((target("avx512f"), always_inline)) inline unsigned all_set_x8(Word word, const Digest128* digests,
                                                                           __m512i m, __m512i steps_limit, unsigned k,
                                                                           unsigned known, unsigned& wrap) noexcept {
  __m512i position, step;
  const __mmask8 below = start_x8(digests, m, steps_limit, position, step);
  wrap = ~static_cast<unsigned>(below) & 0xFFu;
  __m512i all = bit_x8<kCellBits>(word, position);
  const auto next_probe = [&](unsigned i) __attribute__((target("avx512f"), always_inline)) {  // probe i >= 1
    next_position_x8(position, step, i, m, below);
    all = _mm512_and_si512(all, bit_x8<kCellBits>(word, position));
  };
  const auto live = [&]() __attribute__((target("avx512f"), always_inline)) {
    return static_cast<unsigned>(_mm512_mask_test_epi64_mask(below, all, _mm512_set1_epi64(1))) & ~known;
  };
  const unsigned first = std::min(kX8FirstExit, k);
  for (unsigned i = 1; i < first; ++i) next_probe(i);
  unsigned set = live();
  for (unsigned i = first; set != 0 && i < k; set = live()) {
    for (const unsigned end = std::min(i + 4, k); i < end; ++i) next_probe(i);
  }
  return set;
}

// all_set_lanes with all_set_x8. Needs AVX-512F, 4 <= k, m < 2^32.
template <unsigned kCellBits, class Word, class One>
__attribute__((target("avx512f"), flatten)) std::size_t all_set_many_avx512(Word word, const Digest128* digests,
                                                                   std::size_t n, std::uint64_t cells, unsigned k,
                                                                   bool* found, bool only_missing, const One& one) {
  const __m512i m = _mm512_set1_epi64(static_cast<long long>(cells));
  const __m512i steps_limit = _mm512_set1_epi64(static_cast<long long>(k * (k - 1) / 2));
  return all_set_lanes<8>(
      digests, n, found, only_missing,
      [&](const Digest128* group, unsigned known, unsigned& wrap) __attribute__((target("avx512f"))) {
        return all_set_x8<kCellBits>(word, group, m, steps_limit, k, known, wrap);
      },
      one);
}

// Classic inserts of a group (DoubleHashingScheme::mark_many): the largest k whose
// positions mark_many_avx512 holds for 8 keys (8 x 32 positions, 2 KiB on the stack).
inline constexpr unsigned kSetManyMaxProbes = 32;
static_assert(kMaxFixedProbes <= kSetManyMaxProbes);  // every instance by k takes vectors

// The positions of keys 0-7 of `digests`, probe i of key j at pos[8 i + j] for i < k,
// as all_set_x8 steps through them (start_x8, next_position_x8); returns the keys whose
// steps reach m (bits 0-7), whose positions are not all_set_in's (they read 0) and which
// the caller takes one by one.
__attribute__((target("avx512f"), always_inline)) inline unsigned positions_x8(const Digest128* digests, __m512i m,
                                                                             __m512i steps_limit, unsigned k,
                                                                             std::uint64_t* pos) noexcept {
  __m512i position, step;
  const __mmask8 below = start_x8(digests, m, steps_limit, position, step);
  _mm512_store_si512(pos, position);
  for (unsigned i = 1; i < k; ++i) {
    next_position_x8(position, step, i, m, below);
    _mm512_store_si512(pos + 8 * i, position);
  }
  return ~static_cast<unsigned>(below) & 0xFFu;
}

// Marks the k probes of each key i < n with write[i], in order: mark_key(positions)
// marks one key's cells, where positions(visit) calls visit(p) for each of its k
// positions, and returns how many cells it took from clear to set (a bit array's set
// bits, or counters' increments). changed[i] = that count is not 0 (false where
// !write[i]); returns the sum. Keys 8 at a time: positions_x8, then each key marked in
// turn, so that results are those of inserting one key after the other (a key whose cells
// an earlier key of the group set reports no change). The next 8 keys' positions are
// computed before these 8 are marked, and with `prefetch` the lines that hold them
// (line_of(p)) are prefetched then (also a key's not to be written, and line_of(0) k - 1
// times for a key whose steps reach m, whose later positions read 0): in a call of 16 keys
// (a batch's group, detail::kBatchGroup) the first 8 keys' lines are asked for just before
// those keys are marked, all 16 keys' then in flight together, and the next 8's while the
// first 8 are marked. one(i) marks key i alone (returns its count): the keys whose steps
// reach m and the last n % 8. Needs AVX-512F, k <= kSetManyMaxProbes, m < 2^32.
// kFixedProbes != 0: k is that constant, and each key's marks are unrolled, every position
// read at a constant offset (a bit array's set: 8 instructions a probe where the loop's
// pointer step, compare and branch made 11); 0: k at run time (DoubleHashingScheme::
// mark_many_with picks the instance).
template <unsigned kFixedProbes, class MarkKey, class One, class LineOf>
__attribute__((target("avx512f"), flatten)) std::uint64_t mark_many_avx512(const Digest128* digests, std::size_t n,
                                                                  std::uint64_t cells, unsigned k, const bool* write,
                                                                  bool* changed, const MarkKey& mark_key,
                                                                  const One& one, const LineOf& line_of,
                                                                  bool prefetch) {
  const __m512i m = _mm512_set1_epi64(static_cast<long long>(cells));
  const __m512i steps_limit = _mm512_set1_epi64(static_cast<long long>(k * (k - 1) / 2));
  alignas(64) std::uint64_t pos[2][8 * kSetManyMaxProbes];  // 8 keys' positions, and the next 8's
  const auto positions = [&](std::size_t first, std::uint64_t* out) __attribute__((target("avx512f"))) {
    const unsigned wrap = positions_x8(digests + first, m, steps_limit, k, out);
    if (prefetch) {  // every lane, probe by probe: skipping the lanes not marked from here cost 1.06-1.12x
      for (const std::uint64_t* p = out; p != out + 8 * k; ++p) detail::prefetch(line_of(*p));
    }
    return wrap;
  };
  std::uint64_t total = 0;
  std::size_t i = 0;
  unsigned next_wrap = n >= 8 ? positions(0, pos[0]) : 0;
  for (unsigned b = 0; i + 8 <= n; i += 8, b ^= 1) {
    const unsigned wrap = next_wrap;
    if (i + 16 <= n) next_wrap = positions(i + 8, pos[b ^ 1]);
    for (unsigned lane = 0; lane < 8; ++lane) {
      std::uint64_t newly = 0;
      if (!write[i + lane]) {
      } else if ((wrap >> lane) & 1u) {
        newly = one(i + lane);
      } else {
        const std::uint64_t* const at = pos[b] + lane;
        if constexpr (kFixedProbes != 0) {  // unrolled: each probe's offset an immediate
          newly = mark_key([at](auto&& visit) {
            for_each_probe<kFixedProbes>(kFixedProbes, [&](unsigned p) { visit(at[8 * p]); });
          });
        } else {
          // (A pointer step: indexing as at[8 * i] costs 3 instructions a probe more.)
          newly = mark_key([at, end = at + 8 * k](auto&& visit) {
            for (const std::uint64_t* p = at; p != end; p += 8) visit(*p);
          });
        }
      }
      changed[i + lane] = newly != 0;
      total += newly;
    }
  }
  for (; i < n; ++i) {
    const std::uint64_t newly = write[i] ? one(i) : 0;
    changed[i] = newly != 0;
    total += newly;
  }
  return total;
}

#endif  // SEGBLOOM_DOUBLE_HASHING_SIMD

}  // namespace segbloom::detail
